import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxMessage } from '../../lambda/inbox/index.js';
import { sqsOutbox } from '../../lambda/inbox/outbox/index.js';
import { createProducer } from '../../lambda/inbox/producer/producer.js';
import { runScenario } from '../../local/index.js';
import type { HandedOn, ScenarioConsumer, ScenarioEnvironment } from '../../local/index.js';
import { localStackPerFile } from '../support/local-stack.js';

// runScenario with a handler that hands a message on through the outbox: the run makes the destination
// queues, names them in INBOX_DESTINATIONS, sets the region and credentials the handler's own new SQSClient({}) needs,
// sweeps what the relays left, and lets verify judge what reached each queue.

interface Credit {
  readonly creditId: string;
  readonly account: string;
}

const CREDIT = 'INSERT INTO public.credits (credit_id, account) VALUES (:id, :account)';

const credits: Omit<ScenarioConsumer, 'handler'> = {
  setup: 'CREATE TABLE public.credits (id bigserial PRIMARY KEY, credit_id text NOT NULL, account text NOT NULL)',
  message: (i) => ({ key: `credit-${i}`, body: { creditId: `credit-${i}`, account: `account-${i % 5}` }, groupId: `account-${i % 5}` }),
  effects: 'SELECT credit_id AS key, count(*), min(id) AS seq FROM public.credits GROUP BY 1',
};

/** The outbox way: the receipt is written in the claim's transaction and relayed after the commit. */
const withOutbox = ({ database }: ScenarioEnvironment) =>
  inbox<Credit>({
    consumer: 'credits',
    database,
    onPermanentError: 'park',
    // As in production: a client of its own, endpoint and region from the environment.
    outbox: sqsOutbox({ client: new SQSClient({}) }),
    apply: async (tx, message) => {
      await tx.execute(CREDIT, { id: message.body.creditId, account: message.body.account });
      tx.send({ to: 'receipts', body: { creditId: message.body.creditId }, groupId: message.body.account });
    },
  });

/** The bug the outbox replaces: send once the inbox reports a record succeeded, after its commit. */
const sendAfterCommit = ({ database }: ScenarioEnvironment) => {
  const producer = createProducer({ client: new SQSClient({}), queueUrl: (JSON.parse(process.env.INBOX_DESTINATIONS!) as Record<string, string>).receipts! });
  const handler = inbox<Credit>({
    consumer: 'credits',
    database,
    onPermanentError: 'park',
    apply: async (tx, message) => void (await tx.execute(CREDIT, { id: message.body.creditId, account: message.body.account })),
  });
  return async (event: Parameters<typeof handler>[0], context: Parameters<typeof handler>[1]) => {
    const response: SQSBatchResponse = await handler(event, context);
    const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    const done = event.Records.filter((record) => !failed.has(record.messageId)).map((record) => JSON.parse(record.body) as InboxMessage<Credit>['body']);
    if (done.length > 0)
      await producer.send(done.map((body) => ({ key: `receipt-${body.creditId}`, body: { creditId: body.creditId }, groupId: body.account })));
    return response;
  };
};

/** Every credit applied has a receipt, and no receipt is for a credit never applied. */
async function receiptsMatchCredits(session: ScenarioEnvironment['session'], handedOn: HandedOn): Promise<string[]> {
  const { rows } = await session.execute('SELECT DISTINCT credit_id FROM public.credits');
  const applied = new Set(rows.map((row) => String(row.credit_id)));
  const receipted = new Set((handedOn.receipts ?? []).map((message) => String((JSON.parse(message.body) as Credit).creditId)));
  return [
    ...[...applied].filter((id) => !receipted.has(id)).map((id) => `${id} applied, no receipt`),
    ...[...receipted].filter((id) => !applied.has(id)).map((id) => `${id} has a receipt, not applied`),
  ];
}

// One stack for the file, on a database of its own: the runs' own databases live on the shared server.
const stack = localStackPerFile('harness_outbox');

describe('runScenario with an outbox handler', () => {
  it('hands a receipt on for every credit applied, through every fault, with the sweeper', async () => {
    const report = await runScenario(stack(), { ...credits, handler: withOutbox, destinations: ['receipts'], verify: receiptsMatchCredits });
    expect(report.problems).toEqual([]);
    expect(report.destinations.receipts!.length).toBeGreaterThanOrEqual(report.applied);
    expect(report.destinations.receipts!.every((message) => message.key !== undefined && message.groupId?.startsWith('account-'))).toBe(true);
    // The handlers' own relays, through new SQSClient({}) with the region and credentials the run set, sent some
    // (most, on an idle machine), the sweeper the rest: on a busy one a relay comes after the sweeper's minimum age
    // more often, and the sweeper sends the row first (192 of 295 swept, 4 Dec 2026), so "most" is no check.
    expect(report.outboxSwept).toBeGreaterThan(0);
    expect(report.destinations.receipts!.length).toBeGreaterThan(report.outboxSwept);
  }, 180_000);

  it('finds the receipts a send after the commit loses, when the commit answer was lost', async () => {
    const report = await runScenario(stack(), { ...credits, handler: sendAfterCommit, destinations: ['receipts'], verify: receiptsMatchCredits });
    expect(report.faultsInjected['drop-commit']).toBeGreaterThan(0);
    expect(report.problems).toContainEqual(expect.stringMatching(/^verify: credit-\d+ applied, no receipt$/));
  }, 180_000);

  it('decides the same commits to strike for the same seed, though each run has queues of its own', async () => {
    // An outbox row carries its destination's URL, new every run; the schedule names it stably.
    const run = () =>
      runScenario(stack(), {
        ...credits,
        handler: withOutbox,
        destinations: ['receipts'],
        messages: 150,
        seed: 7,
        faults: ['drop-commit', 'crash-in-transaction'],
      });
    const runs = [await run(), await run(), await run()];
    expect(runs[0]!.problems).toEqual([]);
    expect(runs[0]!.faultsInjected['drop-commit']).toBeGreaterThan(0);
    expect(runs.map((report) => report.faultsInjected)).toEqual([runs[0]!.faultsInjected, runs[0]!.faultsInjected, runs[0]!.faultsInjected]);
  }, 180_000);

  it('refuses a destination name tx.send could not give', async () => {
    await expect(runScenario(stack(), { ...credits, handler: withOutbox, destinations: ['re ceipts'] })).rejects.toThrow(
      'destinations must be names of 1 to 40 letters',
    );
  });
});
