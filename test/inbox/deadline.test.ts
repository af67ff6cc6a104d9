import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('deadline');
});
afterAll(async () => db.close());

describe('the Lambda deadline', () => {
  it('starts no record once the remaining time is below the margin, and reports those unstarted records', async () => {
    const started: number[] = [];
    let remaining = 10_000;
    const metrics = recordingMetrics();
    const handler = inbox<{ n: number }>({
      consumer: 'deadline',
      database: db.target,
      logger: recordingLogger(),
      metrics,
      concurrency: 1,
      deadlineMarginMs: 5_000,
      apply: async (_tx, message) => {
        started.push(message.body.n);
        // Each record "takes" 3 s of the Lambda's time.
        remaining -= 3_000;
      },
    });
    const records = [1, 2, 3, 4].map((n) => sqsRecord({ body: { n } }));
    const response = await handler(
      { Records: records },
      lambdaContext(() => remaining),
    );
    // 10 s left: record 1 starts (7 s left), record 2 starts (4 s left), then 4 s < 5 s margin.
    expect(started).toEqual([1, 2]);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([records[2]!.messageId, records[3]!.messageId]);
    expect(metrics.published[0]!.DeferredByDeadline).toEqual([2]);
    expect(await db.query("SELECT 1 FROM inbox.consumed_message WHERE consumer_name = 'deadline'")).toHaveLength(2);
  });

  it('short-circuits the rest of a FIFO group after a deferred record', async () => {
    let remaining = 6_000;
    const summaries: unknown[] = [];
    const handler = inbox<{ n: number }>({
      consumer: 'deadline-fifo',
      onBatch: (summary) => summaries.push(summary),
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      deadlineMarginMs: 5_000,
      apply: async () => {
        remaining -= 3_000;
      },
    });
    const records = [1, 2, 3].map((n) => sqsRecord({ body: { n }, groupId: 'g' }));
    // The clock recovers after record 2 is deferred: only the group rule can stop record 3.
    let checks = 0;
    const response = await handler(
      { Records: records },
      lambdaContext(() => (++checks > 2 ? 60_000 : remaining)),
    );
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([records[1]!.messageId, records[2]!.messageId]);
    expect(summaries[0]).toMatchObject({ processed: 1, deferredByDeadline: 1, shortCircuited: 1 });
  });

  it('derives its default margin from the time the invocation starts with, so a short function timeout still runs records', async () => {
    let remaining = 6_000;
    const handler = inbox<{ n: number }>({
      consumer: 'deadline-default',
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      concurrency: 1,
      apply: async () => {
        remaining -= 2_000;
      },
    });
    const records = [1, 2, 3].map((n) => sqsRecord({ body: { n } }));
    const response = await handler(
      { Records: records },
      lambdaContext(() => remaining),
    );
    // Margin: min(2 x 10 s, 6 s / 2) = 3 s. Records 1 and 2 start (6 s, 4 s left); record 3 sees 2 s.
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([records[2]!.messageId]);
  });
});
