import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDbInbox, kafkaInbox, kinesisInbox } from '../../../lambda/inbox/index.js';
import { PermanentError } from '../../../lambda/inbox/index.js';
import type { ConsumerOptions, InboxMessage } from '../../../lambda/inbox/index.js';
import type { KafkaRecord } from '../../../lambda/inbox/sources/kafka.js';
import { parkedMessages } from '../../../lambda/inbox/parked/parking.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { CURRENT, onTransport } from '../../support/transport.js';
import { dynamoDbEvent, dynamoDbRecord, kafkaEvent, kafkaRecord, kinesisEvent, kinesisRecord } from '../../support/streams.js';
import { seededBytes } from '../../support/seed.js';

// What a stream record carries, whatever it is: bytes that are not UTF-8 and as large as the stream takes,
// text PostgreSQL refuses (U+0000), a payload a log must not show, and a second record under the id of the
// first. Each is applied, or parked with its cause and handed back exactly by a replay, or failed with its
// permanent cause: never acknowledged and lost.

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('stream_payloads');
});
afterAll(async () => db.close());

/** One stream source: its handler, and records of it carrying given bytes. */
interface Source {
  readonly handler: (options: ConsumerOptions<any, any>) => (event: unknown, context: ReturnType<typeof lambdaContext>) => Promise<unknown>;
  readonly event: (records: unknown[]) => unknown;
  /** A record whose payload is `bytes` (Kinesis data, a Kafka value). */
  readonly record: (bytes: Buffer, offset?: number) => unknown;
  /** The base64 payload of a record as `apply` gets it. */
  readonly data: (raw: any) => string;
}

let offsets = 0;
const SOURCES: Record<'kinesis' | 'kafka', Source> = {
  kinesis: {
    handler: (options) => kinesisInbox(options) as never,
    event: (records) => kinesisEvent(records as KinesisStreamRecord[]),
    record: (bytes) => {
      const record = kinesisRecord();
      return { ...record, kinesis: { ...record.kinesis, data: bytes.toString('base64') } } satisfies KinesisStreamRecord;
    },
    data: (raw: KinesisStreamRecord) => raw.kinesis.data,
  },
  kafka: {
    handler: (options) => kafkaInbox({ ...options, reportBatchItemFailures: true }) as never,
    event: (records) => kafkaEvent(records as KafkaRecord[]),
    record: (bytes, offset = offsets++) => ({ ...kafkaRecord({ offset }), value: bytes.toString('base64') }) satisfies KafkaRecord,
    data: (raw: KafkaRecord) => raw.value,
  },
};

/** Modes whose replay runs the parked record's effect: a transaction, and a batch statement that reads no body. */
const MODES = {
  apply: (consumer: string, seen: string[]) => ({
    apply: async (_: unknown, message: InboxMessage<unknown, unknown>) => void seen.push(`${consumer}:${message.id}`),
  }),
  statementBatch: (consumer: string) => ({
    statementBatch: { sql: 'INSERT INTO public.stream_seen (consumer, id) SELECT :consumer, sqs_message_id FROM claimed', params: () => ({ consumer }) },
  }),
} as const;

let run = 0;
/**
 * A consumer of `source` in `mode` that parks: its parse refuses every payload that is not JSON until
 * `fix()`, after which it takes any payload, and keeps the record it was handed.
 */
function parking(source: Source, mode: keyof typeof MODES) {
  const consumer = `payloads-${run++}`;
  const seen: string[] = [];
  const parsed: unknown[] = [];
  const logger = recordingLogger();
  let strict = true;
  const handler = source.handler({
    consumer,
    database: db.target,
    logger,
    metrics: recordingMetrics(),
    onPermanentError: 'park',
    parse: (body: string, raw: unknown) => {
      if (strict) return JSON.parse(body) as unknown;
      parsed.push(raw);
      return 'taken';
    },
    ...MODES[mode](consumer, seen),
  });
  const applied = async () =>
    mode === 'apply'
      ? seen
      : (await db.query('SELECT consumer, id FROM public.stream_seen WHERE consumer = $1', [consumer])).map((r) => `${r.consumer}:${r.id}`);
  return { consumer, handler, logger, parsed, applied, fix: () => void (strict = false) };
}

beforeAll(async () => {
  await db.query('CREATE TABLE public.stream_seen (consumer text NOT NULL, id text NOT NULL)');
});

describe.each(Object.keys(SOURCES) as (keyof typeof SOURCES)[])('%s: a payload of bytes', (name) => {
  const source = SOURCES[name];

  it.each(Object.keys(MODES) as (keyof typeof MODES)[])('of 1 MiB that is not UTF-8 is parked once, as its bytes, and replayed exactly (%s)', async (mode) => {
    const { consumer, handler, parsed, applied, fix } = parking(source, mode);
    const bytes = seededBytes('a 1 MiB binary payload', 1024 * 1024);
    const record = source.record(bytes);

    expect(await handler(source.event([record]), lambdaContext())).toEqual({ batchItemFailures: [] });

    // Stored once: the payload column holds the bytes, the record beside it keeps no second copy.
    const [row] = await db.query('SELECT payload, length(attributes::text) AS attributes_length FROM inbox.parked_message WHERE consumer_name = $1', [
      consumer,
    ]);
    expect(Buffer.from(row!.payload).equals(bytes)).toBe(true);
    expect(row!.attributes_length).toBeLessThan(2000);
    const [parked] = await parkedMessages(handler).list();
    expect(Buffer.from(parked!.payload).equals(bytes)).toBe(true);

    fix();
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(parsed.map(source.data)).toEqual([source.data(record)]);
    expect(await applied()).toHaveLength(1);
  });

  it('that holds a secret and is not JSON never reaches a log line or the parked row', async () => {
    const { consumer, handler, logger } = parking(source, 'apply');
    await handler(source.event([source.record(Buffer.from('password=hunter2 and more'))]), lambdaContext());
    expect(JSON.stringify(logger.lines)).not.toContain('hunter2');
    const [row] = await db.query('SELECT error_message FROM inbox.parked_message WHERE consumer_name = $1', [consumer]);
    expect(row!.error_message).toBe('the body could not be parsed: not JSON: unexpected character at position 0 of 25');
  });
});

describe('kinesisInbox: two payloads under one key that differ only in a byte that is not UTF-8', () => {
  it('refuses the second as a key collision, where the hash of their decoded text (U+FFFD for both) took it for a duplicate', async () => {
    const consumer = `payloads-${run++}`;
    const seen: string[] = [];
    const handler = kinesisInbox({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      key: { field: 'key' },
      onPermanentError: 'park',
      apply: async (_, message) => void seen.push(message.id!),
    });
    const payload = (byte: number) => Buffer.concat([Buffer.from('{"key":"k","v":"'), Buffer.from([byte]), Buffer.from('"}')]);
    const [first, second] = [0xfe, 0xff].map((byte) => SOURCES.kinesis.record(payload(byte)) as KinesisStreamRecord);

    for (const record of [first!, second!]) expect(await handler(kinesisEvent([record]), lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(seen).toEqual([first!.kinesis.sequenceNumber]);
    const parked = await db.query('SELECT sqs_message_id, error_class FROM inbox.parked_message WHERE consumer_name = $1', [consumer]);
    expect(parked).toEqual([{ sqs_message_id: second!.kinesis.sequenceNumber, error_class: 'KeyCollisionError' }]);
  });
});

describe('kafkaInbox: the same topic-partition@offset twice, as a topic deleted and created again gives it', () => {
  it('parks both records: the second collides with the first one’s key and is stored beside it, never acknowledged and lost', async () => {
    const { consumer, handler } = parking(SOURCES.kafka, 'apply');
    const first = SOURCES.kafka.record(Buffer.from('first, not JSON'), 7);
    const second = SOURCES.kafka.record(Buffer.from('second, not JSON'), 7);

    expect(await handler(SOURCES.kafka.event([first]), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await handler(SOURCES.kafka.event([second]), lambdaContext())).toEqual({ batchItemFailures: [] });

    // Both reported parked: both must be in the table.
    expect(await db.query('SELECT error_class FROM inbox.parked_message WHERE consumer_name = $1 ORDER BY id', [consumer])).toEqual([
      { error_class: 'ParseError' },
      { error_class: 'KeyCollisionError' },
    ]);
    const rows = await db.query(
      "SELECT sqs_message_id, convert_from(payload, 'UTF8') AS payload, error_class, owns_claim FROM inbox.parked_message WHERE consumer_name = $1 ORDER BY id",
      [consumer],
    );
    expect(rows).toEqual([
      { sqs_message_id: 'orders-0@7', payload: 'first, not JSON', error_class: 'ParseError', owns_claim: true },
      { sqs_message_id: 'orders-0@7', payload: 'second, not JSON', error_class: 'KeyCollisionError', owns_claim: false },
    ]);
  });
});

describe('kafkaInbox: a value larger than one Data API request', () => {
  it('is parked over the wire; over the Data API it fails with its own error, and says why it could not be parked', async () => {
    const { consumer, handler, logger } = parking(SOURCES.kafka, 'apply');
    const bytes = seededBytes('a payload larger than a Data API request', 3.2 * 1024 * 1024);
    const record = SOURCES.kafka.record(bytes) as KafkaRecord;

    const response = await handler(SOURCES.kafka.event([record]), lambdaContext());

    expect(response).toEqual(
      onTransport({
        'data-api': { batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: record.offset } }] },
        wire: { batchItemFailures: [] },
      }),
    );
    if (CURRENT.protocol === 'data-api') {
      const [warning] = logger.lines.filter((line) => line.level === 'warn');
      expect(warning).toMatchObject({
        message: 'record failed, and could not be parked; Lambda will deliver it again',
        extra: [{ error: { name: 'ParseError' }, parkError: { name: 'DataApiError', message: expect.stringContaining('at most 4 MiB') } }],
      });
    }
    const stored = await db.query('SELECT octet_length(payload) AS bytes FROM inbox.parked_message WHERE consumer_name = $1', [consumer]);
    expect(stored).toEqual(onTransport({ 'data-api': [], wire: [{ bytes: bytes.length }] }));
  });
});

describe('dynamoDbInbox: a string holding U+0000 in an image', () => {
  it('is parked with its business rejection, and the replay hands back the very same string', async () => {
    let rejecting = true;
    const seen: unknown[] = [];
    const consumer = `payloads-ddb-${run++}`;
    const handler = dynamoDbInbox({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async (_, message) => {
        if (rejecting) throw new PermanentError(`note ${String(message.body.newImage?.note)} refused`);
        seen.push(message.body.newImage?.note, (message.record as DynamoDBRecord).dynamodb?.NewImage);
      },
    });
    const record = dynamoDbRecord({ id: 'nul', newImage: { note: 'a\u0000b\ud800' } });

    expect(await handler(dynamoDbEvent([record]), lambdaContext())).toEqual({ batchItemFailures: [] });

    const [row] = await db.query('SELECT error_message, attributes::text AS attributes FROM inbox.parked_message WHERE consumer_name = $1', [consumer]);
    expect(row!.error_message).toBe('note a\\u0000b\\ud800 refused');
    // The images are the payload: the record beside it keeps none of them.
    expect(row!.attributes).not.toContain('note');
    rejecting = false;
    const [parked] = await parkedMessages(handler).list();
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(seen).toEqual(['a\u0000b\ud800', record.dynamodb!.NewImage]);
  });
});

describe('a record Lambda would never send is parked whole, and its replay meets the same fault', () => {
  /** A handler that parks, whose `apply` is never reached. */
  function keeping(handler: (options: ConsumerOptions<any, any>) => any) {
    return {
      handler: handler({
        consumer: `payloads-whole-${run++}`,
        database: db.target,
        logger: recordingLogger(),
        metrics: recordingMetrics(),
        onPermanentError: 'park',
        apply: async () => {},
      }),
    };
  }

  it.each([
    ['without a kinesis object', (record: any) => void delete record.kinesis],
    ['with null data', (record: any) => void (record.kinesis.data = null)],
    ['with numeric data', (record: any) => void (record.kinesis.data = 42)],
  ])('kinesis: a record %s', async (_, edit) => {
    const { handler } = keeping((options) => kinesisInbox(options));
    const record = structuredClone(kinesisRecord()) as any;
    edit(record);
    expect(await handler(kinesisEvent([record]), lambdaContext())).toEqual({ batchItemFailures: [] });
    const [parked] = await parkedMessages(handler).list();
    expect(parked!.attributes).toEqual({ record });
    await expect(parkedMessages(handler).replay(parked!.id)).rejects.toThrow(/the body could not be parsed: not JSON: unexpected end of the text/);
  });

  it.each([
    ['no dynamodb object', ({ dynamodb: _, ...record }: any) => record],
    ['a null dynamodb', (record: any) => ({ ...record, dynamodb: null })],
    ['a string for dynamodb', (record: any) => ({ ...record, dynamodb: 'INSERT' })],
    ['nothing at all (a null record)', () => null],
  ])('dynamodb: a change with %s', async (_, edit) => {
    const { handler } = keeping((options) => dynamoDbInbox(options));
    const record = edit(dynamoDbRecord({ id: 'whole' }));
    expect(await handler(dynamoDbEvent([record]), lambdaContext())).toEqual({ batchItemFailures: [] });
    const [parked] = await parkedMessages(handler).list();
    expect(parked!.attributes).toEqual({ record });
    await expect(parkedMessages(handler).replay(parked!.id)).rejects.toThrow(
      /^the body could not be parsed: not JSON: unexpected end of the text at position 0 of 0$/,
    );
  });
});

describe('a stream record parked before the inbox kept its payload as bytes (migration 6)', () => {
  it.each(['kinesis', 'kafka'] as const)('%s: its replay hands back the record it kept whole, not its body text', async (name) => {
    const source = SOURCES[name];
    const { consumer, handler, parsed, fix } = parking(source, 'apply');
    // Bytes that are not UTF-8: the body text of such a row lost them; the record it kept has them.
    const record = source.record(Buffer.from([0xff, 0xfe, 0x00, 0x41]));
    await db.query(
      `INSERT INTO inbox.parked_message (consumer_name, sqs_message_id, message_key, body, attributes, error_class, error_message, attempt, owns_claim)
       VALUES ($1, 'old', 'old-key', $2, $3, 'ParseError', 'old', 1, true)`,
      [consumer, '\ufffd\ufffdA', JSON.stringify({ record })],
    );
    fix();
    const [parked] = await parkedMessages(handler).list();
    expect(await parkedMessages(handler).replay(parked!.id)).toBe('replayed');
    expect(parsed.map(source.data)).toEqual([source.data(record)]);
  });
});

describe('kafkaInbox: a tombstone in statementBatch', () => {
  it("reads as a body that IS NULL in claimed, as a record without a value's body is null", async () => {
    const consumer = `payloads-tombstone-${run++}`;
    const handler = kafkaInbox({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      reportBatchItemFailures: true,
      statementBatch: {
        sql: "INSERT INTO public.stream_seen (consumer, id) SELECT :consumer, CASE WHEN body IS NULL THEN 'tombstone' ELSE body::text END FROM claimed",
        params: () => ({ consumer }),
      },
    });
    const records = [kafkaRecord({ offset: offsets++, body: null }), kafkaRecord({ offset: offsets++, body: { id: 'p' } })];

    expect(await handler(kafkaEvent(records), lambdaContext())).toEqual({ batchItemFailures: [] });

    const seen = await db.query('SELECT id FROM public.stream_seen WHERE consumer = $1', [consumer]);
    expect(seen.map((row) => row.id).sort()).toEqual(['tombstone', '{"id": "p"}'].sort());
  });
});
