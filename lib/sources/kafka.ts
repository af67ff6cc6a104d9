import { Fn, Token, Validations } from 'aws-cdk-lib';
import type { Duration } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { type AuthenticationMethod, SelfManagedKafkaEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { ProvisionedPollerConfig } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { durationSeconds } from '../invariants.js';
import type { AttachedSource, SourceTarget } from './source.js';
import { StreamSource, streamEventSourceProps } from './stream.js';
import type { InboxStreamSourceOptions, StreamSettings } from './stream.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

/**
 * Options of a Kafka topic as a source: {@link InboxSources.selfManagedKafka} takes them all,
 * {@link InboxSources.msk} all but the self-managed brokers' own (`authenticationMethod`, `rootCACertificate`, `vpc`,
 * `vpcSubnets`, `securityGroup`: Lambda reaches an MSK cluster through the cluster's own network settings). The
 * stream options apply as to every stream, but for `parallelizationFactor` (a topic runs one batch per partition at
 * a time) and `redeliveryWindow` (a topic's is `topicRetention`).
 *
 * @example
 * InboxSources.msk(cluster.attrArn, { topic: 'orders', topicRetention: Duration.days(7) })
 * @example
 * InboxSources.selfManagedKafka(['broker-1.example.com:9096'], { topic: 'orders', topicRetention: Duration.days(7), secret })
 */
export interface InboxKafkaSourceOptions extends Omit<InboxStreamSourceOptions, 'parallelizationFactor' | 'redeliveryWindow'> {
  /** The topic. */
  readonly topic: string;
  /**
   * The topic's retention (`retention.ms`), which is not visible at synth: a consumer group that starts over
   * from the earliest offset re-reads every record the topic still holds, so the inbox retention must exceed it.
   * Required; for a topic that keeps records forever no inbox retention is long enough.
   */
  readonly topicRetention: Duration;
  /**
   * The consumer group Lambda joins. Unique among all Kafka event sources, and fixed once the mapping exists.
   * A mapping that is replaced joins the same group and resumes from its committed offsets, instead of starting
   * over from `startingPosition` as a new group would.
   * @default - the consumer's `consumerName`
   */
  readonly consumerGroupId?: string | undefined;
  /**
   * The secret Lambda signs in to the brokers with: SASL/SCRAM-512 for MSK; for self-managed brokers, what
   * `authenticationMethod` says.
   * @default - MSK: IAM access control (the function's role gets the `kafka-cluster:` actions it needs on this
   * cluster, topic and group); self-managed: none, which needs `vpc`
   */
  readonly secret?: secretsmanager.ISecret | undefined;
  /**
   * Provisioned mode's event pollers, or `false` for on-demand mode. Lambda supports partial batch responses,
   * bounded retries, bisect on error and a maximum record age for Kafka only in provisioned mode; on demand, a
   * failing record is retried until the topic drops it, and the handler fails whole invocations.
   * @default { minimumPollers: 1, maximumPollers: 1 }: one poller, by AWS's sizing about 5 MB/s and 5 concurrent
   * invocations, the ceiling the SQS default `maxConcurrency` (5) also sets to protect the database
   */
  readonly provisionedPollers?: ProvisionedPollerConfig | false | undefined;
  /**
   * Partial batch responses (ReportBatchItemFailures): the handler names the failed records, and Lambda retries
   * from them. Off, the handler fails the whole invocation when a record fails. The construct tells the handler
   * which through `INBOX_REPORT_BATCH_ITEM_FAILURES`.
   * @default true in provisioned mode; false on demand (Lambda would ignore the response)
   */
  readonly reportBatchItemFailures?: boolean | undefined;
  /**
   * Self-managed brokers only: how `secret` signs in.
   * @default AuthenticationMethod.SASL_SCRAM_512_AUTH
   */
  readonly authenticationMethod?: AuthenticationMethod | undefined;
  /**
   * Self-managed brokers only: the root CA certificate of brokers whose TLS certificates a private CA signed.
   * @default - none
   */
  readonly rootCACertificate?: secretsmanager.ISecret | undefined;
  /**
   * Self-managed brokers only: the VPC they are reachable in (with `vpcSubnets` and `securityGroup`).
   * @default - reached over the internet (then `secret` is required)
   */
  readonly vpc?: ec2.IVpc | undefined;
  /**
   * Self-managed brokers only: subnets in `vpc`.
   * @default - none (required with `vpc`)
   */
  readonly vpcSubnets?: ec2.SubnetSelection | undefined;
  /**
   * Self-managed brokers only: the security group in `vpc`.
   * @default - none (required with `vpc`)
   */
  readonly securityGroup?: ec2.ISecurityGroup | undefined;
}

/** Provisioned mode unless told otherwise: see {@link InboxKafkaSourceOptions.provisionedPollers}. */
export const KAFKA_DEFAULT_POLLERS: ProvisionedPollerConfig = { minimumPollers: 1, maximumPollers: 1 };

/** Where the brokers are: an MSK cluster, or self-managed brokers. */
export type KafkaBrokers = { readonly clusterArn: string } | { readonly bootstrapServers: readonly string[] };

/**
 * A Kafka topic as the consumer's source, on MSK or self-managed brokers: provisioned mode with partial batch
 * responses, bisect on error, bounded retries and an on-failure destination by default. For MSK the function's
 * role gets exactly what the event source mapping needs on this cluster (no AWSLambdaMSKExecutionRole, whose
 * grants span every cluster and log group).
 */
export class KafkaSource extends StreamSource {
  readonly kind = 'kafka' as const;
  readonly window = {
    description: "the topic's retention (`topicRetention`): a consumer group that starts over from the earliest offset re-reads every record the topic holds",
    shorten: "lower the topic's retention.ms, and the source's `topicRetention` with it",
  };
  readonly #brokers: KafkaBrokers;
  readonly #kafka: InboxKafkaSourceOptions;
  /** `undefined`: on-demand mode. */
  readonly #pollers: ProvisionedPollerConfig | undefined;

  /** Refuses a topic retention that is not one; resolves the mode. */
  constructor(factory: string, brokers: KafkaBrokers, options: InboxKafkaSourceOptions) {
    super(options);
    const retention = durationSeconds(options.topicRetention);
    if (retention !== undefined && !(retention > 0)) {
      throw InboxConstructError.of(
        factory,
        ["`topicRetention` must be the topic's retention.ms as a positive Duration. Fix: pass e.g. Duration.days(7)."],
        'line',
      );
    }
    this.#brokers = brokers;
    this.#kafka = options;
    this.#pollers = options.provisionedPollers === false ? undefined : (options.provisionedPollers ?? KAFKA_DEFAULT_POLLERS);
  }

  override get reportBatchItemFailures(): boolean {
    return this.#kafka.reportBatchItemFailures ?? this.#pollers !== undefined;
  }

  /** Kafka tells the handler whether the mapping reads its partial batch responses; every other source always does. */
  override environment(): Record<string, string> {
    return { ...super.environment(), [INBOX_ENV.REPORT_BATCH_ITEM_FAILURES]: String(this.reportBatchItemFailures) };
  }

  protected override get takesErrorHandling(): boolean {
    return this.#pollers !== undefined;
  }

  protected attachStream(target: SourceTarget, settings: StreamSettings): Omit<AttachedSource, 'deadLetterQueue'> {
    const kafka = this.#kafka;
    const fn = target.fn;
    const consumerGroupId = kafka.consumerGroupId ?? target.consumerName;
    // A topic runs one batch per partition at a time: its options type has no parallelizationFactor, and none reaches the mapping.
    const { parallelizationFactor: _none, ...common } = streamEventSourceProps(settings, {
      pollers: this.#pollers,
      reportBatchItemFailures: this.reportBatchItemFailures,
    });
    let eventSource: lambda.IEventSource;
    if ('clusterArn' in this.#brokers) {
      eventSource = new MskEventSource({
        ...common,
        clusterArn: this.#brokers.clusterArn,
        topic: kafka.topic,
        consumerGroupId,
        secret: kafka.secret,
      });
    } else {
      eventSource = new SelfManagedKafkaEventSource({
        ...common,
        bootstrapServers: [...this.#brokers.bootstrapServers],
        topic: kafka.topic,
        consumerGroupId,
        ...(kafka.secret === undefined ? {} : { secret: kafka.secret }),
        ...(kafka.authenticationMethod === undefined ? {} : { authenticationMethod: kafka.authenticationMethod }),
        ...(kafka.rootCACertificate === undefined ? {} : { rootCACertificate: kafka.rootCACertificate }),
        ...(kafka.vpc === undefined ? {} : { vpc: kafka.vpc }),
        ...(kafka.vpcSubnets === undefined ? {} : { vpcSubnets: kafka.vpcSubnets }),
        ...(kafka.securityGroup === undefined ? {} : { securityGroup: kafka.securityGroup }),
      });
      // Lambda reaches brokers in a VPC through network interfaces it creates there with the function's role.
      if (kafka.vpc !== undefined) grantNetworkInterfaces(fn);
    }
    fn.addEventSource(eventSource);
    return {
      eventSource,
      kafkaConsumerGroupId: consumerGroupId,
      redeliveryWindowSeconds: () => durationSeconds(kafka.topicRetention),
      violations: () => [],
    };
  }
}

interface MskEventSourceProps {
  readonly clusterArn: string;
  readonly topic: string;
  readonly consumerGroupId: string;
  readonly secret: secretsmanager.ISecret | undefined;
  readonly batchSize: number;
  readonly startingPosition: lambda.StartingPosition;
  readonly startingPositionTimestamp?: number;
  readonly maxBatchingWindow?: Duration;
  readonly provisionedPollerConfig?: ProvisionedPollerConfig;
  readonly reportBatchItemFailures: boolean;
  readonly bisectBatchOnError?: boolean;
  readonly retryAttempts?: number;
  readonly maxRecordAge?: Duration;
  readonly onFailure: lambda.IEventSourceDlq;
}

/**
 * An MSK topic as an event source, like CDK's ManagedKafkaEventSource but without the AWS managed policy it
 * attaches: the role may describe this cluster, manage the network interfaces the mapping needs, and (with IAM
 * access control) read this topic in this consumer group, nothing more.
 */
class MskEventSource implements lambda.IEventSource {
  constructor(private readonly props: MskEventSourceProps) {}

  bind(target: lambda.IFunction): void {
    const { clusterArn, topic, consumerGroupId, secret, ...options } = this.props;
    target.addEventSourceMapping(`KafkaEventSource:${topic}`, {
      ...options,
      eventSourceArn: clusterArn,
      kafkaTopic: topic,
      kafkaConsumerGroupId: consumerGroupId,
      ...(secret === undefined
        ? {}
        : { sourceAccessConfigurations: [{ type: lambda.SourceAccessConfigurationType.SASL_SCRAM_512_AUTH, uri: secret.secretArn }] }),
    });
    // Lambda needs one of DescribeCluster and DescribeClusterV2; V2 also covers MSK Serverless
    // (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-permissions.html).
    target.addToRolePolicy(new iam.PolicyStatement({ actions: ['kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'], resources: [clusterArn] }));
    grantNetworkInterfaces(target);
    if (secret !== undefined) {
      secret.grantRead(target);
      return;
    }
    // IAM access control: connect to this cluster, read this topic, commit offsets of this group.
    target.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration'], resources: [clusterArn] }),
    );
    target.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'], resources: [clusterChildArn(clusterArn, 'topic', topic)] }),
    );
    target.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['kafka-cluster:AlterGroup', 'kafka-cluster:DescribeGroup'],
        resources: [clusterChildArn(clusterArn, 'group', consumerGroupId)],
      }),
    );
  }
}

/** `arn:...:cluster/<name>/<uuid>` to `arn:...:<kind>/<name>/<uuid>/<child>`, for a literal ARN or a token. */
function clusterChildArn(clusterArn: string, kind: 'topic' | 'group', child: string): string {
  if (!Token.isUnresolved(clusterArn)) return `${clusterArn.replace(':cluster/', `:${kind}/`)}/${child}`;
  const part = (index: number) => Fn.select(index, Fn.split(':cluster/', clusterArn));
  return Fn.join('', [part(0), `:${kind}/`, part(1), `/${child}`]);
}

/**
 * The event source mapping creates and removes network interfaces in the brokers' VPC with the function's role.
 * These EC2 actions take no resource narrower than `*` for the describe calls, and the interfaces' ids and subnets
 * are chosen by Lambda at run time.
 */
function grantNetworkInterfaces(target: lambda.IFunction): void {
  target.addToRolePolicy(
    new iam.PolicyStatement({
      actions: [
        'ec2:CreateNetworkInterface',
        'ec2:DeleteNetworkInterface',
        'ec2:DescribeNetworkInterfaces',
        'ec2:DescribeSecurityGroups',
        'ec2:DescribeSubnets',
        'ec2:DescribeVpcs',
      ],
      resources: ['*'],
    }),
  );
  if (target.role !== undefined) {
    Validations.of(target.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "Lambda's Kafka event source mapping creates, describes and deletes network interfaces in the brokers' VPC with the " +
        "function's role (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-permissions.html); EC2's Describe* calls take no " +
        'narrower resource and the interfaces are chosen by Lambda at run time. The role may do nothing else in EC2.',
    });
  }
}
