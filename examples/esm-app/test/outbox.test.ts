import { expect, it } from 'vitest';
import { runScenario } from 'sqs-inbox/local';
import { credits } from './credits-scenario.js';

it('hands one receipt on for every credit, through every fault, with the outbox and its sweeper', async () => {
  const report = await runScenario({
    ...credits,
    // A queue per destination, named in INBOX_DESTINATIONS; AWS_REGION and local credentials let new SQSClient({}) send to it.
    destinations: ['receipts'],
    handler: () => import('../src/receipts-worker.js').then((m) => m.handler),
    verify: async (session, handedOn) => {
      const receipted = new Set((handedOn['receipts'] ?? []).map((message) => (JSON.parse(message.body) as { creditId: string }).creditId));
      const { rows } = await session.execute('SELECT DISTINCT credit_id FROM public.credits');
      return [
        ...(await credits.verify(session)),
        ...rows.filter((row) => !receipted.has(String(row['credit_id']))).map((row) => `${String(row['credit_id'])}: no receipt`),
      ];
    },
  });
  expect(report.problems).toEqual([]);
}, 180_000);
