import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { DataApiSession, InboxConfigError, METRIC_NAMESPACE, purge, resolveTarget } from '../inbox/index.js';
import type { PurgeReport } from '../inbox/index.js';

/** Leave this much of the Lambda's time for the final age query and the metrics. */
const SAFETY_MARGIN_MS = 10_000;

/**
 * Makes the scheduled purge: deletes inbox rows older than INBOX_RETENTION_SECONDS in batches of
 * INBOX_PURGE_BATCH_SIZE (default 5000) until the Lambda's time runs low, then emits PurgedRows,
 * PurgeMoreRemaining and OldestRowAgeSeconds (namespace SqsInbox, service inbox-cleanup) so an alarm can
 * tell when the purge is not keeping up.
 */
export function cleanupHandler(env: NodeJS.ProcessEnv = process.env, metrics = new Metrics({ namespace: env.POWERTOOLS_METRICS_NAMESPACE ?? METRIC_NAMESPACE, serviceName: 'inbox-cleanup' })) {
  const retentionSeconds = Number(env.INBOX_RETENTION_SECONDS);
  if (!Number.isInteger(retentionSeconds) || retentionSeconds < 1) {
    throw new InboxConfigError('INBOX_RETENTION_SECONDS', `"${env.INBOX_RETENTION_SECONDS ?? ''}" must be a positive integer number of seconds`);
  }
  const batchSize = env.INBOX_PURGE_BATCH_SIZE ? Number(env.INBOX_PURGE_BATCH_SIZE) : 5000;
  const session = new DataApiSession(resolveTarget({}, env), { callTimeoutMs: 30_000, resumeDelaysMs: [1000, 2000, 4000, 8000, 10_000] });
  return async (_event?: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<PurgeReport> => {
    const remaining = context?.getRemainingTimeInMillis?.() ?? 60_000 + SAFETY_MARGIN_MS;
    const report = await purge(session, {
      retentionSeconds,
      batchSize,
      timeBudgetMs: Math.max(1000, remaining - SAFETY_MARGIN_MS),
      ...(env.INBOX_SCHEMA ? { schema: env.INBOX_SCHEMA } : {}),
    });
    metrics.addMetric('PurgedRows', MetricUnit.Count, report.deleted);
    metrics.addMetric('PurgeMoreRemaining', MetricUnit.Count, report.moreRemaining ? 1 : 0);
    metrics.addMetric('OldestRowAgeSeconds', MetricUnit.Seconds, report.oldestRowAgeSeconds);
    metrics.publishStoredMetrics();
    console.log(JSON.stringify({ message: 'inbox purge', ...report }));
    return report;
  };
}

let configured: ReturnType<typeof cleanupHandler> | undefined;

/** The Lambda entry point; configured from the environment on the first invocation. */
export const handler = (event: unknown, context: Context) => (configured ??= cleanupHandler())(event, context);
