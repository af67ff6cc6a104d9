import { ArnFormat, Duration, Fn, Lazy, Names, Stack, Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as rds from 'aws-cdk-lib/aws-rds';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { InboxDatabase } from './inbox-database.js';
import { InboxConstructError } from '../errors.js';

/** The port RDS Proxy listens on for PostgreSQL. */
export const PROXY_PORT = 5432;

/** Props for {@link InboxDatabaseProxy}. */
export interface InboxDatabaseProxyProps {
  /** The database whose cluster the proxy fronts. Its migrations, roles and purge are unchanged. */
  readonly database: InboxDatabase;
  /**
   * The VPC of the proxy and of the consumers that use it.
   * @default - the database's VPC (required for an imported cluster, whose VPC is not known here)
   */
  readonly vpc?: ec2.IVpc | undefined;
  /**
   * Subnets of `vpc` for the proxy and its consumers.
   * @default { subnetType: ec2.SubnetType.PRIVATE_ISOLATED }
   */
  readonly vpcSubnets?: ec2.SubnetSelection | undefined;
  /**
   * How long a client connection may sit idle before the proxy closes it (1 minute to 8 hours). The runtime's
   * pool closes its own idle connections after 60 s, well before.
   * @default Duration.minutes(30)
   */
  readonly idleClientTimeout?: Duration | undefined;
  /**
   * The share of the cluster's `max_connections` the proxy may open (1 to 100).
   * @default 90
   */
  readonly maxConnectionsPercent?: number | undefined;
}

/**
 * RDS Proxy in front of an {@link InboxDatabase}'s cluster, for consumers on the PostgreSQL wire: clients sign
 * in with IAM authentication only (no password ever reaches a function), over TLS only. Each consumer that uses
 * it (`InboxConsumer` `proxy`) runs in the VPC with a security group that may reach the proxy's port and nothing
 * else, and may `rds-db:connect` as its own database role and no other. The proxy signs in to the cluster with
 * that role's Secrets Manager secret, which only the proxy's own role may read. The database's migrations, the
 * roles, the purge and the alarms are those of the Data API path.
 *
 * @example
 * const database = new InboxDatabase(this, 'Db');
 * const proxy = new InboxDatabaseProxy(this, 'Proxy', { database });
 * new InboxConsumer(this, 'Worker', { database, proxy, queue, consumerName: 'orders', entry: 'src/worker.ts' });
 * // src/worker.ts: export const handler = inbox({ database: postgresFromEnvironment(), apply: ... });
 */
export class InboxDatabaseProxy extends Construct implements ec2.IConnectable {
  /** The proxy. */
  public readonly proxy: rds.CfnDBProxy;
  /** The proxy's target group (the cluster). */
  public readonly targetGroup: rds.CfnDBProxyTargetGroup;
  /** The endpoint consumers connect to. */
  public readonly endpoint: string;
  /** The proxy's ARN. */
  public readonly dbProxyArn: string;
  /** The role the proxy reads the database roles' secrets with. */
  public readonly role: iam.Role;
  /** The proxy's security group: ingress only from the consumers that use it, egress only to the cluster. */
  public readonly securityGroup: ec2.SecurityGroup;
  /** The proxy's network connections. */
  public readonly connections: ec2.Connections;
  /** The VPC of the proxy and its consumers. */
  public readonly vpc: ec2.IVpc;
  /** The subnets of the proxy and its consumers. */
  public readonly vpcSubnets: ec2.SubnetSelection;
  /** The database behind it. */
  public readonly database: InboxDatabase;
  /**
   * Fires when a client's sign-in is refused (`ClientConnectionsSetupFailedAuth`): a consumer's token does not match
   * its `rds-db:connect` grant, or the proxy cannot use the role's secret. Every record of that consumer fails.
   */
  public readonly failedAuthAlarm: cloudwatch.Alarm;
  /**
   * Fires when taking a connection to the cluster from the proxy's pool takes over 100 ms on average for 3 minutes
   * (`DatabaseConnectionsBorrowLatency`): the pool is exhausted; raise `maxConnectionsPercent` or the cluster's size.
   */
  public readonly borrowLatencyAlarm: cloudwatch.Alarm;
  readonly #secrets: secretsmanager.ISecret[] = [];

  constructor(scope: Construct, id: string, props: InboxDatabaseProxyProps) {
    super(scope, id);
    validateProps(this.node.path, props);
    const vpc = props.vpc ?? props.database.vpc;
    if (vpc === undefined) {
      throw InboxConstructError.of(
        `InboxDatabaseProxy ${this.node.path}`,
        [
          "the database's cluster is imported, so its VPC is not known here. Fix: pass `vpc` (the VPC of the cluster), and allow " +
            "the proxy's `securityGroup` in on the cluster's security group.",
        ],
        'line',
      );
    }
    this.vpc = vpc;
    this.vpcSubnets = props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
    this.database = props.database;

    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc,
      allowAllOutbound: false,
      description: 'sqs-inbox RDS Proxy: ingress only from its consumers, egress only to the cluster',
    });
    this.connections = new ec2.Connections({ securityGroups: [this.securityGroup], defaultPort: ec2.Port.tcp(PROXY_PORT) });
    // Ingress on the cluster's security group and egress on the proxy's, for the cluster's port only.
    props.database.cluster.connections.allowDefaultPortFrom(this.securityGroup, 'sqs-inbox RDS Proxy');

    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('rds.amazonaws.com'),
      description: `sqs-inbox RDS Proxy ${this.node.path}: reads the secrets of the database roles its consumers sign in as`,
    });
    this.proxy = new rds.CfnDBProxy(this, 'Resource', {
      // Unique in the account and region; letters and digits only, as RDS Proxy accepts.
      dbProxyName: Names.uniqueResourceName(this, { maxLength: 60 }),
      engineFamily: 'POSTGRESQL',
      requireTls: true,
      roleArn: this.role.roleArn,
      idleClientTimeout: (props.idleClientTimeout ?? Duration.minutes(30)).toSeconds(),
      vpcSubnetIds: vpc.selectSubnets(this.vpcSubnets).subnetIds,
      vpcSecurityGroupIds: [this.securityGroup.securityGroupId],
      // One entry per database role a consumer signs in as, each with IAM authentication required.
      auth: Lazy.any({
        produce: () =>
          this.#secrets.map((secret) => ({
            authScheme: 'SECRETS',
            iamAuth: 'REQUIRED',
            clientPasswordAuthType: 'POSTGRES_SCRAM_SHA_256',
            secretArn: secret.secretArn,
          })),
      }),
    });
    this.endpoint = this.proxy.attrEndpoint;
    this.dbProxyArn = this.proxy.attrDbProxyArn;

    this.targetGroup = new rds.CfnDBProxyTargetGroup(this, 'TargetGroup', {
      targetGroupName: 'default',
      dbProxyName: this.proxy.ref,
      dbClusterIdentifiers: [props.database.cluster.clusterIdentifier],
      connectionPoolConfigurationInfo: { maxConnectionsPercent: props.maxConnectionsPercent ?? 90 },
    });
    // The target registers only once the writer instance is up.
    for (const resource of props.database.cluster.node.findAll()) {
      if (resource instanceof rds.CfnDBInstance) this.targetGroup.addResourceDependency(resource);
    }
    const metric = (metricName: string, statistic: string, period: Duration) =>
      new cloudwatch.Metric({ namespace: 'AWS/RDS', metricName, dimensionsMap: { ProxyName: this.proxy.ref }, statistic, period });
    this.failedAuthAlarm = metric('ClientConnectionsSetupFailedAuth', 'Sum', Duration.minutes(5)).createAlarm(this, 'FailedAuthAlarm', {
      alarmDescription: "sqs-inbox: RDS Proxy refused a consumer's sign-in: check its rds-db:connect grant and the proxy's access to its role's secret.",
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.borrowLatencyAlarm = metric('DatabaseConnectionsBorrowLatency', 'Average', Duration.minutes(1)).createAlarm(this, 'BorrowLatencyAlarm', {
      alarmDescription: "sqs-inbox: RDS Proxy waits over 100 ms for a connection to the cluster: raise maxConnectionsPercent or the cluster's capacity.",
      // Microseconds.
      threshold: 100_000,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.node.addValidation({
      validate: () =>
        this.#secrets.length > 0
          ? []
          : [
              `InboxDatabaseProxy ${this.node.path}: no consumer uses this proxy, so it has no database role to sign in as. Fix: pass it as \`proxy\` to an InboxConsumer, or remove it.`,
            ],
    });
  }

  /**
   * Lets the proxy sign in to the cluster as the role whose secret this is: the proxy's role may read it.
   * Called by InboxConsumer for its own database role.
   */
  public addSecret(secret: secretsmanager.ISecret): void {
    if (this.#secrets.includes(secret)) return;
    this.#secrets.push(secret);
    secret.grantRead(this.role);
  }

  /**
   * Grants `rds-db:connect` through this proxy as `databaseRole`, and no other role:
   * `arn:<partition>:rds-db:<region>:<account>:dbuser:prx-<id>/<databaseRole>`.
   */
  public grantConnect(grantee: iam.IGrantable, databaseRole: string): iam.Grant {
    // The proxy's ARN ends in its resource id, `...:db-proxy:prx-<id>`, which the dbuser ARN names.
    const proxyId = Fn.select(6, Fn.split(':', this.dbProxyArn));
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ['rds-db:connect'],
      resourceArns: [
        Stack.of(this).formatArn({
          service: 'rds-db',
          resource: 'dbuser',
          resourceName: `${proxyId}/${databaseRole}`,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      ],
    });
  }

  /** Lets `peer` (a consumer's security group) reach the proxy's port, and nothing else of it. */
  public allowFrom(peer: ec2.IConnectable): void {
    this.connections.allowDefaultPortFrom(peer, 'sqs-inbox consumer to RDS Proxy');
  }
}

function validateProps(path: string, props: InboxDatabaseProxyProps): void {
  const problems: string[] = [];
  const idle = props.idleClientTimeout;
  if (idle !== undefined && !idle.isUnresolved()) {
    const seconds = idle.toSeconds({ integral: false });
    if (!(Number.isInteger(seconds) && seconds >= 60 && seconds <= 28_800)) {
      problems.push(
        `\`idleClientTimeout\` must be whole seconds from 1 minute to 8 hours (what RDS Proxy accepts), got ${idle.toHumanString()}. Fix: e.g. Duration.minutes(30).`,
      );
    }
  }
  const percent = props.maxConnectionsPercent;
  if (percent !== undefined && !Token.isUnresolved(percent) && !(Number.isInteger(percent) && percent >= 1 && percent <= 100)) {
    problems.push(`\`maxConnectionsPercent\` must be a whole number from 1 to 100, got ${percent}. Fix: e.g. 90.`);
  }
  if (problems.length > 0) throw InboxConstructError.of(`InboxDatabaseProxy ${path}`, problems);
}
