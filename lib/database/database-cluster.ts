import { type Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { logRetentionRole } from './postgres-logs.js';
import { InboxConstructError } from '../errors.js';

/** The master user: the migration function's, and the owner of the inbox schema. */
export const MASTER_USERNAME = 'inbox_admin';

/** The settings of a new cluster, defaults applied. */
export interface ClusterSettings {
  readonly vpc: ec2.IVpc;
  readonly vpcSubnets: ec2.SubnetSelection;
  readonly securityGroups: readonly ec2.ISecurityGroup[] | undefined;
  readonly engineVersion: rds.AuroraPostgresEngineVersion;
  readonly databaseName: string;
  readonly minCapacity: number;
  readonly maxCapacity: number;
  readonly autoPause: Duration | undefined;
  readonly deletionProtection: boolean;
  readonly removalPolicy: RemovalPolicy;
  readonly backupRetention: Duration;
  readonly postgresLogRetention: logs.RetentionDays | undefined;
  readonly readerInstance: boolean;
}

/** What {@link createCluster} made. */
export interface CreatedCluster {
  readonly cluster: rds.DatabaseCluster;
  /** The cluster's security group, when it was created here (no egress). */
  readonly securityGroup?: ec2.SecurityGroup;
}

/**
 * Aurora Serverless v2 PostgreSQL with the Data API and the production defaults: encrypted storage, IAM
 * authentication, deletion protection, backups kept `backupRetention`, the PostgreSQL log exported to
 * CloudWatch Logs with a retention, a security group with no egress, and optionally a reader in the
 * writer's promotion tier for failover.
 */
export function createCluster(scope: Construct, settings: ClusterSettings): CreatedCluster {
  // The cluster answers connections; it never opens any. Only ingress rules are ever added to it.
  const securityGroup =
    settings.securityGroups === undefined
      ? new ec2.SecurityGroup(scope, 'SecurityGroup', {
          vpc: settings.vpc,
          allowAllOutbound: false,
          description: 'sqs-inbox Aurora cluster: no egress; ingress only from what is granted its port',
        })
      : undefined;
  const logsExported = settings.postgresLogRetention !== undefined;
  const cluster = new rds.DatabaseCluster(scope, 'Cluster', {
    engine: rds.DatabaseClusterEngine.auroraPostgres({ version: settings.engineVersion }),
    writer: rds.ClusterInstance.serverlessV2('writer'),
    // Same promotion tier as the writer: it scales with it, so a failover lands on an instance of the same size.
    ...(settings.readerInstance ? { readers: [rds.ClusterInstance.serverlessV2('reader', { scaleWithWriter: true })] } : {}),
    serverlessV2MinCapacity: settings.autoPause !== undefined ? 0 : settings.minCapacity,
    serverlessV2MaxCapacity: settings.maxCapacity,
    ...(settings.autoPause !== undefined ? { serverlessV2AutoPauseDuration: settings.autoPause } : {}),
    enableDataApi: true,
    credentials: rds.Credentials.fromGeneratedSecret(MASTER_USERNAME),
    defaultDatabaseName: settings.databaseName,
    storageEncrypted: true,
    iamAuthentication: true,
    deletionProtection: settings.deletionProtection,
    removalPolicy: settings.removalPolicy,
    backup: { retention: settings.backupRetention },
    ...(logsExported
      ? {
          cloudwatchLogsExports: ['postgresql'],
          cloudwatchLogsRetention: settings.postgresLogRetention,
          cloudwatchLogsRetentionRole: logRetentionRole(scope),
        }
      : {}),
    securityGroups: securityGroup === undefined ? [...(settings.securityGroups ?? [])] : [securityGroup],
    vpc: settings.vpc,
    vpcSubnets: settings.vpcSubnets,
  });
  // The generated secret (cluster.secret is only its attachment) would otherwise be deleted with the stack
  // while the cluster's data survives in a snapshot or a retained cluster. Secrets have no SNAPSHOT policy.
  const generatedSecret = cluster.node.tryFindChild('Secret');
  if (!(generatedSecret instanceof secretsmanager.Secret)) {
    throw InboxConstructError.of(`InboxDatabase ${scope.node.path}`, [`the cluster's generated secret was not found.`], 'line');
  }
  generatedSecret.applyRemovalPolicy(settings.removalPolicy === RemovalPolicy.SNAPSHOT ? RemovalPolicy.RETAIN : settings.removalPolicy);
  if (!settings.deletionProtection) {
    Validations.of(cluster).acknowledge({
      id: 'AwsSolutions-RDS10',
      reason:
        'Deletion protection was turned off on purpose with `deletionProtection: false` (a throwaway deployment that ' +
        '`cdk destroy` must be able to remove); the default keeps it on.',
    });
  }
  return { cluster, ...(securityGroup === undefined ? {} : { securityGroup }) };
}

/** Two isolated subnets, no NAT gateway, flow logs. */
export function createVpc(scope: Construct): ec2.Vpc {
  return new ec2.Vpc(scope, 'Vpc', {
    maxAzs: 2,
    natGateways: 0,
    subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
    flowLogs: { all: { destination: ec2.FlowLogDestination.toCloudWatchLogs() } },
  });
}
