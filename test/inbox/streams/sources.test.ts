import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDbInbox, kafkaInbox } from '../../../lambda/inbox/index.js';
import type { DynamoDbChange, InboxMessage } from '../../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { dynamoDbEvent, dynamoDbRecord } from '../../support/streams.js';

// What each stream source makes of the records Lambda hands it, at the edges the source tests leave out:
// every attribute type of a DynamoDB image, the paths its errors name, and the wording of refusals.
let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('sources');
});
afterAll(async () => db.close());

let run = 0;
function dynamoDb() {
  const seen: InboxMessage<DynamoDbChange, unknown>[] = [];
  const logger = recordingLogger();
  const handler = dynamoDbInbox({
    consumer: `sources-dynamodb-${run++}`,
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    apply: async (_, message) => void seen.push(message),
  });
  /** What the failed records' log lines say. */
  const failures = () =>
    logger.lines.filter((line) => line.message.startsWith('record failed')).map((line) => (line.extra[0] as { error: { message: string } }).error.message);
  return { handler, seen, failures };
}

/** A DynamoDB Streams record whose new image holds `attributes` as DynamoDB marshalled them. */
function withAttributes(id: string, attributes: Record<string, unknown>) {
  const record = dynamoDbRecord({ id });
  Object.assign(record.dynamodb!.NewImage!, attributes);
  return record;
}

describe('dynamoDbInbox: the images', () => {
  it('unmarshals string, number and binary sets to arrays', async () => {
    const { handler, seen } = dynamoDb();
    const record = withAttributes('sets', {
      tags: { SS: ['red', 'blue'] },
      sizes: { NS: ['1', '2.5', '-3'] },
      blobs: { BS: [Buffer.from('hi').toString('base64'), Buffer.from('yo').toString('base64')] },
      raw: { B: Buffer.from('bytes').toString('base64') },
    });
    expect(await handler(dynamoDbEvent([record]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen[0]!.body.newImage).toEqual({
      id: 'sets',
      tags: ['red', 'blue'],
      sizes: [1, 2.5, -3],
      blobs: [new Uint8Array(Buffer.from('hi')), new Uint8Array(Buffer.from('yo'))],
      raw: new Uint8Array(Buffer.from('bytes')),
    });
  });

  it.each([
    // The path and the number's length, never its digits: the item's values stay out of the log.
    ['a map', { address: { M: { zip: { N: '123456789012345678901' } } } }, 'attribute address.zip is a number of 21 characters'],
    ['a list', { items: { L: [{ S: 'fine' }, { N: '98765432109876543210' }] } }, 'attribute items[1] is a number of 20 characters'],
    ['a number set', { sizes: { NS: ['1', '11111111111111111111111'] } }, 'attribute sizes[1] is a number of 23 characters'],
    ['a map in a list', { lines: { L: [{ M: { qty: { N: '1e400' } } }] } }, 'attribute lines[0].qty is a number of 5 characters'],
  ])('names the path of a number it cannot hold inside %s, and fails that record alone', async (_, attributes, message) => {
    const { handler, seen, failures } = dynamoDb();
    const bad = withAttributes('bad', attributes);
    const good = dynamoDbRecord({ id: 'good' });
    // One shard: the failed record is the restart point, and the record after it does not start.
    expect(await handler(dynamoDbEvent([good, bad]), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: bad.dynamodb!.SequenceNumber }] });
    expect(seen.map((m) => m.body.keys.id)).toEqual(['good']);
    expect(failures()).toEqual([
      `the body could not be parsed: ${message} that a JavaScript number cannot hold exactly; give dynamoDbInbox a \`parse\` that reads record.dynamodb.NewImage itself (e.g. as BigInt)`,
    ]);
  });

  it('refuses an attribute of a type DynamoDB Streams never sends, naming it but not what it holds', async () => {
    const { handler, failures } = dynamoDb();
    const odd = withAttributes('odd', { when: { X: '2026-11-30' } });
    expect(await handler(dynamoDbEvent([odd]), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: odd.dynamodb!.SequenceNumber }] });
    expect(failures()).toEqual(['the body could not be parsed: attribute when has no type DynamoDB Streams sends (S, N, B, BOOL, NULL, M, L, SS, NS, BS)']);
  });
});

describe('kafkaInbox: refusals', () => {
  it('names both Kafka event sources it takes when an event names another', async () => {
    const handler = kafkaInbox({
      consumer: `sources-kafka-${run++}`,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      reportBatchItemFailures: true,
      apply: async () => {},
    });
    await expect(handler({ eventSource: 'aws:sqs', records: {} } as never, lambdaContext())).rejects.toThrow(
      'kafkaInbox() handles Kafka events (Amazon MSK or self-managed); eventSource is "aws:sqs" (an SQS queue), not "aws:kafka" or "SelfManagedKafka". ' +
        "Check the function's trigger: it must be an MSK or self-managed Kafka event source mapping.",
    );
  });
});
