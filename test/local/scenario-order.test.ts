import type { SQSBatchItemFailure, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenario, startLocal } from '../../local/index.js';
import type { LocalStack, ScenarioConsumer, ScenarioEnvironment } from '../../local/index.js';
import { freshDatabase } from '../support/database.js';

// How runScenario judges FIFO order: an effect applied after a later message of its group is a problem,
// unless the message had reached the dead-letter queue, where the FIFO guarantee ends (docs/fifo.md).

interface Payment {
  readonly paymentId: string;
  readonly amountCents: number;
}

const INSERT_PAYMENT = 'INSERT INTO public.payments (payment_id, amount_cents) VALUES (:id, :amount)';

/** One FIFO group; `seq` judges the order of the first effects. */
const oneCustomer: Omit<ScenarioConsumer, 'handler'> = {
  setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
  message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: 'customer-0' }),
  effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
};

const paymentOf = (record: SQSRecord): Payment => JSON.parse(record.body) as Payment;

/**
 * A consumer whose effect for pay-0 is still in flight when SQS gives up on it: it reports pay-0 failed on
 * every receive (and, as FIFO asks, the rest of the batch with it), and the effect of the last receive
 * lands late, right after the effect of the first message SQS delivers once pay-0 is in the dead-letter
 * queue. The same interleaving as a consumer that overran its visibility timeout on a message's 5th receive.
 */
function lateEffectWorker({ session }: ScenarioEnvironment) {
  const apply = (payment: Payment) => session.execute(INSERT_PAYMENT, { id: payment.paymentId, amount: payment.amountCents });
  let inFlight: Payment | undefined;
  return async (event: SQSEvent) => {
    const batchItemFailures: SQSBatchItemFailure[] = [];
    for (const record of event.Records) {
      const payment = paymentOf(record);
      if (batchItemFailures.length > 0 || payment.paymentId === 'pay-0') {
        if (payment.paymentId === 'pay-0' && record.attributes.ApproximateReceiveCount === '5') inFlight = payment;
        batchItemFailures.push({ itemIdentifier: record.messageId });
        continue;
      }
      await apply(payment);
      if (inFlight) await apply(inFlight);
      inFlight = undefined;
    }
    return { batchItemFailures };
  };
}

/** A consumer that applies each batch backwards: the group's later message first. */
function backwardsWorker({ session }: ScenarioEnvironment) {
  return async (event: SQSEvent) => {
    for (const record of [...event.Records].reverse()) {
      const payment = paymentOf(record);
      await session.execute(INSERT_PAYMENT, { id: payment.paymentId, amount: payment.amountCents });
    }
  };
}

const previousDatabaseUrl = process.env.DATABASE_URL;
let local: LocalStack;
beforeAll(async () => {
  process.env.DATABASE_URL = await freshDatabase('scenario_order');
  local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
});
afterAll(async () => {
  await local?.close();
  if (previousDatabaseUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = previousDatabaseUrl;
});

describe('runScenario judging FIFO order', () => {
  it('reports a message applied after a later one of its group as a problem', async () => {
    const report = await runScenario(local, { ...oneCustomer, handler: backwardsWorker, messages: 2, consumers: 1, faults: [] });

    expect(report.problems).toEqual(['1 message(s) applied after a later message of their FIFO group: pay-0 after pay-1 (group customer-0)']);
    expect(report.outOfOrder).toEqual([{ key: 'pay-0', groupId: 'customer-0', after: 'pay-1' }]);
    expect(report.outOfOrderPastDeadLetter).toEqual([]);
    expect(report.notes).toEqual([]);
  });

  it('notes, not as a problem, an effect that landed after its group moved past it in the dead-letter queue', async () => {
    // 11 messages: a FIFO receive takes 10, so pay-10 is the first SQS hands out once pay-0 and the 9
    // behind it used up their 5 receives (1 s visibility each) and went to the dead-letter queue.
    const report = await runScenario(local, { ...oneCustomer, handler: lateEffectWorker, messages: 11, consumers: 1, faults: [], visibilityTimeoutSeconds: 1 });

    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ orderChecked: true, orderViolations: 0, deadLettered: 10, wellFormedInDlqOrParked: 9, applied: 2, lost: 0 });
    expect(report.outOfOrderPastDeadLetter).toEqual([{ key: 'pay-0', groupId: 'customer-0', after: 'pay-10' }]);
    expect(report.notes).toEqual([
      '1 message(s) applied after a later message of their FIFO group once a copy of them had reached the dead-letter queue, where FIFO order ends ' +
        '(docs/fifo.md, "Where the FIFO guarantee ends"): pay-0 after pay-10 (group customer-0). Their group moved on without them: the effect came ' +
        'from a later duplicate send of the same key, or landed late from a consumer still running past its timeout on its last receive.',
    ]);
  }, 60_000);
});
