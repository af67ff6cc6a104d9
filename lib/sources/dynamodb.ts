import { Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { durationSeconds } from '../invariants.js';
import type { AttachedSource, SourceTarget } from './source.js';
import { StreamSource, streamEventSourceProps } from './stream.js';
import type { InboxStreamSourceOptions, StreamSettings } from './stream.js';
import { InboxConstructError } from '../errors.js';

/** DynamoDB Streams keeps stream records 24 hours; it cannot be changed. */
export const DYNAMODB_STREAM_RETENTION_SECONDS = 24 * 3600;

/**
 * A DynamoDB table's stream as the consumer's source: partial batch responses, bisect on error, bounded retries
 * and an on-failure destination. The table must have a stream.
 */
export class DynamoDbSource extends StreamSource {
  readonly kind = 'dynamodb' as const;
  readonly window = {
    description: 'DynamoDB Streams keeps stream records 24 hours: a replay from the trim horizon delivers every one of them',
    shorten: "keep the retention above 24 hours (DynamoDB Streams' retention cannot be changed)",
  };
  override readonly table: dynamodb.ITable;

  constructor(table: dynamodb.ITable, options: Omit<InboxStreamSourceOptions, 'startingPositionTimestamp'>) {
    super(options);
    if (table.tableStreamArn === undefined) {
      throw InboxConstructError.of(
        'InboxSources.dynamoDb',
        [
          `the table ${table.node.path} has no stream. Fix: create it with ` +
            '`stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES` (TableV2: `dynamoStream`), or import it with its `tableStreamArn`.',
        ],
        'line',
      );
    }
    this.table = table;
  }

  protected attachStream(target: SourceTarget, settings: StreamSettings): Omit<AttachedSource, 'deadLetterQueue'> {
    const fn = target.fn;
    // DynamoDB Streams cannot start at a timestamp: its options type has none, and none reaches the mapping.
    const { startingPositionTimestamp: _none, ...props } = streamEventSourceProps(settings);
    const eventSource = new DynamoEventSource(this.table, props);
    fn.addEventSource(eventSource);
    if (fn.role !== undefined) {
      Validations.of(fn.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          "CDK's DynamoEventSource grants dynamodb:ListStreams on *, as the mapping needs: ListStreams takes no resource " +
          '(https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html) and returns stream ' +
          "ARNs only; reading records is granted on this table's stream alone.",
      });
    }
    const given = this.options.redeliveryWindow;
    return {
      eventSource,
      redeliveryWindowSeconds: () => (given !== undefined ? durationSeconds(given) : DYNAMODB_STREAM_RETENTION_SECONDS),
      violations: () => [],
    };
  }
}
