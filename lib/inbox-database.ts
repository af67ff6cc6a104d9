import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CustomResource, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { InboxFunction } from './inbox-function.js';
import { runtimeFile } from './runtime-files.js';

/** The files whose contents decide whether the migration custom resource runs again. */
const MIGRATION_SOURCES = ['../lambda/inbox/schema', '../lambda/functions/example-migrations'];

/** Props for {@link InboxDatabase}. */
export interface InboxDatabaseProps {
  /**
   * An existing Aurora PostgreSQL cluster with the Data API enabled. Requires `secret`.
   * Import it with `DatabaseCluster.fromDatabaseClusterAttributes(this, 'Db', { ..., dataApiEnabled: true })`.
   * @default - a new Aurora Serverless v2 PostgreSQL cluster
   */
  readonly cluster?: rds.IDatabaseCluster | undefined;
  /**
   * The Secrets Manager secret the Data API signs in with. Required with `cluster`, ignored without it.
   * @default - the new cluster's generated secret
   */
  readonly secret?: secretsmanager.ISecret | undefined;
  /**
   * Name of the database that holds the inbox table. With an existing `cluster` it must already exist.
   * @default 'inbox'
   */
  readonly databaseName?: string | undefined;
  /**
   * VPC for a new cluster. Only the cluster lives in it: the functions reach it over the Data API.
   * @default - a new VPC with two isolated subnets, no NAT gateway, and flow logs
   */
  readonly vpc?: ec2.IVpc | undefined;
  /**
   * Subnets of `vpc` for a new cluster.
   * @default { subnetType: ec2.SubnetType.PRIVATE_ISOLATED }
   */
  readonly vpcSubnets?: ec2.SubnetSelection | undefined;
  /**
   * Engine of a new cluster. It must support both the Data API on Serverless v2 (17.4+, 16.1+)
   * and auto-pause (16.3+).
   * @default rds.AuroraPostgresEngineVersion.VER_17_7
   */
  readonly engineVersion?: rds.AuroraPostgresEngineVersion | undefined;
  /**
   * Minimum capacity of a new cluster in ACUs. Ignored when `autoPause` is set (auto-pause needs 0).
   * @default 0.5
   */
  readonly minCapacity?: number | undefined;
  /**
   * Maximum capacity of a new cluster in ACUs.
   * @default 2
   */
  readonly maxCapacity?: number | undefined;
  /**
   * Opt in to auto-pause: the cluster scales to 0 ACUs after this much idle time (5 minutes to 24 hours).
   * The first Data API call after a pause waits about 15 seconds for the resume.
   * @default - no auto-pause (minimum `minCapacity`)
   */
  readonly autoPause?: Duration | undefined;
  /**
   * Deletion protection of a new cluster.
   * @default true
   */
  readonly deletionProtection?: boolean | undefined;
  /**
   * What happens to a new cluster when it leaves the stack. Its generated secret is retained unless this is
   * `DESTROY`: a snapshot is useless without the credentials to sign in to the cluster restored from it.
   * @default RemovalPolicy.SNAPSHOT
   */
  readonly removalPolicy?: RemovalPolicy | undefined;
  /**
   * Migration sets to apply besides `inbox`, which is always applied first. Only sets the bundled handler
   * (lambda/functions/migrate.ts) knows can be named: today `example-orders`, the example's `orders` table.
   * @default []
   */
  readonly migrations?: readonly string[] | undefined;
  /**
   * Retention of the migration functions' log groups.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
}

/**
 * The database that holds the inbox table: Aurora Serverless v2 PostgreSQL with the Data API
 * (or an existing cluster and secret), and a custom resource that applies the inbox schema at deploy.
 *
 * @example
 * const db = new InboxDatabase(this, 'Db', { autoPause: Duration.minutes(10) });
 * db.grantDataApiAccess(myFunction);
 *
 * @example
 * // Bring your own cluster: it must have the Data API enabled.
 * const db = new InboxDatabase(this, 'Db', {
 *   cluster: rds.DatabaseCluster.fromDatabaseClusterAttributes(this, 'Cluster', {
 *     clusterIdentifier: 'orders', dataApiEnabled: true,
 *   }),
 *   secret: secretsmanager.Secret.fromSecretCompleteArn(this, 'Secret', secretArn),
 *   databaseName: 'orders',
 * });
 */
export class InboxDatabase extends Construct {
  /** The cluster. */
  public readonly cluster: rds.IDatabaseCluster;
  /** The secret the Data API signs in with. */
  public readonly secret: secretsmanager.ISecret;
  /** The database that holds the inbox table. */
  public readonly databaseName: string;
  /** The VPC of a cluster created here. */
  public readonly vpc?: ec2.IVpc;
  /** The custom resource that applies the schema. */
  public readonly migration: CustomResource;
  /** The migration handler (lambda/functions/migrate.ts). */
  public readonly migrationFunction: lambda.IFunction;
  /** The Provider framework that runs the migration handler. */
  public readonly migrationProvider: cr.Provider;

  constructor(scope: Construct, id: string, props: InboxDatabaseProps = {}) {
    super(scope, id);
    this.databaseName = props.databaseName ?? 'inbox';
    validateProps(this.node.path, props);

    if (props.cluster !== undefined && props.secret !== undefined) {
      this.cluster = props.cluster;
      this.secret = props.secret;
    } else {
      this.vpc = props.vpc ?? createVpc(this);
      const autoPause = props.autoPause !== undefined;
      const removalPolicy = props.removalPolicy ?? RemovalPolicy.SNAPSHOT;
      const cluster = new rds.DatabaseCluster(this, 'Cluster', {
        engine: rds.DatabaseClusterEngine.auroraPostgres({
          version: props.engineVersion ?? rds.AuroraPostgresEngineVersion.VER_17_7,
        }),
        writer: rds.ClusterInstance.serverlessV2('writer'),
        serverlessV2MinCapacity: autoPause ? 0 : (props.minCapacity ?? 0.5),
        serverlessV2MaxCapacity: props.maxCapacity ?? 2,
        ...(autoPause ? { serverlessV2AutoPauseDuration: props.autoPause } : {}),
        enableDataApi: true,
        credentials: rds.Credentials.fromGeneratedSecret('inbox_admin'),
        defaultDatabaseName: this.databaseName,
        storageEncrypted: true,
        iamAuthentication: true,
        deletionProtection: props.deletionProtection ?? true,
        removalPolicy,
        vpc: this.vpc,
        vpcSubnets: props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_ISOLATED },
      });
      if (cluster.secret === undefined) throw new Error(`InboxDatabase ${this.node.path}: the cluster has no secret.`);
      // The generated secret (cluster.secret is only its attachment) would otherwise be deleted with the stack
      // while the cluster's data survives in a snapshot or a retained cluster. Secrets have no SNAPSHOT policy.
      const generatedSecret = cluster.node.tryFindChild('Secret');
      if (!(generatedSecret instanceof secretsmanager.Secret)) {
        throw new Error(`InboxDatabase ${this.node.path}: the cluster's generated secret was not found.`);
      }
      generatedSecret.applyRemovalPolicy(removalPolicy === RemovalPolicy.SNAPSHOT ? RemovalPolicy.RETAIN : removalPolicy);
      this.cluster = cluster;
      this.secret = cluster.secret;
      if (props.deletionProtection === false) {
        Validations.of(cluster).acknowledge({
          id: 'AwsSolutions-RDS10',
          reason:
            'Deletion protection was turned off on purpose with `deletionProtection: false` (a throwaway deployment that ' +
            '`cdk destroy` must be able to remove); the default keeps it on.',
        });
      }
      // On the cluster: the generated secret is its child, and acknowledgments apply to descendants.
      Validations.of(cluster).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'No automatic rotation: the Data API reads the secret on every call, so rotation needs no client change, but ' +
          'the rotation Lambda would have to run in the VPC and reach Secrets Manager through an interface endpoint or ' +
          'NAT, which the default NAT-free isolated VPC lacks. Add an endpoint and cluster.addRotationSingleUser() to rotate.',
      });
    }

    const migrator = new InboxFunction(this, 'Migrate', {
      entry: runtimeFile('../lambda/functions/migrate', 'the migration handler'),
      environment: {},
      timeout: Duration.minutes(5),
      description: 'sqs-inbox schema migration (CloudFormation custom resource)',
      ...(props.logRetention === undefined ? {} : { logRetention: props.logRetention }),
    });
    this.migrationFunction = migrator.function;
    this.grantDataApiAccess(migrator.function);

    const frameworkLogs = new logs.LogGroup(this, 'MigrationProviderLogs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    });
    // A role of our own so the framework can write only to its log group (instead of AWSLambdaBasicExecutionRole).
    const frameworkRole = new iam.Role(this, 'MigrationProviderRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'Execution role of the sqs-inbox migration custom resource framework',
    });
    frameworkLogs.grantWrite(frameworkRole);
    this.migrationProvider = new cr.Provider(this, 'MigrationProvider', {
      onEventHandler: migrator.function,
      logGroup: frameworkLogs,
      frameworkOnEventRole: frameworkRole,
    });
    const stack = Stack.of(this);
    const onEventLogicalId = stack.getLogicalId(migrator.function.node.defaultChild as lambda.CfnFunction);
    Validations.of(frameworkRole).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${onEventLogicalId}.Arn>:*]`,
      reason:
        'The CDK Provider framework grants lambda:InvokeFunction on the migration handler and its versions ' +
        '(<arn>:*); the wildcard covers only versions of that one function.',
    });

    this.migration = new CustomResource(this, 'Migration', {
      serviceToken: this.migrationProvider.serviceToken,
      resourceType: 'Custom::InboxMigration',
      properties: {
        ResourceArn: this.cluster.clusterArn,
        SecretArn: this.secret.secretArn,
        Database: this.databaseName,
        Migrations: ['inbox', ...(props.migrations ?? []).filter((name) => name !== 'inbox')].join(','),
        Fingerprint: migrationsFingerprint(),
      },
    });
    // The Data API answers only once the writer instance is up; the cluster alone being created is not enough.
    this.migration.node.addDependency(this.cluster);
  }

  /**
   * Grants the Data API actions on this cluster and read access to this secret, nothing else.
   *
   * @example
   * db.grantDataApiAccess(myFunction);
   */
  public grantDataApiAccess(grantee: iam.IGrantable): void {
    try {
      this.cluster.grantDataApiAccess(grantee);
    } catch (error) {
      throw new Error(
        `InboxDatabase ${this.node.path}: the cluster passed in \`cluster\` does not have the Data API enabled ` +
          `(${(error as Error).message}). Fix: enable the Data API on the cluster and import it with ` +
          '`DatabaseCluster.fromDatabaseClusterAttributes(this, id, { ..., dataApiEnabled: true })`, or create it with `enableDataApi: true`.',
      );
    }
    this.secret.grantRead(grantee);
  }

  /**
   * Identifies the inbox table across the app: two InboxDatabase constructs over the same cluster and
   * database share one table.
   */
  public get tableKey(): string {
    const cluster = Token.isUnresolved(this.cluster.clusterIdentifier)
      ? this.cluster.node.path
      : this.cluster.clusterIdentifier;
    return `${cluster}/${this.databaseName}`;
  }

  /** "database 'inbox' of cluster X", for messages. */
  public get tableDescription(): string {
    const cluster = Token.isUnresolved(this.cluster.clusterIdentifier)
      ? this.cluster.node.path
      : this.cluster.clusterIdentifier;
    return `the inbox table of database '${this.databaseName}' on cluster ${cluster}`;
  }
}

function validateProps(path: string, props: InboxDatabaseProps): void {
  const problems: string[] = [];
  if ((props.cluster === undefined) !== (props.secret === undefined)) {
    problems.push(
      props.cluster === undefined
        ? '`secret` was given without `cluster`. Fix: pass the existing `cluster` too, or remove `secret` to create both.'
        : '`cluster` was given without `secret`. Fix: pass the Secrets Manager `secret` the Data API should sign in with.',
    );
  }
  if (props.cluster !== undefined) {
    const ignored = (['vpc', 'vpcSubnets', 'engineVersion', 'minCapacity', 'maxCapacity', 'autoPause'] as const).filter(
      (key) => props[key] !== undefined,
    );
    if (ignored.length > 0) {
      problems.push(
        `${ignored.map((key) => `\`${key}\``).join(', ')} only apply to a new cluster, but \`cluster\` was given. ` +
          'Fix: configure the existing cluster directly and remove these props.',
      );
    }
  }
  if (props.autoPause !== undefined && props.minCapacity !== undefined && props.minCapacity !== 0) {
    problems.push(
      `\`autoPause\` needs a minimum capacity of 0 ACUs, but \`minCapacity\` is ${props.minCapacity}. ` +
        'Fix: remove `minCapacity` (auto-pause sets it to 0) or remove `autoPause`.',
    );
  }
  if (problems.length > 0) throw new Error(`InboxDatabase ${path}:\n  - ${problems.join('\n  - ')}`);
}

function createVpc(scope: Construct): ec2.Vpc {
  return new ec2.Vpc(scope, 'Vpc', {
    maxAzs: 2,
    natGateways: 0,
    subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
    flowLogs: { all: { destination: ec2.FlowLogDestination.toCloudWatchLogs() } },
  });
}

/** SHA-256 over the migration sources, so the custom resource re-runs when a migration changes. */
function migrationsFingerprint(): string {
  const hash = createHash('sha256');
  for (const file of MIGRATION_SOURCES) hash.update(readFileSync(runtimeFile(file, 'the migration source')));
  return hash.digest('hex');
}
