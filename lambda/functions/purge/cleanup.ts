import type { Context } from 'aws-lambda';
import { CLEANUP_SERVICE_NAME, DEFAULT_PURGE_BATCH_SIZE, INBOX_ENV, METRIC_NAMESPACE } from '../../inbox/contract.js';
import type { CleanupMetric } from '../../inbox/contract.js';
import { InboxConfigError } from '../../inbox/index.js';
import type { InboxMetrics } from '../../inbox/index.js';
import { purge } from '../../inbox/sql/purge.js';
import type { PurgeReport } from '../../inbox/sql/purge.js';
import { CALL_TIMEOUT_MS, dataApiSession } from '../scheduled-session.js';
import type { ScheduledSession } from '../scheduled-session.js';
import { EmfMetrics } from '../../inbox/telemetry/emf-metrics.js';

/**
 * Stop starting batches this long before the Lambda's deadline: a DELETE started just before the budget
 * ends and the final age query may each take a whole call timeout, and the metrics must still go out.
 */
const SAFETY_MARGIN_MS = 2 * CALL_TIMEOUT_MS + 5_000;

/**
 * Makes the scheduled purge: deletes inbox rows older than INBOX_RETENTION_SECONDS in batches of
 * INBOX_PURGE_BATCH_SIZE (default 5000) until the Lambda's time runs low, then emits PurgedRows,
 * PurgeMoreRemaining and OldestRowAgeSeconds (namespace SqsInbox, service POWERTOOLS_SERVICE_NAME or
 * inbox-cleanup) so an alarm can tell when the purge is not keeping up. `session` says how it reaches the
 * database: through the Data API (INBOX_RESOURCE_ARN, INBOX_SECRET_ARN) by default; the DSQL function
 * (lambda/functions/dsql-maintenance/) passes its own.
 */
export function cleanupHandler(
  env: NodeJS.ProcessEnv = process.env,
  // The service dimension names this cleanup (the construct makes it unique), so two tables' purges never
  // share one OldestRowAgeSeconds metric and its alarm.
  // The consumers' writer; its on/off switches come from process.env, as Powertools' did.
  metrics: InboxMetrics = new EmfMetrics(env[INBOX_ENV.METRICS_NAMESPACE] ?? METRIC_NAMESPACE, env[INBOX_ENV.SERVICE_NAME] ?? CLEANUP_SERVICE_NAME, undefined),
  session: ScheduledSession = dataApiSession,
) {
  const retentionSeconds = Number(env[INBOX_ENV.RETENTION_SECONDS]);
  if (!Number.isInteger(retentionSeconds) || retentionSeconds < 1) {
    throw new InboxConfigError(INBOX_ENV.RETENTION_SECONDS, `"${env[INBOX_ENV.RETENTION_SECONDS] ?? ''}" must be a positive integer number of seconds`);
  }
  const batchSize = env[INBOX_ENV.PURGE_BATCH_SIZE] ? Number(env[INBOX_ENV.PURGE_BATCH_SIZE]) : DEFAULT_PURGE_BATCH_SIZE;
  const database = session(env);
  return async (_event?: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<PurgeReport> => {
    const remaining = context?.getRemainingTimeInMillis?.() ?? 60_000 + SAFETY_MARGIN_MS;
    if (remaining <= SAFETY_MARGIN_MS) {
      console.warn(
        JSON.stringify({ message: 'inbox purge: the function timeout leaves no time to purge; give it at least 2 minutes', remainingMs: remaining }),
      );
    }
    const report = await purge(database, {
      retentionSeconds,
      batchSize,
      timeBudgetMs: Math.max(1000, remaining - SAFETY_MARGIN_MS),
      ...(env[INBOX_ENV.SCHEMA] ? { schema: env[INBOX_ENV.SCHEMA] } : {}),
    });
    metrics.addMetric('PurgedRows' satisfies CleanupMetric, 'Count', report.deleted);
    metrics.addMetric('PurgeMoreRemaining' satisfies CleanupMetric, 'Count', report.moreRemaining ? 1 : 0);
    metrics.addMetric('OldestRowAgeSeconds' satisfies CleanupMetric, 'Seconds', report.oldestRowAgeSeconds);
    metrics.publishStoredMetrics();
    console.log(JSON.stringify({ message: 'inbox purge', ...report }));
    return report;
  };
}

let configured: ReturnType<typeof cleanupHandler> | undefined;

/** The Lambda entry point; configured from the environment on the first invocation. */
export const handler = (event: unknown, context: Context) => (configured ??= cleanupHandler())(event, context);
