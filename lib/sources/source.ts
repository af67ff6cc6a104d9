import type { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as rds from 'aws-cdk-lib/aws-rds';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct, IConstruct } from 'constructs';
import { durationSeconds } from '../invariants.js';
import type { InvariantViolation, RedeliveryWindowSource } from '../invariants.js';
import { mappingViolations } from './stream-invariants.js';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

/**
 * What a consumer reads (InboxConsumer's and InboxDsqlConsumer's `source`), made by {@link InboxSources}: an SQS
 * queue, a Kinesis stream, a DynamoDB table's stream or a Kafka topic, with the settings of that source and no other.
 * It describes the event source; each consumer it is given to binds its own.
 *
 * @example
 * new InboxConsumer(this, 'Worker', { database, source: InboxSources.sqs(queue.queue), consumerName: 'orders', entry: 'src/worker.ts' });
 */
export interface InboxSource {
  /** What it reads: the handler's `INBOX_SOURCE` and its metrics' `source` dimension. */
  readonly kind: 'sqs' | 'kinesis' | 'dynamodb' | 'kafka';
}

/** The sources a consumer reads (named for the package's own code; {@link InboxSource.kind} spells them out). */
export type InboxSourceKind = InboxSource['kind'];

/** What a source needs of the consumer it is bound to. */
export interface SourceTarget {
  /** The consumer: the scope of what the source creates (a stream's on-failure queue). */
  readonly consumer: Construct;
  /** The consumer as errors name it: `InboxConsumer App/Worker`. */
  readonly subject: string;
  readonly fn: lambda.Function;
  readonly consumerName: string;
  readonly timeout: Duration;
  /**
   * The inbox's Aurora cluster, whose capacity bounds the connections SQS provisioned pollers may need; none on
   * Aurora DSQL, which has no instance size to bound them.
   */
  readonly cluster?: rds.IDatabaseCluster | undefined;
}

/** What a source adds to its consumer's function: its event source, and what it knows about its records. */
export interface AttachedSource {
  readonly eventSource: lambda.IEventSource;
  /** Where records that fail past the retries go, when it is a queue (alarmed): SQS's dead-letter queue, or a stream's on-failure queue. */
  readonly deadLetterQueue?: sqs.IQueue | undefined;
  /** The Kafka consumer group the mapping joins. */
  readonly kafkaConsumerGroupId?: string | undefined;
  /** The longest time a record can still be delivered after it was written, in seconds; `undefined` for a token. */
  redeliveryWindowSeconds(): number | undefined;
  /** The source's own invariants (its queue's, its pollers'), checked at synth. */
  violations(): InvariantViolation[];
}

/** A source bound to its consumer's function: what the consumer exposes, and what is checked at synth. */
export interface BoundSource extends AttachedSource {
  /** The one event source mapping of the function (the invariants read it at synth, escape hatches included). */
  readonly eventSourceMapping: lambda.CfnEventSourceMapping;
}

/**
 * Every source {@link InboxSources} makes: what the handler is told before its function exists, and how it binds to
 * that function once it does. One object may be given to several consumers: each binds its own event source.
 */
export abstract class SourceBinder implements InboxSource {
  abstract readonly kind: InboxSourceKind;
  /** How the redelivery window is made up, and how to shorten it: for the cleanup's retention check. */
  abstract readonly window: RedeliveryWindowSource;
  /** The queue it reads, for the consumer to expose. */
  declare readonly queue?: sqs.IQueue | undefined;
  /** The Kinesis stream it reads. */
  declare readonly stream?: kinesis.IStream | undefined;
  /** The DynamoDB table whose stream it reads. */
  declare readonly table?: dynamodb.ITable | undefined;

  /** Whether the handler reports failed records in its response: every source does, Kafka on demand does not. */
  get reportBatchItemFailures(): boolean {
    return true;
  }

  /** What the handler reads about its source: `INBOX_SOURCE`, and for Kafka `INBOX_REPORT_BATCH_ITEM_FAILURES`. */
  environment(): Record<string, string> {
    return { [INBOX_ENV.SOURCE]: this.kind };
  }

  /**
   * Adds the event source to the consumer's function. Its invariants, and those of the mapping as synthesized, are
   * checked at synth, not now, so that later changes (escape hatches on the queue or the mapping) are seen too.
   */
  bind(target: SourceTarget): BoundSource {
    const attached = this.attach(target);
    const eventSourceMapping = mappingOf(target.fn);
    return {
      eventSource: attached.eventSource,
      deadLetterQueue: attached.deadLetterQueue,
      kafkaConsumerGroupId: attached.kafkaConsumerGroupId,
      eventSourceMapping,
      redeliveryWindowSeconds: () => attached.redeliveryWindowSeconds(),
      violations: () => [
        ...attached.violations(),
        ...mappingViolations({
          source: this.kind,
          mapping: eventSourceMapping,
          handlerReports: this.reportBatchItemFailures,
          redeliveryWindowSeconds: attached.redeliveryWindowSeconds(),
          timeoutSeconds: durationSeconds(target.timeout),
          recordSeconds: this.recordSeconds,
        }),
      ],
    };
  }

  /** The least time one record takes, for the check that a batch of one shard fits the timeout; none for SQS. */
  protected get recordSeconds(): number | undefined {
    return undefined;
  }

  /** Creates the event source and adds it to `target.fn`. */
  protected abstract attach(target: SourceTarget): AttachedSource;
}

/** The source a consumer was given, refused with the fix unless {@link InboxSources} made it. */
export function sourceBinder(subject: string, source: InboxSource | undefined): SourceBinder {
  if (source instanceof SourceBinder) return source;
  throw InboxConstructError.of(
    subject,
    [
      `\`source\` ${source === undefined ? 'is missing' : 'was not made by InboxSources'}: a consumer reads one source, made with its settings. ` +
        'Fix: pass e.g. `source: InboxSources.sqs(queue)`, `InboxSources.kinesis(stream)`, `InboxSources.dynamoDb(table)`, ' +
        '`InboxSources.msk(clusterArn, { topic, topicRetention })` or `InboxSources.selfManagedKafka(bootstrapServers, { topic, topicRetention })`.',
    ],
    'line',
  );
}

/** What makes up the redelivery window of a source a consumer accepted, and how to shorten it. */
export function redeliveryWindowSource(source: InboxSource): RedeliveryWindowSource {
  return sourceBinder('InboxCleanup', source).window;
}

/** The one event source mapping of a consumer's function. */
export function mappingOf(fn: IConstruct): lambda.CfnEventSourceMapping {
  const mappings = fn.node.findAll().filter((c): c is lambda.CfnEventSourceMapping => c instanceof lambda.CfnEventSourceMapping);
  if (mappings.length !== 1) {
    throw InboxConstructError.of(`InboxConsumer ${fn.node.path}`, [`expected one event source mapping on the function, found ${mappings.length}.`], 'line');
  }
  return mappings[0]!;
}
