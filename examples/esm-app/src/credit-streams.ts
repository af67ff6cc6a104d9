// src/credit-streams.ts: the same ledger fed by a Kinesis stream, a DynamoDB table's stream or a Kafka topic
import { dynamoDbInbox, kafkaInbox, kinesisInbox } from 'sqs-inbox';
import { applyCredit } from './credits.js';
import type { Credit } from './credits.js';

// Each record's key: a field of the body, the new image's field, or the producer's header.
export const kinesisHandler = kinesisInbox<Credit>({ key: { field: 'creditId' }, apply: (tx, { body }) => applyCredit(tx, body) });

export const dynamoDbHandler = dynamoDbInbox({
  key: { field: 'newImage.creditId' },
  apply: async (tx, { body }) => {
    if (body.newImage) await applyCredit(tx, body.newImage as unknown as Credit);
  },
});

export const kafkaHandler = kafkaInbox<Credit>({ key: { header: 'idempotency-key' }, apply: (tx, { body }) => applyCredit(tx, body) });
