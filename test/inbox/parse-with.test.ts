import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { inbox, InboxConfigError, parseWith } from '../../lambda/inbox/index.js';
import type { StandardSchema } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { park } from '../../lambda/inbox/parked/index.js';

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
    onPermanentError: onPermanentError === 'park' ? park : 'retry',
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

  it('fails a record whose schema validates asynchronously, saying parse must be synchronous', async () => {
    const asyncOrder = Order.refine(async () => true);
    const { handler, logger } = worker('retry', asyncOrder);
    const record = sqsRecord({ body: { orderId: 'a', quantity: 1 } });
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(JSON.stringify(logger.lines)).toMatch(/validated asynchronously; parse must be synchronous/);
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
