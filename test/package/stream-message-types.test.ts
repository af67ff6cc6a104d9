// Type tests, checked by `tsc --noEmit -p .` (npm test): an `apply` written as its own function, as the README
// teaches for SQS, fits a stream consumer when its message names that stream's record from aws-lambda (which
// sqs-inbox installs, as @types/aws-lambda), as docs/streams.md says.
import type { DynamoDBRecord, KinesisStreamRecord, MSKRecord, SelfManagedKafkaRecord } from 'aws-lambda';
import { describe, expectTypeOf, it } from 'vitest';
import type { DynamoDbInboxOptions, InboxMessage, InboxTransaction, KafkaInboxOptions, KinesisInboxOptions } from '../../lambda/inbox/index.js';
import type { DynamoDbChange } from '../../lambda/inbox/sources/dynamodb.js';

interface Credit {
  readonly creditId: string;
  readonly cents: number;
}

async function applyKinesisCredit(tx: InboxTransaction, message: InboxMessage<Credit, KinesisStreamRecord>): Promise<void> {
  await tx.execute('INSERT INTO credits (credit_id, shard) VALUES (:id, :shard)', { id: message.body.creditId, shard: message.record.eventID });
}
async function applyChange(tx: InboxTransaction, message: InboxMessage<DynamoDbChange, DynamoDBRecord>): Promise<void> {
  await tx.execute('INSERT INTO changes (event_id) VALUES (:id)', { id: message.record.eventID ?? null });
}
async function applyKafkaCredit(_tx: InboxTransaction, _message: InboxMessage<Credit, MSKRecord | SelfManagedKafkaRecord>): Promise<void> {}
/** The second type parameter left to its default: an SQS message. */
async function applySqsTyped(_tx: InboxTransaction, _message: InboxMessage<Credit>): Promise<void> {}

type Apply<Options> = NonNullable<Options extends { readonly apply?: infer A } ? A : never>;

describe("a stream consumer's apply written as its own function", () => {
  it("type-checks with the stream's record from aws-lambda as InboxMessage's second type parameter, and not with the SQS default", () => {
    expectTypeOf(applyKinesisCredit).toExtend<Apply<KinesisInboxOptions<Credit>>>();
    expectTypeOf(applyChange).toExtend<Apply<DynamoDbInboxOptions>>();
    expectTypeOf(applyKafkaCredit).toExtend<Apply<KafkaInboxOptions<Credit>>>();
    expectTypeOf(applySqsTyped).not.toExtend<Apply<KinesisInboxOptions<Credit>>>();
  });
});
