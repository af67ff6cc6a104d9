import { SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { INBOX_ENV, METRIC_NAMESPACE, OUTBOX_SERVICE_NAME, OUTBOX_SWEEP_DEFAULTS } from '../../inbox/contract.js';
import type { OutboxSweeperMetric } from '../../inbox/contract.js';
import { InboxConfigError } from '../../inbox/index.js';
import { CALL_TIMEOUT_MS, dataApiSession } from '../scheduled-session.js';
import type { ScheduledSession } from '../scheduled-session.js';
import { EmfMetrics } from '../../inbox/telemetry/emf-metrics.js';
import { OutboxSweepError, sqsOutbox, sweepOutbox } from '../../inbox/outbox/index.js';
import type { SweepReport } from '../../inbox/outbox/index.js';
import type { InboxMetrics } from '../../inbox/index.js';

/**
 * Makes the scheduled outbox sweeper: sends the unsent outbox rows older than INBOX_OUTBOX_MIN_AGE_SECONDS
 * (default 60: younger ones are their handler's to relay), oldest first and in order per FIFO group, up to
 * INBOX_OUTBOX_SWEEP_LIMIT (default 500) per run; deletes sent rows older than
 * INBOX_OUTBOX_SENT_RETENTION_SECONDS (default 7 days), starting no step once the time left is below the
 * smaller of two call timeouts and half the time the invocation started with; then emits OutboxSwept,
 * OutboxSweepDeferred, OutboxSweepFailures and OutboxOldestUnsentAgeSeconds (namespace SqsInbox, service
 * POWERTOOLS_SERVICE_NAME or inbox-outbox), which the InboxOutboxRelay construct alarms on. A failed step
 * (reading, sending, deleting, the age query) is counted and logged, the metrics still go out, and the
 * invocation then fails with the OutboxSweepError. `session` says how it reaches the database: through the Data
 * API by default; the DSQL function (lambda/functions/dsql-maintenance/) passes its own.
 */
export function sweeperHandler(
  env: NodeJS.ProcessEnv = process.env,
  // The consumers' writer; its on/off switches come from process.env, as Powertools' did.
  metrics: InboxMetrics = new EmfMetrics(env[INBOX_ENV.METRICS_NAMESPACE] ?? METRIC_NAMESPACE, env[INBOX_ENV.SERVICE_NAME] ?? OUTBOX_SERVICE_NAME, undefined),
  client = new SQSClient({}),
  session: ScheduledSession = dataApiSession,
) {
  const seconds = (name: string, fallback: number) => {
    const value = env[name] === undefined || env[name] === '' ? fallback : Number(env[name]);
    if (!Number.isInteger(value) || value < 0) throw new InboxConfigError(name, `"${env[name]}" must be a whole number of seconds >= 0`);
    return value;
  };
  const minAgeSeconds = seconds(INBOX_ENV.OUTBOX_MIN_AGE_SECONDS, OUTBOX_SWEEP_DEFAULTS.minAgeSeconds);
  const limit = seconds(INBOX_ENV.OUTBOX_SWEEP_LIMIT, OUTBOX_SWEEP_DEFAULTS.limit);
  const sentRetentionSeconds = seconds(INBOX_ENV.OUTBOX_SENT_RETENTION_SECONDS, OUTBOX_SWEEP_DEFAULTS.sentRetentionSeconds);
  const database = session(env);
  const { transport } = sqsOutbox({ client });
  return async (_event?: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SweepReport> => {
    // Lambda's clock when it gives one; else no deadline.
    const remainingTimeMs = () => context?.getRemainingTimeInMillis?.() ?? Number.POSITIVE_INFINITY;
    let report: SweepReport;
    let failed: OutboxSweepError | undefined;
    try {
      report = await sweepOutbox(database, {
        transport,
        minAgeMs: minAgeSeconds * 1000,
        limit,
        sentRetentionMs: sentRetentionSeconds * 1000,
        remainingTimeMs,
        // A step that starts can still take a call timeout, and so can the age query after it.
        marginMs: Math.min(2 * CALL_TIMEOUT_MS, remainingTimeMs() / 2),
        ...(env[INBOX_ENV.SCHEMA] ? { schema: env[INBOX_ENV.SCHEMA] } : {}),
      });
    } catch (error) {
      if (!(error instanceof OutboxSweepError)) throw error;
      failed = error;
      report = error.report;
    }
    metrics.addMetric('OutboxSwept' satisfies OutboxSweeperMetric, 'Count', report.sent);
    metrics.addMetric('OutboxSweepDeferred' satisfies OutboxSweeperMetric, 'Count', report.deferred);
    metrics.addMetric('OutboxSweepFailures' satisfies OutboxSweeperMetric, 'Count', report.failures.length);
    // Unknown when the age query failed: no data point rather than a reassuring 0.
    if (report.oldestUnsentAgeSeconds !== undefined)
      metrics.addMetric('OutboxOldestUnsentAgeSeconds' satisfies OutboxSweeperMetric, 'Seconds', report.oldestUnsentAgeSeconds);
    metrics.publishStoredMetrics();
    const failures = report.failures.map((failure) => ({ step: failure.step, error: { name: failure.error.name, message: failure.error.message } }));
    console.log(JSON.stringify({ message: 'inbox outbox sweep', ...report, failures }));
    if (failed) throw failed;
    return report;
  };
}

let configured: ReturnType<typeof sweeperHandler> | undefined;

/** The Lambda entry point; configured from the environment on the first invocation. */
export const handler = (event: unknown, context: Context) => (configured ??= sweeperHandler())(event, context);
