import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dataApi, inbox, InboxConfigError } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';

/**
 * A handler module imports cleanly without its environment (a test importing a helper from it, a tool
 * reading it): what only the INBOX_* environment provides is read and checked at the first invocation,
 * Lambda's cold start, with the errors inbox() would have thrown. What the code gives is checked at once.
 */

const ENVIRONMENT = ['INBOX_CONSUMER', 'INBOX_RESOURCE_ARN', 'INBOX_SECRET_ARN', 'INBOX_DATABASE', 'INBOX_DATA_API_ENDPOINT', 'INBOX_DESTINATIONS'];
const saved = Object.fromEntries(ENVIRONMENT.map((name) => [name, process.env[name]]));
function clearEnvironment(): void {
  for (const name of ENVIRONMENT) delete process.env[name];
}
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('cold_start');
});
afterAll(async () => db.close());

const apply = async () => {};
const NO_CONSUMER = `inbox option "consumer": is not set: pass inbox({ consumer: 'order-worker', ... }) or set INBOX_CONSUMER`;
const NO_CLUSTER = 'inbox option "database.resourceArn": is not set: pass the Aurora cluster ARN, or set INBOX_RESOURCE_ARN';

/** What a promise rejected with, or what a call threw. */
async function failure(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('a handler built at module load', () => {
  it('imports with no INBOX_* set, and its helpers with it', async () => {
    clearEnvironment();
    const module = await import('../fixtures/handler-module/shipments.js');
    expect(module.SHIP).toContain('INSERT INTO public.orders');
    expect(typeof module.handler).toBe('function');
  });

  it('fails its first invocation with the error inbox() throws when the environment is there but wrong', async () => {
    clearEnvironment();
    const handler = inbox({ apply });
    const first = await failure(() => handler({ Records: [sqsRecord()] }, lambdaContext()));
    expect(first).toBeInstanceOf(InboxConfigError);
    expect((first as InboxConfigError).option).toBe('consumer');
    expect((first as Error).message).toBe(NO_CONSUMER);

    process.env.INBOX_CONSUMER = 'not valid!';
    const wrong = await failure(() => handler({ Records: [sqsRecord()] }, lambdaContext()));
    const atOnce = await failure(() => inbox({ apply, database: db.target }));
    expect((wrong as Error).message).toBe((atOnce as Error).message);
    expect((wrong as Error).message).toMatch(/^inbox option "consumer": "not valid!" must be 1 to 128 letters, digits/);
  });

  it('names the database setting the environment lacks at the first invocation, and so does asking for its parked messages', async () => {
    clearEnvironment();
    const handler = inbox({ consumer: 'order-worker', apply });
    expect(((await failure(() => handler({ Records: [sqsRecord()] }, lambdaContext()))) as Error).message).toBe(NO_CLUSTER);
    const parked = parkedMessages(handler);
    expect(((await failure(() => parked.list())) as Error).message).toBe(NO_CLUSTER);
    process.env.INBOX_RESOURCE_ARN = db.server.resourceArn;
    expect(((await failure(() => parked.show(1))) as Error).message).toBe(
      'inbox option "database.secretArn": is not set: pass the database secret ARN, or set INBOX_SECRET_ARN',
    );
  });

  it('reads the environment set after the import, at its first invocation, and applies the message', async () => {
    clearEnvironment();
    // A fresh copy of the handler's module, one whose handler no invocation has started yet: the query makes
    // it a module of its own. Not by resetting every module (vitest's resetModules), which would load the whole
    // runtime again inside this test: the mutation run would then take every module-level constant of the core
    // as reached by this test alone, and run only this test against their mutants.
    const fresh = '../fixtures/handler-module/shipments.js?fresh';
    const { handler } = (await import(/* @vite-ignore */ fresh)) as typeof import('../fixtures/handler-module/shipments.js');
    process.env.INBOX_CONSUMER = 'shipments';
    process.env.INBOX_RESOURCE_ARN = db.server.resourceArn;
    process.env.INBOX_SECRET_ARN = db.server.secretArn;
    process.env.INBOX_DATABASE = db.server.database;
    process.env.INBOX_DATA_API_ENDPOINT = db.server.endpoint;

    const response = await handler({ Records: [sqsRecord({ body: { orderId: 'o-cold' }, key: 'ship-o-cold' })] }, lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(await db.query("SELECT order_id, shipped_count FROM public.orders WHERE order_id = 'o-cold'")).toEqual([{ order_id: 'o-cold', shipped_count: 1 }]);
    expect(await db.query("SELECT consumer_name, message_id FROM inbox.consumed_message WHERE message_id = 'ship-o-cold'")).toEqual([
      { consumer_name: 'shipments', message_id: 'ship-o-cold' },
    ]);
  });

  it('still refuses at inbox() every option the code gives, with no environment to wait for', () => {
    clearEnvironment();
    expect(() => inbox({ apply, concurrency: 0 })).toThrow(/^inbox option "concurrency": 0 must be a positive integer/);
    expect(() => inbox({ apply, consumer: 'has space' })).toThrow(/^inbox option "consumer": "has space" must be/);
    // A database the code names half of is the code's to finish: nothing of it is left to wait for.
    expect(() => inbox({ apply, consumer: 'order-worker', database: dataApi({ resourceArn: db.server.resourceArn }) })).toThrow(
      /^inbox option "database\.secretArn": is not set/,
    );
    expect(() => inbox({ apply, outbox: { transport: { send: async () => [] }, destinations: { invoices: 'queue' } } })).toThrow(
      /^inbox option "outbox\.destinations": must map names to queue URLs/,
    );
  });
});
