import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDbInbox } from '../../../lambda/inbox/index.js';
import type { DynamoDbChange, DynamoDbInboxOptions, InboxMessage } from '../../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { dynamoDbEvent, dynamoDbRecord } from '../../support/streams.js';
import { parkedMessages } from '../../../lambda/inbox/parked/parking.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('dynamodb');
  await db.query('CREATE TABLE public.audit (seq bigserial PRIMARY KEY, consumer text NOT NULL, item_id text NOT NULL, event_name text NOT NULL)');
});
afterAll(async () => db.close());

let run = 0;
function make(extra: Partial<DynamoDbInboxOptions> = {}) {
  const consumer = `dynamodb-${run++}`;
  const seen: InboxMessage<DynamoDbChange, unknown>[] = [];
  const handler = dynamoDbInbox({
    consumer,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    apply: async (tx, message) => {
      seen.push(message);
      await tx.execute('INSERT INTO public.audit (consumer, item_id, event_name) VALUES (:consumer, :id, :event)', {
        consumer,
        id: String(message.body.keys.id),
        event: message.body.eventName,
      });
      if (message.body.newImage?.fail === true) throw new Error('fails');
    },
    ...extra,
  });
  const rows = async () =>
    (await db.query<{ item_id: string; event_name: string }>('SELECT item_id, event_name FROM public.audit WHERE consumer = $1 ORDER BY seq', [consumer])).map(
      (r) => `${r.event_name} ${r.item_id}`,
    );
  return { handler, seen, rows };
}

describe('dynamoDbInbox', () => {
  it('hands apply the change with its images unmarshalled, keyed by eventID, once', async () => {
    const { handler, seen, rows } = make();
    const records = [
      dynamoDbRecord({ id: 'o-1', newImage: { total: 12.5, tags: ['a', 'b'], address: { city: 'Lyon' }, paid: true, note: null } }),
      dynamoDbRecord({ id: 'o-1', eventName: 'MODIFY', newImage: { total: 13 }, oldImage: { total: 12.5 } }),
      dynamoDbRecord({ id: 'o-1', eventName: 'REMOVE', oldImage: { total: 13 } }),
    ];
    expect(await handler(dynamoDbEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(seen[0]!.body).toEqual({
      eventName: 'INSERT',
      keys: { id: 'o-1' },
      newImage: { id: 'o-1', total: 12.5, tags: ['a', 'b'], address: { city: 'Lyon' }, paid: true, note: null },
      oldImage: undefined,
    });
    expect(seen[1]!.body).toMatchObject({ eventName: 'MODIFY', newImage: { total: 13 }, oldImage: { total: 12.5 } });
    expect(seen[2]!.body).toMatchObject({ eventName: 'REMOVE', newImage: undefined, oldImage: { id: 'o-1', total: 13 } });
    expect(seen.map((m) => m.key)).toEqual(records.map((r) => r.eventID));
    expect(seen.map((m) => m.id)).toEqual(records.map((r) => r.dynamodb!.SequenceNumber));
    await handler(dynamoDbEvent(records), lambdaContext());
    expect(await rows()).toEqual(['INSERT o-1', 'MODIFY o-1', 'REMOVE o-1']);
  });

  it('reports the first failed sequence number; nothing after it starts', async () => {
    const { handler, rows } = make();
    const records = [dynamoDbRecord({ id: 'a' }), dynamoDbRecord({ id: 'b', newImage: { fail: true } }), dynamoDbRecord({ id: 'c' })];
    expect(await handler(dynamoDbEvent(records), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.dynamodb!.SequenceNumber }] });
    expect(await rows()).toEqual(['INSERT a']);
  });

  it('refuses a number a JavaScript number cannot hold, naming the fix; with park it is parked', async () => {
    const { handler, rows } = make({ onPermanentError: 'park' });
    const big = dynamoDbRecord({ id: 'big' });
    big.dynamodb!.NewImage!.amount = { N: '123456789012345678901234567890' };
    expect(await handler(dynamoDbEvent([big, dynamoDbRecord({ id: 'next' })]), lambdaContext())).toEqual({ batchItemFailures: [] });
    const [parked] = await parkedMessages(handler).list();
    expect(parked!.errorMessage).toMatch(
      /attribute amount is a number of 30 characters that a JavaScript number cannot hold exactly; give dynamoDbInbox a `parse`/,
    );
    expect(await rows()).toEqual(['INSERT next']);
  });

  it('takes a producer key from a field of the unmarshalled change', async () => {
    const { handler, seen, rows } = make({ key: { field: 'newImage.requestId' } });
    await handler(dynamoDbEvent([dynamoDbRecord({ id: 'f-1', newImage: { requestId: 'req-7' } })]), lambdaContext());
    // The same request written again as another item: another change, the same producer key.
    await handler(dynamoDbEvent([dynamoDbRecord({ id: 'f-1', newImage: { requestId: 'req-7' } })]), lambdaContext());
    expect(seen.map((m) => m.key)).toEqual(['req-7']);
    expect(await rows()).toEqual(['INSERT f-1']);
  });

  it('names the number the default parse refused when a field key cannot be read, not a body that is not JSON', async () => {
    // `{ field }` walks the change as the default parse unmarshals it, so the number refuses the key too.
    const logger = recordingLogger();
    const { handler, rows } = make({ key: { field: 'keys.id' }, logger });
    const big = dynamoDbRecord({ id: 'big' });
    big.dynamodb!.NewImage!.amount = { N: '12345678901234567890123' };

    expect(await handler(dynamoDbEvent([big]), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: big.dynamodb!.SequenceNumber }] });

    const [line] = logger.lines.filter((entry) => entry.message.startsWith('record failed'));
    expect((line!.extra[0] as { error: unknown }).error).toEqual({
      name: 'KeyError',
      message:
        'key field "keys.id": the body cannot be read for it (attribute amount is a number of 23 characters that a JavaScript number cannot hold exactly; ' +
        'give dynamoDbInbox a `parse` that reads record.dynamodb.NewImage itself (e.g. as BigInt))',
    });
    expect(await rows()).toEqual([]);
  });

  it('applies in statementBatch a change whose parse holds a BigInt, as the refusal of a large number advises', async () => {
    const consumer = `dynamodb-bigint-${run++}`;
    const logger = recordingLogger();
    const handler = dynamoDbInbox({
      consumer,
      database: db.target,
      logger,
      metrics: recordingMetrics(),
      parse: (body) => {
        const change = JSON.parse(body);
        return { amount: change.NewImage?.amount?.N === undefined ? null : BigInt(change.NewImage.amount.N) };
      },
      statementBatch: {
        sql: "INSERT INTO public.audit (consumer, item_id, event_name) SELECT :consumer, sqs_message_id, 'INSERT' FROM claimed",
        params: () => ({ consumer }),
      },
    });
    const plain = dynamoDbRecord({ id: 'a' });
    const big = dynamoDbRecord({ id: 'big' });
    big.dynamodb!.NewImage!.amount = { N: '12345678901234567890123' };

    expect(await handler(dynamoDbEvent([plain, big]), lambdaContext())).toEqual({ batchItemFailures: [] });

    const applied = await db.query('SELECT item_id FROM public.audit WHERE consumer = $1 ORDER BY item_id', [consumer]);
    expect(applied.map((row) => row.item_id)).toEqual([plain.dynamodb!.SequenceNumber, big.dynamodb!.SequenceNumber]);
    expect(logger.lines.filter((line) => line.message.startsWith('record'))).toEqual([]);
  });

  it('replays a parked change with the record it was parked from', async () => {
    let failing = true;
    const applied: string[] = [];
    const handler = dynamoDbInbox({
      consumer: `dynamodb-replay-${run++}`,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async (_, message) => {
        if (failing) throw new (await import('../../../lambda/inbox/index.js')).PermanentError('not yet');
        applied.push(`${message.body.eventName} ${String(message.body.keys.id)} ${message.id}`);
      },
    });
    const record = dynamoDbRecord({ id: 'r-1' });
    await handler(dynamoDbEvent([record]), lambdaContext());
    failing = false;
    const [parked] = await parkedMessages(handler).list();
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(applied).toEqual([`INSERT r-1 ${record.dynamodb!.SequenceNumber}`]);
  });
});
