import type { DynamoDBRecord } from 'aws-lambda';
import { DynamoDbEventSource } from '../streams/dynamodb/event-source.js';
import { DynamoDbModel } from '../streams/dynamodb/model.js';
import { LANES } from './stream.js';
import type { StreamLog } from './stream.js';

/** A DynamoDB table's stream of four shards on a fresh model: one item per lane, rewritten by each of its records. */
export function dynamoDbStream(partitionKey: string): StreamLog {
  const model = new DynamoDbModel();
  // One item per lane: its changes stay on one shard, in order.
  model.createTable('items', { partitionKey, shardCount: LANES });
  return {
    // A retried PutItem of the same item writes no stream record.
    resends: false,
    put: ({ lane, body }) => {
      if (typeof body !== 'object')
        throw new TypeError(`runStreamScenario: on dynamodb, message() must give an object body (the item); got ${JSON.stringify(body)}.`);
      model.putItem('items', { [partitionKey]: lane, ...(body as Record<string, never>) });
    },
    eventSource: (handler, options) =>
      new DynamoDbEventSource({ model, table: 'items', startingPosition: 'TRIM_HORIZON', ...options, handler } as never) as never,
    recordId: (record) => `${(record as DynamoDBRecord).dynamodb?.SequenceNumber}`,
  };
}
