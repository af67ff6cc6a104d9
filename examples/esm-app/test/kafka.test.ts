import { expect, it } from 'vitest';
import { runStreamScenario } from 'sqs-inbox/local';
import { credits } from './credits-scenario.js';

it("credits every Kafka record exactly once, in each account's order, through crashes before the checkpoint, lost commits and re-sends", async () => {
  const report = await runStreamScenario({
    source: 'kafka',
    ...credits,
    // Loaded once the local Data API is up and INBOX_* points at it.
    handler: () => import('../src/credit-streams.js').then((m) => m.kafkaHandler),
  });
  expect(report.problems).toEqual([]);
}, 180_000);
