import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { DataApiSession, InboxConfigError, METRIC_NAMESPACE, resolveTarget } from '../inbox/index.js';
import { sqsOutbox, sweepOutbox } from '../inbox/outbox/index.js';
import type { SweepReport } from '../inbox/outbox/index.js';

/** One Data API call of the sweep may take this long. */
const CALL_TIMEOUT_MS = 30_000;

/**
 * Makes the scheduled outbox sweeper: sends the unsent outbox rows older than INBOX_OUTBOX_MIN_AGE_SECONDS
 * (default 60: younger ones are their handler's to relay), oldest first and in order per FIFO group, up to
 * INBOX_OUTBOX_SWEEP_LIMIT (default 500) per run; deletes sent rows older than
 * INBOX_OUTBOX_SENT_RETENTION_SECONDS (default 7 days); then emits OutboxSwept, OutboxSweepDeferred and
 * OutboxOldestUnsentAgeSeconds (namespace SqsInbox, service POWERTOOLS_SERVICE_NAME or inbox-outbox),
 * which the InboxOutboxRelay construct alarms on.
 */
export function sweeperHandler(
  env: NodeJS.ProcessEnv = process.env,
  metrics = new Metrics({ namespace: env.POWERTOOLS_METRICS_NAMESPACE ?? METRIC_NAMESPACE, serviceName: env.POWERTOOLS_SERVICE_NAME ?? 'inbox-outbox' }),
  client = new SQSClient({}),
) {
  const seconds = (name: string, fallback: number) => {
    const value = env[name] === undefined || env[name] === '' ? fallback : Number(env[name]);
    if (!Number.isInteger(value) || value < 0) throw new InboxConfigError(name, `"${env[name]}" must be a whole number of seconds >= 0`);
    return value;
  };
  const minAgeSeconds = seconds('INBOX_OUTBOX_MIN_AGE_SECONDS', 60);
  const limit = seconds('INBOX_OUTBOX_SWEEP_LIMIT', 500);
  const sentRetentionSeconds = seconds('INBOX_OUTBOX_SENT_RETENTION_SECONDS', 7 * 24 * 3600);
  const session = new DataApiSession(resolveTarget({}, env), { callTimeoutMs: CALL_TIMEOUT_MS, resumeDelaysMs: [1000, 2000, 4000, 8000, 10_000] });
  const { transport } = sqsOutbox({ client });
  return async (_event?: unknown, _context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SweepReport> => {
    const report = await sweepOutbox(session, {
      transport,
      minAgeMs: minAgeSeconds * 1000,
      limit,
      sentRetentionMs: sentRetentionSeconds * 1000,
      ...(env.INBOX_SCHEMA ? { schema: env.INBOX_SCHEMA } : {}),
    });
    metrics.addMetric('OutboxSwept', MetricUnit.Count, report.sent);
    metrics.addMetric('OutboxSweepDeferred', MetricUnit.Count, report.deferred);
    metrics.addMetric('OutboxOldestUnsentAgeSeconds', MetricUnit.Seconds, report.oldestUnsentAgeSeconds);
    metrics.publishStoredMetrics();
    console.log(JSON.stringify({ message: 'inbox outbox sweep', ...report }));
    return report;
  };
}

let configured: ReturnType<typeof sweeperHandler> | undefined;

/** The Lambda entry point; configured from the environment on the first invocation. */
export const handler = (event: unknown, context: Context) => (configured ??= sweeperHandler())(event, context);
