import { CustomResource, Duration, Fn, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dsql from 'aws-cdk-lib/aws-dsql';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { InboxFunction } from '../consumer/inbox-function.js';
import { migrationProvider, migrationsFingerprint } from '../database/inbox-database.js';
import { migrationProblems, ownMigrationSets } from '../database/migration-sets.js';
import type { InboxMigrationSet } from '../database/migration-sets.js';
import { addInvariants } from '../invariants.js';
import { checkDsqlSql } from '../../lambda/inbox/transport/dsql/supported-sql.js';
import type { DsqlSqlViolation } from '../../lambda/inbox/transport/dsql/supported-sql.js';
import type { InvariantViolation } from '../invariants.js';
import { grantProblems, roleNameProblem } from '../database/database-grants.js';
import type { InboxTableGrant } from '../database/database-grants.js';
import type { InboxDatabaseRoleProps } from '../database/inbox-database-role.js';
import { functionCode } from '../function-assets.js';
import { dsqlRoleStatements } from './dsql-role-sql.js';
import { InboxConstructError } from '../errors.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';

/** The namespace Aurora DSQL publishes its metrics in, per cluster (dimension `ClusterId`). */
export const DSQL_METRICS_NAMESPACE = 'AWS/AuroraDSQL';

/** A multi-Region cluster: this cluster's peers and the witness Region. */
export interface InboxDsqlMultiRegion {
  /** The Region that holds the witness of the pair (it stores no data, and takes no connections). */
  readonly witnessRegion: string;
  /**
   * ARNs of the peer clusters in the other Region. Create the first cluster with none, the second with the first's
   * ARN, then update the first with the second's (AWS::DSQL::Cluster peers them both ways).
   * @default [] (peered later)
   */
  readonly peerClusterArns?: readonly string[] | undefined;
}

/** Props for {@link InboxDsqlDatabase}. */
export interface InboxDsqlDatabaseProps {
  /**
   * Deletion protection of the cluster.
   * @default true
   */
  readonly deletionProtection?: boolean | undefined;
  /**
   * What happens to the cluster when it leaves the stack. DSQL has no snapshot on delete.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy | undefined;
  /**
   * A customer managed KMS key to encrypt the cluster with.
   * @default - an AWS owned key
   */
  readonly encryptionKey?: kms.IKey | undefined;
  /**
   * Make this one cluster of a multi-Region pair.
   * @default - a single-Region cluster
   */
  readonly multiRegion?: InboxDsqlMultiRegion | undefined;
  /**
   * The schema of the inbox tables.
   * @default 'inbox'
   */
  readonly schema?: string | undefined;
  /**
   * OCC conflicts per 5 minutes above which the conflict alarm fires. A conflict is retried by the runtime, but a
   * steady stream of them means records race on the same rows (hot keys) or transactions run long.
   * @default 100
   */
  readonly occConflictsThreshold?: number | undefined;
  /**
   * Migration sets to apply after `inbox` (always first, in its DSQL form), in this order: your own sets as values
   * (`{ name, migrations: [{ version, name, statements }] }`, or `MigrationSet.fromDirectory(folder)`), or the name of
   * the built-in set (`inbox`, applied first whether listed or not). As on InboxDatabase, but each migration holds ONE statement, in DSQL's dialect
   * (one DDL per transaction; `CREATE INDEX ASYNC`; no `serial`, foreign keys or triggers). The schema function
   * applies them before it maps any role, so `databaseGrants` on your tables work on the first deploy; a migration
   * changed after it was applied fails the deploy, naming its version.
   * @default []
   */
  readonly migrations?: readonly (string | InboxMigrationSet)[] | undefined;
  /**
   * Retention of the schema function's log groups.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
}

/** A role the DSQL schema function maps to an IAM role, with its privileges. */
export interface InboxDsqlRoleOptions {
  /** The PostgreSQL role: lower-case letters, digits and `_`, at most 63 characters. Unique per cluster. */
  readonly roleName: string;
  /** The function (or other principal with a role) that signs in as it. */
  readonly grantee: iam.IGrantable & { readonly role?: iam.IRole | undefined };
  /** What the role is for, as {@link InboxDatabaseRoleProps.purpose} says. */
  readonly purpose: InboxDatabaseRoleProps['purpose'];
  /**
   * A consumer's privileges on your own tables.
   * @default []
   */
  readonly grants?: readonly InboxTableGrant[] | undefined;
  /**
   * The consumer a consumer's role serves, recorded in the inbox schema's `role_scope` at deploy: mapping the role for
   * another consumer later is refused (InboxDsqlConsumer passes its `consumerName`).
   * @default none
   */
  readonly consumer?: string | undefined;
}

/**
 * An Aurora DSQL cluster for the inbox (`AWS::DSQL::Cluster`): IAM authentication only, no VPC, no Data API. Each
 * function signs in as its own PostgreSQL role, mapped to its IAM role by the DSQL schema function
 * (`CREATE ROLE ... WITH LOGIN; AWS IAM GRANT <role> TO '<iam role arn>'`), and may `dsql:DbConnect`, never
 * `dsql:DbConnectAdmin`: only the schema function signs in as `admin`, to apply the schema (`migrations`) at
 * deploy and map the roles. Alarms on the cluster's OCC conflicts and query timeouts (`AWS/AuroraDSQL`).
 *
 * @example
 * const database = new InboxDsqlDatabase(this, 'Dsql');
 * new InboxDsqlConsumer(this, 'Worker', { database, queue, consumerName: 'orders', entry: 'src/worker.ts' });
 * // src/worker.ts: export const handler = inbox({ database: dsqlFromEnvironment(), apply: ... });
 */
export class InboxDsqlDatabase extends Construct {
  /** The cluster. */
  public readonly cluster: dsql.CfnCluster;
  /** The cluster's identifier. */
  public readonly clusterId: string;
  /** The cluster's ARN. */
  public readonly clusterArn: string;
  /** `<clusterId>.dsql.<region>.on.aws`: where functions connect. */
  public readonly endpoint: string;
  /** The cluster's Region. */
  public readonly region: string;
  /** The schema of the inbox tables. */
  public readonly schema: string;
  /**
   * The schema function (lambda/functions/dsql-schema/, handler `schema` of the `dsql` bundle), signed in as `admin`: the only holder of
   * `dsql:DbConnectAdmin`. It applies the migrations (`schemaMigration`) and maps each role (`roles`).
   */
  public readonly roleFunction: InboxFunction;
  /** The Provider framework around it. */
  public readonly roleProvider: cr.Provider;
  /** The `Custom::InboxDsqlSchema` that applies the migrations; every role mapping depends on it. */
  public readonly schemaMigration: CustomResource;
  /** SHA-256 of the DSQL migrations and your own sets: a role is mapped again whenever the schema changes. */
  public readonly migrationsFingerprint: string;
  /** Fires when OCC conflicts exceed `occConflictsThreshold` in 5 minutes. */
  public readonly occConflictsAlarm: cloudwatch.Alarm;
  /** Fires when a query hits DSQL's transaction time limit. */
  public readonly queryTimeoutsAlarm: cloudwatch.Alarm;
  /** The role mappings, by role name. */
  public readonly roles = new Map<string, CustomResource>();
  /** What each role was mapped for, for the message that refuses a second mapping of it. */
  readonly #mappedFor = new Map<string, string>();

  constructor(scope: Construct, id: string, props: InboxDsqlDatabaseProps = {}) {
    super(scope, id);
    validateProps(this.node.path, props);
    this.schema = props.schema ?? 'inbox';
    this.cluster = new dsql.CfnCluster(this, 'Cluster', {
      deletionProtectionEnabled: props.deletionProtection ?? true,
      ...(props.encryptionKey === undefined ? {} : { kmsEncryptionKey: props.encryptionKey.keyArn }),
      ...(props.multiRegion === undefined
        ? {}
        : { multiRegionProperties: { witnessRegion: props.multiRegion.witnessRegion, clusters: [...(props.multiRegion.peerClusterArns ?? [])] } }),
    });
    this.cluster.applyRemovalPolicy(props.removalPolicy ?? RemovalPolicy.RETAIN);
    this.clusterId = this.cluster.attrIdentifier;
    this.clusterArn = this.cluster.attrResourceArn;
    this.region = Stack.of(this).region;
    this.endpoint = Fn.join('', [this.clusterId, '.dsql.', this.region, '.on.aws']);

    const code = functionCode('dsql');
    this.roleFunction = new InboxFunction(this, 'RoleFunction', {
      ...code.source,
      handler: 'schema',
      environment: {},
      // Each migration is a DDL transaction of its own, and DSQL builds an index asynchronously: minutes at most.
      timeout: Duration.minutes(5),
      description: 'sqs-inbox Aurora DSQL schema and role mapping (CloudFormation custom resources)',
      ...(props.logRetention === undefined ? {} : { logRetention: props.logRetention }),
    });
    this.grantConnectAdmin(this.roleFunction.function);
    this.roleProvider = migrationProvider(this, this.roleFunction.function, props.logRetention);

    const migrations = props.migrations ?? [];
    const ownSets = ownMigrationSets(migrations);
    addInvariants(this, () => [...migrationProblems(migrations, 'InboxDsqlDatabase'), ...oneStatementEach(ownSets), ...unsupportedSql(ownSets)]);
    this.migrationsFingerprint = migrationsFingerprint(code, ownSets, DSQL_MIGRATION_SOURCES);
    this.schemaMigration = new CustomResource(this, 'Schema', {
      serviceToken: this.roleProvider.serviceToken,
      resourceType: 'Custom::InboxDsqlSchema',
      properties: {
        Endpoint: this.endpoint,
        Region: this.region,
        Schema: this.schema,
        Migrations: ['inbox', ...migrations.map((entry) => (typeof entry === 'string' ? entry : entry?.name)).filter((name) => name !== 'inbox')].join(','),
        // The app's own SQL travels in the template: a deploy's diff shows it.
        ...(ownSets.length === 0 ? {} : { Sets: ownSets }),
        Fingerprint: this.migrationsFingerprint,
      },
    });
    this.schemaMigration.node.addDependency(this.cluster);

    const metric = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: DSQL_METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { ClusterId: this.clusterId },
        statistic: 'Sum',
        period: Duration.minutes(5),
      });
    this.occConflictsAlarm = metric('OccConflicts').createAlarm(this, 'OccConflictsAlarm', {
      alarmDescription: 'sqs-inbox: Aurora DSQL OCC conflicts above the threshold: records race on the same rows, or transactions run long.',
      threshold: props.occConflictsThreshold ?? 100,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.queryTimeoutsAlarm = metric('QueryTimeouts').createAlarm(this, 'QueryTimeoutsAlarm', {
      alarmDescription: "sqs-inbox: a query hit Aurora DSQL's transaction time limit; its record was reported failed.",
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /** Grants `dsql:DbConnect` on this cluster: signing in as a role mapped to the grantee's IAM role, never as `admin`. */
  public grantConnect(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({ grantee, actions: ['dsql:DbConnect'], resourceArns: [this.clusterArn] });
  }

  /** Grants `dsql:DbConnectAdmin`: signing in as `admin`. For the schema function alone; never give it to a consumer. */
  public grantConnectAdmin(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({ grantee, actions: ['dsql:DbConnectAdmin'], resourceArns: [this.clusterArn] });
  }

  /** Identifies the inbox table across the app (one per cluster and schema), as InboxDatabase's does. */
  public get tableKey(): string {
    return `dsql:${this.cluster.node.path}/${this.schema}`;
  }

  /** "the inbox table of schema 'inbox' on DSQL cluster X", for messages. */
  public get tableDescription(): string {
    return `the inbox table of schema '${this.schema}' on Aurora DSQL cluster ${this.cluster.node.path}`;
  }

  /**
   * Where a function signing in as `role` connects: `INBOX_DSQL_ENDPOINT`, `INBOX_DSQL_REGION` and `INBOX_DSQL_USER`,
   * which `dsqlFromEnvironment()` reads.
   */
  public connectionEnvironment(role: string): Record<string, string> {
    return { [INBOX_ENV.DSQL_ENDPOINT]: this.endpoint, [INBOX_ENV.DSQL_REGION]: this.region, [INBOX_ENV.DSQL_USER]: role };
  }

  /**
   * Maps `roleName` to the grantee's IAM role with the purpose's privileges (a `Custom::InboxDsqlRole`), and
   * grants the grantee `dsql:DbConnect`. Returns the custom resource: a function that signs in as the role should
   * depend on it.
   */
  public addRole(id: string, options: InboxDsqlRoleOptions): CustomResource {
    const iamRole = options.grantee.role ?? (options.grantee.grantPrincipal instanceof iam.Role ? options.grantee.grantPrincipal : undefined);
    const problems = [
      ...(roleNameProblem(options.roleName) === undefined
        ? []
        : [`\`roleName\` ${roleNameProblem(options.roleName)}. Fix: pass e.g. 'inbox_consumer_orders'.`]),
      ...grantProblems(options.grants ?? []),
      ...(iamRole === undefined ? ['the grantee has no IAM role to map the database role to. Fix: pass a function or a role.'] : []),
      ...(this.roles.has(options.roleName)
        ? [
            `role '${options.roleName}' is already mapped on this cluster, for ${this.#mappedFor.get(options.roleName)}: both functions would sign in as it ` +
              "(two consumer names that map to one role name, such as 'order-worker' and 'order_worker', do this). Fix: give each function its own " +
              'role (`databaseRole`).',
          ]
        : []),
      ...(options.roleName === 'admin' ? ["'admin' is DSQL's own administrator. Fix: give the function a role of its own."] : []),
    ];
    if (problems.length > 0) throw InboxConstructError.of(`InboxDsqlDatabase ${this.node.path} (${id})`, problems);
    const statements = dsqlRoleStatements({
      role: options.roleName,
      iamRoleArn: iamRole!.roleArn,
      purpose: options.purpose,
      grants: options.grants ?? [],
      schema: this.schema,
    });
    // Ids come from names that need not map one to one ('order.worker' and 'orderworker' both give 'orderworker'): the
    // later of two such mappings takes the role's name too, so that the first keeps its logical id.
    const childId = this.node.tryFindChild(`Role${id}`) === undefined ? `Role${id}` : `Role${id}${options.roleName.replace(/_/g, '')}`;
    const resource = new CustomResource(this, childId, {
      serviceToken: this.roleProvider.serviceToken,
      resourceType: 'Custom::InboxDsqlRole',
      properties: {
        Endpoint: this.endpoint,
        Region: this.region,
        Role: options.roleName,
        IamRoleArn: iamRole!.roleArn,
        ...(options.consumer === undefined ? {} : { Consumer: options.consumer, Schema: this.schema }),
        Statements: Stack.of(this).toJsonString(statements),
        // Mapped again when the schema changes: a grant on a table a new migration made.
        SchemaFingerprint: this.migrationsFingerprint,
      },
    });
    // The grants name the inbox tables and yours: they must exist first.
    resource.node.addDependency(this.schemaMigration);
    this.roles.set(options.roleName, resource);
    this.#mappedFor.set(options.roleName, options.consumer === undefined ? `the ${options.purpose} (${id})` : `consumer '${options.consumer}'`);
    this.grantConnect(options.grantee);
    return resource;
  }
}

/** The sources of the schema function's built-in sets (relative to lib/database/, as migrationsFingerprint reads them). */
const DSQL_MIGRATION_SOURCES = ['../../lambda/inbox/transport/dsql/migrations.ts'];

/** DSQL runs one DDL statement per transaction, and migrateDsql one migration per transaction: one statement each. */
function oneStatementEach(sets: readonly InboxMigrationSet[]): InvariantViolation[] {
  return sets.flatMap((set) =>
    (Array.isArray(set.migrations) ? set.migrations : [])
      .filter((migration) => Array.isArray(migration?.statements) && migration.statements.length > 1)
      .map((migration) => ({
        problem: `InboxDsqlDatabase \`migrations\`: the set '${set.name}', version ${migration.version} ("${migration.name}"), holds ${migration.statements.length} statements; Aurora DSQL runs one DDL statement per transaction.`,
        fix: 'split it into one migration per statement, each with its own version.',
      })),
  );
}

/**
 * Each statement of your own sets that Aurora DSQL does not support (bigserial, a synchronous
 * index, ...), by the same rules, with their sources, that the runtime and the local DSQL profile hold
 * statements to (lambda/inbox/transport/dsql/supported-sql.ts): the schema function would fail at deploy.
 */
function unsupportedSql(sets: readonly InboxMigrationSet[]): InvariantViolation[] {
  return sets.flatMap((set) =>
    (Array.isArray(set.migrations) ? set.migrations : []).flatMap((migration) =>
      (Array.isArray(migration?.statements) ? migration.statements : [])
        .flatMap((sql: unknown) => (typeof sql === 'string' ? checkDsqlSql(sql) : []))
        .map(({ rule, statement }: DsqlSqlViolation) => ({
          problem: `InboxDsqlDatabase \`migrations\`: the set '${set.name}', version ${migration.version} ("${migration.name}"), holds what Aurora DSQL does not support (${rule.id}, ${rule.source}): ${statement.replace(/\s+/g, ' ').slice(0, 120)}`,
          fix: `${rule.says}; change the migration to what DSQL supports.`,
        })),
    ),
  );
}

function validateProps(path: string, props: InboxDsqlDatabaseProps): void {
  const problems: string[] = [];
  const region = props.multiRegion?.witnessRegion;
  if (region !== undefined && !Token.isUnresolved(region) && !/^[a-z]{2}(-[a-z]+)+-\d$/.test(region)) {
    problems.push(`\`multiRegion.witnessRegion\` '${region}' is not a Region name. Fix: e.g. 'us-west-2'.`);
  }
  const threshold = props.occConflictsThreshold;
  if (threshold !== undefined && !Token.isUnresolved(threshold) && !(Number.isInteger(threshold) && threshold >= 1)) {
    problems.push(`\`occConflictsThreshold\` must be a whole number >= 1, got ${threshold}. Fix: e.g. 100.`);
  }
  if (props.schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(props.schema)) {
    problems.push(`\`schema\` '${props.schema}' must be lower-case letters, digits and '_'. Fix: e.g. 'inbox'.`);
  }
  if (problems.length > 0) throw InboxConstructError.of(`InboxDsqlDatabase ${path}`, problems);
}
