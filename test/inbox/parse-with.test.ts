import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inbox, InboxConfigError, parseWith, PermanentError } from '../../lambda/inbox/index.js';
import type { StandardSchema } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('parse_with');
});
afterAll(async () => db.close());
beforeEach(async () => {
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
});

const Order = z.object({ orderId: z.string().min(1), quantity: z.number().int().positive() });

function worker(onPermanentError: 'retry' | 'park', schema: StandardSchema<z.infer<typeof Order>> = Order) {
  const logger = recordingLogger();
  const handler = inbox({
    consumer: 'order-worker',
    database: db.target,
    logger,
    onPermanentError: onPermanentError === 'park' ? 'park' : 'retry',
    parse: parseWith(schema),
    apply: async (tx, message) => {
      // The schema's output type: quantity is a number here, checked before any database call.
      await tx.execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:id, 'shipped', :quantity)", {
        id: message.body.orderId,
        quantity: message.body.quantity,
      });
    },
  });
  return { handler, logger };
}

describe('parseWith(schema): a Standard Schema validator (zod) as parse', () => {
  it('applies a valid body and fails a refused one alone, naming each field, before any database call', async () => {
    const { handler, logger } = worker('retry');
    const good = sqsRecord({ body: { orderId: 'good', quantity: 2 } });
    const bad = sqsRecord({ body: { orderId: '', quantity: 'two' } });
    db.server.stats.reset();
    const response = await handler({ Records: [bad, good] }, lambdaContext());

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: bad.messageId }]);
    expect(await db.query('SELECT order_id, shipped_count FROM public.orders')).toEqual([{ order_id: 'good', shipped_count: 2 }]);
    const warned = JSON.stringify(logger.lines.filter((line) => line.level === 'warn'));
    expect(warned).toMatch(/ParseError/);
    expect(warned).toContain('the zod schema refused the body at body.orderId, body.quantity');
    // The values it refused stay out of the log.
    expect(warned).not.toContain('two');
    // Begin, claim, effect, Commit for the good record only: the bad one never reached the database.
    expect(db.server.stats.total()).toBe(4);
  });

  it('parks a refused body with onPermanentError park, with the issues as its error', async () => {
    const { handler } = worker('park');
    const bad = sqsRecord({ body: { orderId: 'x', quantity: -1 } });
    expect((await handler({ Records: [bad] }, lambdaContext())).batchItemFailures).toEqual([]);
    const parked = await db.query('SELECT error_class, error_message FROM inbox.parked_message');
    expect(parked).toEqual([{ error_class: 'ParseError', error_message: expect.stringMatching(/refused the body at body\.quantity; /) }]);
  });

  it('fails a body that is not JSON as a ParseError too, saying where', async () => {
    const { handler, logger } = worker('retry');
    const bad = sqsRecord({ body: '{"orderId": ' });
    expect((await handler({ Records: [bad] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: bad.messageId }]);
    expect(JSON.stringify(logger.lines)).toMatch(/ParseError.*not JSON: unexpected end of the text at position 12 of 12/);
  });

  it('keeps the issue messages with { issueMessages: true }', () => {
    const parse = parseWith(Order, { issueMessages: true });
    expect(() => parse(JSON.stringify({ orderId: 'o', quantity: 'two' }))).toThrow(/^body\.quantity: Invalid input: expected number, received string$/);
  });

  it("applies a body an async schema accepts and parks one it refuses, the refusal's issues as its ParseError", async () => {
    // Before, every record of an async schema was parked ("validated asynchronously"), and the batch reported successful.
    const known = new Set(['sku-1']);
    const asyncOrder = Order.extend({ sku: z.string() }).refine(async (order) => known.has(order.sku), { message: 'unknown sku', path: ['sku'] });
    const { handler } = worker('park', asyncOrder);
    const good = sqsRecord({ body: { orderId: 'async-good', quantity: 3, sku: 'sku-1' } });
    const bad = sqsRecord({ body: { orderId: 'async-bad', quantity: 1, sku: 'sku-9' } });
    expect((await handler({ Records: [good, bad] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query('SELECT order_id, shipped_count FROM public.orders')).toEqual([{ order_id: 'async-good', shipped_count: 3 }]);
    expect(await db.query('SELECT sqs_message_id, error_class, error_message FROM inbox.parked_message')).toEqual([
      {
        sqs_message_id: bad.messageId,
        error_class: 'ParseError',
        error_message:
          'the body could not be parsed: the zod schema refused the body at body.sku; its messages are left out, as they can quote the body (parseWith(schema, { issueMessages: true }) keeps them)',
      },
    ]);
  });

  it('fails, and does not park, a record whose async validator rejects: no verdict on the body; delivered again, it applies once the validator answers', async () => {
    // A validator of its own: zod runs an async refinement twice (a synchronous attempt first), and leaves the
    // first run's rejection unhandled.
    let lookups = 0;
    const lookedUp: StandardSchema<z.infer<typeof Order>> = {
      '~standard': {
        version: 1,
        vendor: 'sku-service',
        validate: async (value) => {
          lookups++;
          if (lookups === 1) throw new Error('the sku service timed out');
          return { value: value as z.infer<typeof Order> };
        },
      },
    };
    const { handler, logger } = worker('park', lookedUp);
    const record = sqsRecord({ body: { orderId: 'async-retry', quantity: 1 } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await db.query('SELECT count(*)::int AS n FROM inbox.parked_message')).toEqual([{ n: 0 }]);
    expect(logger.lines.filter((line) => line.message.startsWith('record failed')).map((line) => (line.extra[0] as { error: unknown }).error)).toEqual([
      {
        name: 'SchemaValidatorError',
        message: "the sku-service schema's validator threw Error instead of answering; the body was not judged",
      },
    ]);
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    expect(await db.query('SELECT order_id FROM public.orders')).toEqual([{ order_id: 'async-retry' }]);
  });

  it('fails a record whose validator throws at once the same way, and parks one whose refinement throws a PermanentError', async () => {
    const throwing: StandardSchema<z.infer<typeof Order>> = {
      '~standard': {
        version: 1,
        vendor: 'hand-made',
        validate: (value) => {
          if ((value as { orderId: string }).orderId === 'permanent') throw new PermanentError('orders of this shop are closed');
          throw 'a thrown string';
        },
      },
    };
    const { handler, logger } = worker('park', throwing);
    const temporary = sqsRecord({ body: { orderId: 'temporary', quantity: 1 } });
    const permanent = sqsRecord({ body: { orderId: 'permanent', quantity: 1 } });
    expect((await handler({ Records: [temporary, permanent] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: temporary.messageId }]);
    expect(JSON.stringify(logger.lines)).toContain("the hand-made schema's validator threw a string instead of answering; the body was not judged");
    expect(await db.query('SELECT sqs_message_id, error_class, error_message FROM inbox.parked_message')).toEqual([
      { sqs_message_id: permanent.messageId, error_class: 'ParseError', error_message: 'the body could not be parsed: orders of this shop are closed' },
    ]);
  });

  it("awaits a parse of the user's own that returns a promise, and takes its rejection for a ParseError", async () => {
    const logger = recordingLogger();
    const handler = inbox<{ orderId: string }>({
      consumer: 'order-worker',
      database: db.target,
      logger,
      parse: async (body) => {
        const order = JSON.parse(body) as { orderId: string };
        if (order.orderId === 'refused') throw new Error('refused by the async parse');
        return order;
      },
      apply: async (tx, message) =>
        void (await tx.execute("INSERT INTO public.orders (order_id, status) VALUES (:id, 'shipped')", { id: message.body.orderId })),
    });
    const good = sqsRecord({ body: { orderId: 'async-parse' } });
    const bad = sqsRecord({ body: { orderId: 'refused' } });
    expect((await handler({ Records: [good, bad] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: bad.messageId }]);
    expect(await db.query('SELECT order_id FROM public.orders')).toEqual([{ order_id: 'async-parse' }]);
    expect(JSON.stringify(logger.lines)).toContain('"name":"ParseError","message":"the body could not be parsed: parse threw Error, whose message is left out');
  });

  it('refuses, when the handler is built, something that is not a Standard Schema', () => {
    expect(() => parseWith({} as StandardSchema)).toThrow(InboxConfigError);
    expect(() => parseWith({} as StandardSchema)).toThrow(/inbox option "parse": parseWith\(\) needs a Standard Schema validator/);
  });

  it('decodes with the given decode instead of JSON.parse', () => {
    const parse = parseWith(z.object({ n: z.number() }), { decode: (body) => ({ n: Number(body) }) });
    expect(parse('42')).toEqual({ n: 42 });
    expect(() => parse('forty-two')).toThrow(/refused the body at body\.n; /);
  });
});
