import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CustomResource, Duration, RemovalPolicy, Token, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as rds from 'aws-cdk-lib/aws-rds';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { grantDataApi, TRANSACTION_ACTIONS } from './data-api-access.js';
import { createCluster, createVpc, MASTER_USERNAME } from './database-cluster.js';
import { InboxFunction } from '../consumer/inbox-function.js';
import type { InboxDatabaseRole } from './inbox-database-role.js';
import { addInvariants } from '../invariants.js';
import { declareCreatedTables } from './known-tables.js';
import { migrationProblems, ownMigrationSets } from './migration-sets.js';
import type { InboxMigrationSet } from './migration-sets.js';
import { functionCode } from '../function-assets.js';
import type { FunctionCode } from '../function-assets.js';
import { InboxSecretRotation } from './secret-rotation.js';
import { InboxConstructError } from '../errors.js';

/** In this repository's sources, the file the migration function's built-in set comes from. */
const MIGRATION_SOURCES = ['../../lambda/inbox/sql/schema.ts'];

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
   * How long Aurora keeps automated backups (point-in-time restore window), 1 to 35 days. Aurora's own default
   * is 1 day, too short to notice a bad deploy or a purge misconfiguration over a weekend; backup storage up to
   * the cluster's size is free.
   * @default Duration.days(7)
   */
  readonly backupRetention?: Duration | undefined;
  /**
   * Export the PostgreSQL log (errors, failed sign-ins, slow statements if configured) to CloudWatch Logs.
   * @default true
   */
  readonly exportPostgresLogs?: boolean | undefined;
  /**
   * Retention of the exported PostgreSQL log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly postgresLogRetention?: logs.RetentionDays | undefined;
  /**
   * Add a Serverless v2 reader in the writer's promotion tier, so a failover promotes a warm instance of the
   * same size (typically under a minute) instead of Aurora recreating the writer (several minutes). Off by
   * default: it doubles the compute cost, and the Data API always talks to the writer.
   * @default false
   */
  readonly readerInstance?: boolean | undefined;
  /**
   * Security groups of a new cluster.
   * @default - a new security group with no egress rule; the secret rotation functions are allowed in on the port
   */
  readonly securityGroups?: ec2.ISecurityGroup[] | undefined;
  /**
   * Rotate the master secret and every role's secret with Secrets Manager's hosted single-user rotation,
   * in the cluster's VPC. The Data API reads the secret on every call, so a rotation needs no restart.
   * Only for a cluster created here.
   * @default true
   */
  readonly secretRotation?: boolean | undefined;
  /**
   * Time between rotations.
   * @default Duration.days(30)
   */
  readonly rotationInterval?: Duration | undefined;
  /**
   * Create a Secrets Manager interface endpoint in the VPC for the rotation functions. The isolated VPC
   * created here has no other route to Secrets Manager; a VPC you pass may have one (a VPC can have only one
   * endpoint per service with private DNS).
   * @default - true when the VPC is created here, false for a `vpc` passed in
   */
  readonly secretsManagerEndpoint?: boolean | undefined;
  /**
   * With an existing `cluster` defined in this app by another InboxDatabase: that database's `rotation`, so the
   * secrets of the roles provisioned here rotate too (their rotation runs in the cluster's VPC, under its
   * rotation security group). The master secret keeps rotating where the cluster is defined.
   * @default - the roles' secrets are not rotated (acknowledged for cdk-nag with that reason)
   */
  readonly rotation?: InboxSecretRotation | undefined;
  /**
   * Migration sets to apply after `inbox`, which is always applied first, in this order: your own sets as
   * values (`{ name, migrations: [{ version, name, statements }] }`, or `MigrationSet.fromDirectory(folder)`),
   * or the name of the built-in set (`inbox`, applied first whether listed or not). The migration function
   * applies them before it provisions any database role, so `databaseGrants` on your tables work on the
   * first deploy. A migration changed after it was applied fails the deploy, naming its version.
   * @example [MigrationSet.fromDirectory('migrations/credits')]
   * @default []
   */
  readonly migrations?: readonly (string | InboxMigrationSet)[] | undefined;
  /**
   * Retention of the migration functions' log groups.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
}

/**
 * The database that holds the inbox table: Aurora Serverless v2 PostgreSQL with the Data API (or an existing
 * cluster and secret), a custom resource that applies the inbox schema at deploy, and the production defaults:
 * 7-day backups, the PostgreSQL log in CloudWatch Logs, a security group without egress, and rotation of the
 * master secret and of every role's secret. Its migration function, the only user of the master secret, also
 * provisions the database role of each InboxConsumer and InboxCleanup ({@link InboxDatabaseRole}).
 *
 * @example
 * const db = new InboxDatabase(this, 'Db', { autoPause: Duration.minutes(10) });
 * const reporting = new InboxDatabaseRole(this, 'Reporting', {
 *   database: db, roleName: 'inbox_reporting', purpose: 'consumer', label: 'consumer reporting',
 * });
 * reporting.grantDataApi(myFunction, ['ExecuteStatement']);
 *
 * @example
 * // Your own tables, created at deploy after the inbox's and before any role is granted on them.
 * const db = new InboxDatabase(this, 'Db', {
 *   migrations: [MigrationSet.fromDirectory('migrations/credits')], // 001_create_credits.sql, 002_...
 * });
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
  /**
   * The master user's secret: the migration function signs in with it, and nothing else does. Consumers and
   * the purge each sign in with their own role's secret ({@link InboxDatabaseRole}).
   */
  public readonly secret: secretsmanager.ISecret;
  /** The database that holds the inbox table. */
  public readonly databaseName: string;
  /** The VPC of a cluster created here. */
  public readonly vpc?: ec2.IVpc;
  /** The security group of a cluster created here, when none was passed in: ingress only, no egress. */
  public readonly securityGroup?: ec2.ISecurityGroup;
  /** The rotation of this cluster's secrets (endpoint, security group), when rotation is on. */
  public readonly rotation?: InboxSecretRotation;
  /** The rotation schedule of the master secret, when rotation is on. */
  public readonly masterRotation?: secretsmanager.RotationSchedule;
  /** The custom resource that applies the schema. */
  public readonly migration: CustomResource;
  /** The migration handler (lambda/functions/migration/migrate.ts): it also provisions the roles. */
  public readonly migrationFunction: lambda.IFunction;
  /** The Provider framework that runs the migration handler. */
  public readonly migrationProvider: cr.Provider;
  /** SHA-256 of the migration sources and of your own sets: a role is reconciled again whenever the schema changes. */
  public readonly migrationsFingerprint: string;
  /** The database roles provisioned on this cluster so far, one per consumer and cleanup. */
  public readonly roles: InboxDatabaseRole[] = [];
  /** The master user's name when the cluster is created here. */
  public readonly masterUsername?: string;

  constructor(scope: Construct, id: string, props: InboxDatabaseProps = {}) {
    super(scope, id);
    this.databaseName = props.databaseName ?? 'inbox';
    validateProps(this.node.path, props);

    if (props.cluster !== undefined && props.secret !== undefined) {
      this.cluster = props.cluster;
      this.secret = props.secret;
      if (props.rotation !== undefined) this.rotation = props.rotation;
    } else {
      this.vpc = props.vpc ?? createVpc(this);
      const vpcSubnets = props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
      const created = createCluster(this, {
        vpc: this.vpc,
        vpcSubnets,
        securityGroups: props.securityGroups,
        engineVersion: props.engineVersion ?? rds.AuroraPostgresEngineVersion.VER_17_7,
        databaseName: this.databaseName,
        minCapacity: props.minCapacity ?? 0.5,
        maxCapacity: props.maxCapacity ?? 2,
        autoPause: props.autoPause,
        deletionProtection: props.deletionProtection ?? true,
        removalPolicy: props.removalPolicy ?? RemovalPolicy.SNAPSHOT,
        backupRetention: props.backupRetention ?? Duration.days(7),
        postgresLogRetention: props.exportPostgresLogs === false ? undefined : (props.postgresLogRetention ?? logs.RetentionDays.ONE_MONTH),
        readerInstance: props.readerInstance ?? false,
      });
      if (created.cluster.secret === undefined) throw InboxConstructError.of(`InboxDatabase ${this.node.path}`, [`the cluster has no secret.`], 'line');
      this.cluster = created.cluster;
      this.secret = created.cluster.secret;
      this.masterUsername = MASTER_USERNAME;
      if (created.securityGroup !== undefined) this.securityGroup = created.securityGroup;
      if (props.secretRotation ?? true) {
        this.rotation = new InboxSecretRotation(this, 'SecretRotation', {
          cluster: created.cluster,
          vpc: this.vpc,
          vpcSubnets,
          interval: props.rotationInterval ?? Duration.days(30),
          createEndpoint: props.secretsManagerEndpoint ?? props.vpc === undefined,
        });
      }
    }
    // A rotation passed in rotates the roles' secrets; the master secret rotates where the cluster is defined.
    if (this.rotation === undefined || props.rotation !== undefined) acknowledgeNoRotation(this.secret, props);

    const migratorCode = functionCode('migration');
    const migrator = new InboxFunction(this, 'Migrate', {
      ...migratorCode.source,
      environment: {},
      timeout: Duration.minutes(5),
      description: 'sqs-inbox schema migration and database roles (CloudFormation custom resources)',
      ...(props.logRetention === undefined ? {} : { logRetention: props.logRetention }),
    });
    this.migrationFunction = migrator.function;
    this.grantDataApiAccess(migrator.function);

    this.migrationProvider = migrationProvider(this, migrator.function, props.logRetention);
    const migrations = props.migrations ?? [];
    const ownSets = ownMigrationSets(migrations);
    addInvariants(this, () => migrationProblems(migrations));
    declareCreatedTables(this, ownSets);
    this.migrationsFingerprint = migrationsFingerprint(migratorCode, ownSets);
    this.migration = new CustomResource(this, 'Migration', {
      serviceToken: this.migrationProvider.serviceToken,
      resourceType: 'Custom::InboxMigration',
      properties: {
        ResourceArn: this.cluster.clusterArn,
        SecretArn: this.secret.secretArn,
        Database: this.databaseName,
        Migrations: ['inbox', ...migrations.map((entry) => (typeof entry === 'string' ? entry : entry?.name)).filter((name) => name !== 'inbox')].join(','),
        // The app's own SQL travels in the template: a deploy's diff shows it (see MAX_MIGRATION_SET_BYTES).
        ...(ownSets.length === 0 ? {} : { Sets: ownSets }),
        Fingerprint: this.migrationsFingerprint,
      },
    });
    // The Data API answers only once the writer instance is up; the cluster alone being created is not enough.
    // Not on the whole cluster construct: the master secret's rotation is below it and runs after the migration.
    const clusterResources = this.cluster.node.findAll().filter((c) => c instanceof rds.CfnDBCluster || c instanceof rds.CfnDBInstance);
    this.migration.node.addDependency(...(clusterResources.length > 0 ? clusterResources : [this.cluster]));
    if (this.rotation !== undefined && props.rotation === undefined) {
      this.masterRotation = this.rotation.rotate(this.secret);
      // Rotating the master password while the migration runs would pull the sign-in from under it.
      this.masterRotation.node.addDependency(this.migration);
    }
  }

  /**
   * Grants the Data API calls of a transaction on this cluster and reading the master secret: administration
   * only. Functions that process messages get their own role instead (InboxConsumer, InboxCleanup).
   *
   * @example
   * db.grantDataApiAccess(adminFunction);
   */
  public grantDataApiAccess(grantee: iam.IGrantable): void {
    grantDataApi(this.node.path, grantee, this.cluster, this.secret, TRANSACTION_ACTIONS);
  }

  /**
   * Records a role provisioned on this cluster: the migration function may read its secret (to set the
   * password it was generated with), and the master secret is rotated only after the role exists.
   * Called by {@link InboxDatabaseRole}.
   */
  public registerRole(role: InboxDatabaseRole): void {
    this.roles.push(role);
    role.secret.grantRead(this.migrationFunction);
    this.masterRotation?.node.addDependency(role.resource);
  }

  /** Identifies the cluster across the app: role names are unique per cluster, not per database. */
  public get clusterKey(): string {
    return Token.isUnresolved(this.cluster.clusterIdentifier) ? this.cluster.node.path : this.cluster.clusterIdentifier;
  }

  /**
   * Identifies the inbox table across the app: two InboxDatabase constructs over the same cluster and
   * database share one table.
   */
  public get tableKey(): string {
    return `${this.clusterKey}/${this.databaseName}`;
  }

  /** "database 'inbox' of cluster X", for messages. */
  public get tableDescription(): string {
    return `the inbox table of database '${this.databaseName}' on cluster ${this.clusterKey}`;
  }
}

/** A secret without rotation is acknowledged with the reason it has none. */
function acknowledgeNoRotation(secret: secretsmanager.ISecret, props: InboxDatabaseProps): void {
  Validations.of(secret).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason:
      props.cluster !== undefined
        ? 'The cluster is imported (`cluster`), so its network is not known here: rotate its secret where the cluster is defined.'
        : 'Rotation was turned off on purpose with `secretRotation: false`; the default rotates every 30 days in the VPC.',
  });
}

/**
 * The Provider framework around the migration handler. Its role may invoke that one function (no
 * `<arn>:*` versions wildcard: the framework invokes the unqualified ARN) and write its own log group.
 */
export function migrationProvider(scope: Construct, handler: lambda.IFunction, logRetention: logs.RetentionDays | undefined): cr.Provider {
  const frameworkLogs = new logs.LogGroup(scope, 'MigrationProviderLogs', {
    retention: logRetention ?? logs.RetentionDays.ONE_MONTH,
  });
  const frameworkRole = new iam.Role(scope, 'MigrationProviderRole', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: 'Execution role of the sqs-inbox migration custom resource framework',
  });
  frameworkLogs.grantWrite(frameworkRole);
  frameworkRole.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['lambda:GetFunction', 'lambda:InvokeFunction'], resources: [handler.functionArn] }));
  // What the Provider grants on its own (invoke on <arn> and <arn>:*) is dropped: the statement above covers it.
  return new cr.Provider(scope, 'MigrationProvider', {
    onEventHandler: handler,
    logGroup: frameworkLogs,
    frameworkOnEventRole: frameworkRole.withoutPolicyUpdates(),
  });
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
    const ignored = (
      [
        'vpc',
        'vpcSubnets',
        'engineVersion',
        'minCapacity',
        'maxCapacity',
        'autoPause',
        'backupRetention',
        'exportPostgresLogs',
        'postgresLogRetention',
        'readerInstance',
        'securityGroups',
        'secretRotation',
        'rotationInterval',
        'secretsManagerEndpoint',
      ] as const
    ).filter((key) => props[key] !== undefined);
    if (ignored.length > 0) {
      problems.push(
        `${ignored.map((key) => `\`${key}\``).join(', ')} only apply to a new cluster, but \`cluster\` was given. ` +
          'Fix: configure the existing cluster directly and remove these props.',
      );
    }
  }
  if (props.rotation !== undefined && props.cluster === undefined) {
    problems.push(
      '`rotation` is the rotation of an existing `cluster`, but none was given. Fix: remove `rotation` (a cluster created here ' +
        'rotates its secrets itself, see `secretRotation`), or pass the `cluster` and `secret` it belongs to.',
    );
  }
  if (props.autoPause !== undefined && props.minCapacity !== undefined && props.minCapacity !== 0) {
    problems.push(
      `\`autoPause\` needs a minimum capacity of 0 ACUs, but \`minCapacity\` is ${props.minCapacity}. ` +
        'Fix: remove `minCapacity` (auto-pause sets it to 0) or remove `autoPause`.',
    );
  }
  const backupDays =
    props.backupRetention === undefined || props.backupRetention.isUnresolved() ? undefined : props.backupRetention.toDays({ integral: false });
  if (backupDays !== undefined && !(Number.isInteger(backupDays) && backupDays >= 1 && backupDays <= 35)) {
    problems.push(
      `\`backupRetention\` must be whole days from 1 to 35 (what Aurora accepts), got ${props.backupRetention!.toHumanString()}. ` +
        'Fix: use e.g. Duration.days(7).',
    );
  }
  const rotationDays =
    props.rotationInterval === undefined || props.rotationInterval.isUnresolved() ? undefined : props.rotationInterval.toDays({ integral: false });
  if (rotationDays !== undefined && !(Number.isInteger(rotationDays) && rotationDays >= 1 && rotationDays <= 1000)) {
    problems.push(
      `\`rotationInterval\` must be whole days from 1 to 1000 (what Secrets Manager accepts), got ${props.rotationInterval!.toHumanString()}. ` +
        'Fix: use e.g. Duration.days(30).',
    );
  }
  if (props.secretRotation === false && (props.rotationInterval !== undefined || props.secretsManagerEndpoint !== undefined)) {
    problems.push(
      '`rotationInterval` and `secretsManagerEndpoint` only apply with rotation on, but `secretRotation` is false. Fix: remove them, or turn rotation on.',
    );
  }
  if (props.exportPostgresLogs === false && props.postgresLogRetention !== undefined) {
    problems.push('`postgresLogRetention` only applies when the log is exported, but `exportPostgresLogs` is false. Fix: remove one of them.');
  }
  if (problems.length > 0) throw InboxConstructError.of(`InboxDatabase ${path}`, problems);
}

/**
 * SHA-256 over the migration function's code (its prebuilt bundle; in this repository, the sources of its built-in
 * sets) and the app's own sets, so the custom resource re-runs when a built-in migration changes, and each role is
 * reconciled again when any table may have. `sources` are relative to lib/database/.
 */
export function migrationsFingerprint(code: FunctionCode, ownSets: readonly InboxMigrationSet[], sources: readonly string[] = MIGRATION_SOURCES): string {
  const hash = createHash('sha256');
  const files = code.prebuilt ? [code.file] : sources.map((file) => fileURLToPath(new URL(file, import.meta.url)));
  for (const file of files) hash.update(readFileSync(file));
  if (ownSets.length > 0) hash.update(JSON.stringify(ownSets));
  return hash.digest('hex');
}
