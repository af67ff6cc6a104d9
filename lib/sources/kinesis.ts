import { Duration, Token } from 'aws-cdk-lib';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { KinesisEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { durationSeconds } from '../invariants.js';
import type { AttachedSource, SourceTarget } from './source.js';
import { StreamSource, streamEventSourceProps } from './stream.js';
import type { InboxStreamSourceOptions, StreamSettings } from './stream.js';

/** Kinesis keeps records 24 hours unless the stream says otherwise, and at most 8760 hours (365 days). */
const KINESIS_DEFAULT_RETENTION_HOURS = 24;
export const KINESIS_MAX_RETENTION_SECONDS = 8760 * 3600;

/**
 * A Kinesis data stream as the consumer's source: partial batch responses (the runtime names the first failed
 * sequence number), bisect on error, bounded retries and an on-failure destination.
 */
export class KinesisSource extends StreamSource {
  readonly kind = 'kinesis' as const;
  readonly window = {
    description: "the Kinesis stream's retention period: a replay from the trim horizon delivers every record the stream still holds",
    shorten: "shorten the stream's `retentionPeriod` (or pass the source's real `redeliveryWindow` if the stream is imported)",
  };
  override readonly stream: kinesis.IStream;

  constructor(stream: kinesis.IStream, options: InboxStreamSourceOptions) {
    super(options);
    this.stream = stream;
  }

  protected attachStream(target: SourceTarget, settings: StreamSettings): Omit<AttachedSource, 'deadLetterQueue'> {
    const eventSource = new KinesisEventSource(this.stream, streamEventSourceProps(settings));
    target.fn.addEventSource(eventSource);
    const given = this.options.redeliveryWindow;
    return {
      eventSource,
      redeliveryWindowSeconds: () => (given !== undefined ? durationSeconds(given) : kinesisRetentionSeconds(this.stream)),
      violations: () => [],
    };
  }
}

/**
 * The stream's retention in seconds, read from its CloudFormation resource when the stream is defined in this app;
 * Kinesis' maximum (365 days) for an imported stream; `undefined` for a token.
 */
export function kinesisRetentionSeconds(stream: kinesis.IStream): number | undefined {
  if (!(stream instanceof kinesis.Stream)) return KINESIS_MAX_RETENTION_SECONDS;
  const hours = (stream.node.defaultChild as kinesis.CfnStream).retentionPeriodHours ?? KINESIS_DEFAULT_RETENTION_HOURS;
  return Token.isUnresolved(hours) ? undefined : Duration.hours(hours).toSeconds();
}
