import { expect, it } from 'vitest';
import { runStreamScenario } from 'sqs-inbox/local';
import { credits } from './credits-scenario.js';

it("credits every DynamoDB Streams record exactly once, in each account's order, through crashes before the checkpoint, lost commits and re-sends", async () => {
  const report = await runStreamScenario({
    source: 'dynamodb',
    ...credits,
    // The table's partition key attribute: each item gets its record's groupId (its lane).
    partitionKey: 'account',
    // Loaded once the local Data API is up and INBOX_* points at it.
    handler: () => import('../src/credit-streams.js').then((m) => m.dynamoDbHandler),
  });
  expect(report.problems).toEqual([]);
}, 180_000);
