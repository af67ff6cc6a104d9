import { Duration, Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as events from 'aws-cdk-lib/aws-events';
import type { Construct } from 'constructs';
import { rateSeconds } from '../invariants.js';
import type { InboxCleanup } from '../purge/inbox-cleanup.js';
import { InboxConstructError } from '../errors.js';
import { inboxAlarm } from './alarm.js';
import { cleanupMetric, functionMetric } from './metric-factory.js';

/** The thresholds of {@link cleanupAlarms}, as InboxAlarms takes them. */
export interface CleanupThresholds {
  /** @default Duration.hours(6) */
  readonly lagMargin?: Duration | undefined;
  /** @default - the schedule's interval plus an hour; 25 hours for a `cron()` schedule */
  readonly maxSilence?: Duration | undefined;
}

/** What the purge's alarms watch, for its dashboard section. */
export interface CleanupAlarms {
  readonly alarms: cloudwatch.Alarm[];
  /** The oldest row age that pages, in seconds; `undefined` when the retention is a token (then no such alarm). */
  readonly threshold: number | undefined;
}

const HOUR_SECONDS = 3600;
/** CloudWatch evaluates hourly periods over at most 7 days. */
const MAX_SILENCE_HOURS = 7 * 24;

/**
 * The purge fails, or does not keep the table within its retention: the oldest inbox row older than the retention
 * plus `lagMargin`, or not reported at all for longer than the schedule's interval (the purge stopped running).
 * `owner` names InboxAlarms in errors.
 */
export function cleanupAlarms(scope: Construct, owner: string, cleanup: InboxCleanup, thresholds: CleanupThresholds): CleanupAlarms {
  const alarms = [
    inboxAlarm(scope, 'Errors', {
      metric: functionMetric(cleanup.function, 'Errors', 'Sum', Duration.hours(1)),
      threshold: 0,
      description: 'The inbox purge failed: old inbox rows are not being deleted.',
    }),
  ];
  const margin = thresholds.lagMargin ?? Duration.hours(6);
  const retention = cleanup.retention.toSeconds();
  const threshold = Token.isUnresolved(retention) ? undefined : retention + margin.toSeconds();
  if (threshold !== undefined) {
    const silenceHours = maxSilenceHours(owner, cleanup.schedule, thresholds.maxSilence);
    alarms.push(
      inboxAlarm(scope, 'NotKeepingUp', {
        metric: cleanupMetric(cleanup, 'OldestRowAgeSeconds', 'Maximum'),
        threshold,
        // Every run reports the age, so hours without a report mean the purge is not running (or dies before
        // reporting): that must page too, not look like "all fine". The window is longer than the schedule's
        // interval, so one late or skipped run does not.
        evaluationPeriods: silenceHours,
        datapointsToAlarm: silenceHours,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
        description:
          `The oldest inbox row is older than the retention (${cleanup.retention.toHumanString()}) plus ` +
          `${margin.toHumanString()}, or the purge reported nothing for ${silenceHours} hours: it is not keeping up ` +
          '(see PurgeMoreRemaining; raise its batch size or frequency) or not running (see its Invocations and logs).',
      }),
    );
  }
  return { alarms, threshold };
}

/** Hourly periods the cleanup may stay silent: longer than its schedule's interval. */
function maxSilenceHours(owner: string, schedule: events.Schedule, maxSilence: Duration | undefined): number {
  if (maxSilence !== undefined && !maxSilence.isUnresolved()) {
    const hours = maxSilence.toSeconds() / HOUR_SECONDS;
    const interval = rateSeconds(schedule.expressionString);
    const problems = [
      ...(Number.isInteger(hours) && hours >= 1 && hours <= MAX_SILENCE_HOURS
        ? []
        : [`must be whole hours from 1 to ${MAX_SILENCE_HOURS}, got ${maxSilence.toHumanString()}`]),
      ...(interval !== undefined && hours * HOUR_SECONDS <= interval
        ? [`must be longer than the cleanup schedule's interval (${schedule.expressionString}), or every gap between runs would page`]
        : []),
    ];
    if (problems.length > 0) {
      throw InboxConstructError.of(
        owner,
        [`\`cleanupMaxSilence\` ${problems.join('; ')}. Fix: set it to whole hours longer than the schedule's interval.`],
        'line',
      );
    }
    return hours;
  }
  const interval = rateSeconds(schedule.expressionString);
  if (interval === undefined) return 25;
  const hours = Math.ceil(interval / HOUR_SECONDS) + 1;
  if (hours > MAX_SILENCE_HOURS) {
    throw InboxConstructError.of(
      owner,
      [
        `the cleanup runs less often (${schedule.expressionString}) than CloudWatch can watch for ` +
          `silence (${MAX_SILENCE_HOURS} hours). Fix: run the cleanup at least every 6 days.`,
      ],
      'line',
    );
  }
  return hours;
}
