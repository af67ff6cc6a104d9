import { Duration, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** Props for {@link InboxFunction}. */
export interface InboxFunctionProps {
  /** Path to the TypeScript entry file. */
  readonly entry: string;
  /**
   * Name of the exported handler function in `entry`.
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
   * Node.js runtime.
   * @default lambda.Runtime.NODEJS_22_X
   */
  readonly runtime?: lambda.Runtime | undefined;
  /**
   * Retention of the function's log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
  /** Description shown in the Lambda console. */
  readonly description: string;
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
  public readonly function: nodejs.NodejsFunction;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** The function's execution role. */
  public readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: InboxFunctionProps) {
    super(scope, id);
    const runtime = props.runtime ?? lambda.Runtime.NODEJS_22_X;
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    });
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${props.description}`,
    });
    this.logGroup.grantWrite(this.role);
    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      runtime,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 256,
      timeout: props.timeout,
      description: props.description,
      role: this.role,
      logGroup: this.logGroup,
      environment: { ...props.environment },
      bundling: {
        format: nodejs.OutputFormat.ESM,
        target: nodeTarget(runtime),
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        externalModules: ['@aws-sdk/*'],
        // A bundled CommonJS dependency may still call require(); ESM has none without this shim.
        banner: "import { createRequire as __inboxCreateRequire } from 'module';const require = __inboxCreateRequire(import.meta.url);",
      },
    });
    if (runtime.name === lambda.Runtime.NODEJS_22_X.name) {
      Validations.of(this.function).acknowledge({
        id: 'AwsSolutions-L1',
        reason:
          'The project targets Node.js 22, a supported LTS Lambda runtime; its runtime code has not been tested on ' +
          'Node.js 24 yet. Pass `runtime: Runtime.NODEJS_24_X` to use the newest.',
      });
    }
  }
}

function nodeTarget(runtime: lambda.Runtime): string {
  const match = /^nodejs(\d+)/.exec(runtime.name);
  return match === null ? 'node22' : `node${match[1]}`;
}
