import { type Duration, Validations } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { InboxConstructError } from '../errors.js';
import { absentSigners } from './signer-peers.js';

/** Props for {@link InboxFunction}. */
export interface InboxFunctionProps {
  /** Path to the TypeScript entry file, bundled at synth with esbuild. */
  readonly entry?: string | undefined;
  /**
   * Ready code instead of `entry`: a folder whose `index.mjs` exports the handler, deployed as it is (no bundling).
   * The package's own functions come this way.
   * @default - the bundle of `entry`
   */
  readonly code?: lambda.Code | undefined;
  /**
   * Name of the exported handler function in `entry` (or in `code`'s `index.mjs`).
   * @default 'handler'
   */
  readonly handler?: string | undefined;
  /** Environment variables. */
  readonly environment: Readonly<Record<string, string>>;
  /** Function timeout. */
  readonly timeout: Duration;
  /**
   * Memory in MiB.
   * @default 256
   */
  readonly memorySize?: number | undefined;
  /**
   * Node.js runtime: nodejs24.x or nodejs22.x, the two the runtime code is tested on.
   * @default lambda.Runtime.NODEJS_24_X
   */
  readonly runtime?: lambda.Runtime | undefined;
  /**
   * Retention of the function's log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
  /** Description shown in the Lambda console. */
  readonly description: string;
  /**
   * Run in this VPC (a consumer on the PostgreSQL wire, behind RDS Proxy). Its role then also gets Lambda's
   * network-interface permissions.
   * @default - not in a VPC: the Data API is an HTTPS endpoint
   */
  readonly vpc?: ec2.IVpc | undefined;
  /**
   * Subnets of `vpc`.
   * @default - Lambda's default for `vpc` (the private subnets)
   */
  readonly vpcSubnets?: ec2.SubnetSelection | undefined;
  /**
   * Security groups of the function in `vpc`.
   * @default - Lambda creates one that allows all egress
   */
  readonly securityGroups?: readonly ec2.ISecurityGroup[] | undefined;
}

/**
 * The Node.js Lambda shape every inbox function shares: an ESM bundle for ARM64 with the AWS SDK
 * left to the runtime, an explicit log group with retention, and a role that may write only to that
 * log group (no `AWSLambdaBasicExecutionRole`, whose `logs:*` rights span every log group).
 * Not placed in a VPC: the Data API is an HTTPS endpoint.
 *
 * @example
 * const fn = new InboxFunction(this, 'Worker', {
 *   entry: 'src/worker.ts', environment: {}, timeout: Duration.seconds(30), description: 'worker',
 * });
 */
export class InboxFunction extends Construct {
  /** The function. */
  public readonly function: lambda.Function;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** The function's execution role. */
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: InboxFunctionProps) {
    super(scope, id);
    const runtime = props.runtime ?? lambda.Runtime.NODEJS_24_X;
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    });
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${props.description}`,
    });
    this.logGroup.grantWrite(this.role);
    const shape = {
      runtime,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 256,
      timeout: props.timeout,
      description: props.description,
      role: this.role,
      logGroup: this.logGroup,
      environment: { ...props.environment },
      ...(props.vpc === undefined
        ? {}
        : { vpc: props.vpc, vpcSubnets: props.vpcSubnets, securityGroups: props.securityGroups === undefined ? undefined : [...props.securityGroups] }),
    };
    if ((props.entry === undefined) === (props.code === undefined)) {
      throw new InboxConstructError(`InboxFunction ${this.node.path}`, [
        {
          problem: `${props.entry === undefined ? 'neither `entry` nor `code` was given' : '`entry` and `code` were both given'}.`,
          fix: 'pass exactly one of them.',
        },
      ]);
    }
    this.function =
      props.code !== undefined
        ? new lambda.Function(this, 'Function', { ...shape, code: props.code, handler: `index.${props.handler ?? 'handler'}` })
        : new nodejs.NodejsFunction(this, 'Function', {
            ...shape,
            entry: props.entry,
            handler: props.handler ?? 'handler',
            bundling: bundling(runtime, absentSigners(props.entry!, shape.environment, this.node.path)),
          });
    if (props.vpc !== undefined) {
      // A function given its own role gets no network-interface rights from the Function construct. Not
      // AWSLambdaVPCAccessExecutionRole: it also holds logs:* on every log group.
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: [
            'ec2:AssignPrivateIpAddresses',
            'ec2:CreateNetworkInterface',
            'ec2:DeleteNetworkInterface',
            'ec2:DescribeNetworkInterfaces',
            'ec2:DescribeSubnets',
            'ec2:UnassignPrivateIpAddresses',
          ],
          resources: ['*'],
        }),
      );
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Lambda creates and deletes the network interfaces of a function in a VPC under its execution role, with ids ' +
          'unknown until then; these are the actions AWS documents for that (lambda/latest/dg/configuration-vpc.html), and ' +
          'the Describe actions take no resource. The role holds no other wildcard.',
      });
    }
    if (runtime.name === lambda.Runtime.NODEJS_22_X.name) {
      Validations.of(this.function).acknowledge({
        id: 'AwsSolutions-L1',
        reason:
          'Node.js 22 was chosen over the default Node.js 24: it is a supported LTS Lambda runtime, and the runtime code ' +
          'is tested on it (npm run test:node22).',
      });
    }
  }
}

/** How an `entry` is bundled: ESM for the runtime's Node.js, the AWS SDK left to Lambda, and the signers the app has not installed. */
function bundling(runtime: lambda.Runtime, absentSigners: readonly string[]): nodejs.BundlingOptions {
  return {
    format: nodejs.OutputFormat.ESM,
    target: nodeTarget(runtime),
    mainFields: ['module', 'main'],
    minify: true,
    sourceMap: true,
    sourcesContent: false,
    // The runtime provides the service clients; the signers (@aws-sdk/rds-signer, @aws-sdk/dsql-signer, for a
    // consumer on the wire) are not among what Lambda documents, so they are bundled when installed.
    externalModules: ['@aws-sdk/client-*', ...absentSigners],
    // A bundled CommonJS dependency may still call require(); ESM has none without this shim.
    banner: "import { createRequire as __inboxCreateRequire } from 'module';const require = __inboxCreateRequire(import.meta.url);",
  };
}

function nodeTarget(runtime: lambda.Runtime): string {
  const match = /^nodejs(\d+)/.exec(runtime.name);
  return match === null ? 'node24' : `node${match[1]}`;
}
