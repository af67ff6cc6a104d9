import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import { PermanentError } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { RECORD_FAILED_CHANNEL } from '../../lambda/inbox/telemetry/failure-channel.js';
import type { RecordFailure } from '../../lambda/inbox/telemetry/failure-channel.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

// Every record an inbox() handler fails or parks goes out on a diagnostics channel with its error, whatever
// the logger: the testbed names the handler's real error from it when nothing applied and the log is silenced.
let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('failure_channel');
});
afterAll(async () => db.close());
beforeEach(async () => {
  await db.query('TRUNCATE public.orders, inbox.consumed_message, inbox.parked_message');
});

type Order = { orderId: string };

/** The failures published while `body` runs. */
async function published(body: () => Promise<unknown>): Promise<RecordFailure[]> {
  const seen: RecordFailure[] = [];
  const listener = (message: unknown) => seen.push(message as RecordFailure);
  subscribe(RECORD_FAILED_CHANNEL, listener);
  try {
    await body();
  } finally {
    unsubscribe(RECORD_FAILED_CHANNEL, listener);
  }
  return seen;
}

function worker(options: Partial<InboxOptions<Order>>) {
  return inbox<Order>({
    consumer: 'channel-worker',
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    apply: async (tx, message) => {
      if (message.body.orderId === 'order-bad') throw new PermanentError('warehouse code unknown');
      await tx.execute("INSERT INTO public.orders (order_id, status, shipped_count) VALUES (:orderId, 'shipped', 1)", { orderId: message.body.orderId });
    },
    ...options,
  } as InboxOptions<Order>);
}

describe('the record-failed channel', () => {
  it.each([
    ['failed', {}],
    ['parked', { onPermanentError: 'park' }],
  ] as const)('publishes a %s record with its id and error, and nothing of the records applied', async (_outcome, options) => {
    const handler = worker(options);
    const good = sqsRecord({ body: { orderId: 'order-good' } });
    const bad = sqsRecord({ body: { orderId: 'order-bad' } });

    const failures = await published(() => handler({ Records: [good, bad] }, lambdaContext()));

    expect(failures).toHaveLength(1);
    expect(failures[0]!.id).toBe(bad.messageId);
    expect(failures[0]!.error).toBeInstanceOf(PermanentError);
    expect(failures[0]!.error.message).toContain('warehouse code unknown');
  });
});
