import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { describeSeconds, durationSeconds, rateSeconds } from '../invariants.js';
import type { InboxOutboxRelay } from '../outbox/inbox-outbox-relay.js';
import { InboxConstructError } from '../errors.js';
import { inboxAlarm } from './alarm.js';
import { functionMetric, outboxMetric, outboxMetricPeriod } from './metric-factory.js';

/** What the sweeper's alarms watch, for its dashboard section. */
export interface OutboxAlarms {
  readonly alarms: cloudwatch.Alarm[];
  /** The oldest unsent age that pages, in seconds. */
  readonly maxAge: number;
}

/** 5-minute periods in a row the sweeper must fail before it pages. */
const ERROR_PERIODS = 3;

/**
 * Messages stay unsent: the oldest unsent outbox row older than `maxOutboxAge`, or not reported (the sweeper is not
 * running), and the sweeper failing for 15 minutes. `owner` names InboxAlarms in errors.
 */
export function outboxAlarms(scope: Construct, owner: string, relay: InboxOutboxRelay, maxOutboxAge: Duration | undefined): OutboxAlarms {
  const period = outboxMetricPeriod(relay);
  const maxAge = outboxAgeThreshold(owner, relay, rateSeconds(relay.schedule.expressionString), maxOutboxAge);
  const alarms = [
    inboxAlarm(scope, 'OldestUnsentAge', {
      metric: outboxMetric(relay, 'OutboxOldestUnsentAgeSeconds', 'Maximum'),
      threshold: maxAge,
      // Every run reports the age (0 when nothing is left), so a period without a report means the sweeper is not
      // running or dies before it reports: messages a crash leaves unsent would wait forever, so that pages too.
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      description:
        `An outbox message has waited more than ${describeSeconds(maxAge)} to be sent, or the outbox sweeper reported nothing ` +
        `for ${describeSeconds(period.toSeconds())}: sends keep failing (see last_error of the unsent rows in ` +
        "inbox.outbox_message, and the sweeper's logs) or the sweeper is not running (see its Invocations and Errors).",
    }),
    inboxAlarm(scope, 'Errors', {
      metric: functionMetric(relay.function, 'Errors', 'Sum', Duration.minutes(5)),
      threshold: 0,
      // A failed run leaves its rows unsent for the next one, which is at most one interval away: one error is no
      // reason to page anyone, failing runs for 15 minutes are.
      evaluationPeriods: ERROR_PERIODS,
      datapointsToAlarm: ERROR_PERIODS,
      description: `The outbox sweeper failed in each of the last ${ERROR_PERIODS * 5} minutes: messages left unsent are not being sent.`,
    }),
  ];
  return { alarms, maxAge };
}

/**
 * The oldest unsent age that pages, in seconds: it must exceed the longest a row normally waits (the relay's `minAge`
 * plus the schedule's interval), or every crash would page although the sweeper sends its rows.
 */
function outboxAgeThreshold(owner: string, relay: InboxOutboxRelay, interval: number | undefined, maxAge: Duration | undefined): number {
  const wait = (durationSeconds(relay.minAge) ?? 0) + (interval ?? 0);
  const given = durationSeconds(maxAge);
  if (given === undefined) return Math.max(15 * 60, wait + 5 * 60);
  if (given <= wait) {
    throw InboxConstructError.of(
      owner,
      [
        `\`maxOutboxAge\` (${describeSeconds(given)}) does not exceed the longest an outbox row normally waits ` +
          `for the sweeper: its \`minAge\` (${relay.minAge.toHumanString()}) plus its schedule's interval (${relay.schedule.expressionString}). ` +
          `Every crash would page although the sweeper sends its rows. Fix: set \`maxOutboxAge\` above ${describeSeconds(wait)}, or ` +
          'run the sweeper more often.',
      ],
      'line',
    );
  }
  return given;
}
