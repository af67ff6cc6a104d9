import { Annotations, Duration, Names, Stack, Token } from 'aws-cdk-lib';
import type { CustomResource } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as rds from 'aws-cdk-lib/aws-rds';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { IConstruct } from 'constructs';
import type { InboxConsumer } from '../consumer/inbox-consumer.js';
import type { InboxDatabase } from '../database/inbox-database.js';
import type { InboxDatabaseRole } from '../database/inbox-database-role.js';
import type { InboxDsqlConsumer } from '../dsql/inbox-dsql-consumer.js';
import { InboxDsqlDatabase } from '../dsql/inbox-dsql-database.js';
import { addInvariants, describeSeconds, durationSeconds, rateSeconds } from '../invariants.js';
import type { InvariantViolation } from '../invariants.js';
import { distinctQueues, grantSendMessage } from './outbox-destinations.js';
import type { OutboxDestinations } from './outbox-destinations.js';
import { maintenanceFunction } from '../database/maintenance-function.js';
import { INBOX_ENV, METRIC_NAMESPACE, OUTBOX_SERVICE_NAME, OUTBOX_SWEEP_DEFAULTS } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

/**
 * The sweeper's default `service` dimension of its metrics (the runtime's, when POWERTOOLS_SERVICE_NAME is unset),
 * and the prefix of every {@link InboxOutboxRelay.serviceName}.
 */
export { OUTBOX_SERVICE_NAME };
/** The runtime's default for INBOX_OUTBOX_MIN_AGE_SECONDS: younger rows are left to the handler that wrote them. */
export const DEFAULT_OUTBOX_MIN_AGE = Duration.seconds(OUTBOX_SWEEP_DEFAULTS.minAgeSeconds);
/** The runtime's default for INBOX_OUTBOX_SWEEP_LIMIT: unsent rows per sweep, oldest first. */
export const DEFAULT_OUTBOX_SWEEP_LIMIT = OUTBOX_SWEEP_DEFAULTS.limit;
/** The runtime's default for INBOX_OUTBOX_SENT_RETENTION_SECONDS: how long a sent row is kept. */
export const DEFAULT_OUTBOX_SENT_RETENTION = Duration.seconds(OUTBOX_SWEEP_DEFAULTS.sentRetentionSeconds);
/**
 * The shortest sweeper timeout: one Data API call of the sweep may take 30 seconds, and the first call after an
 * Aurora pause waits up to 25 seconds more for the resume.
 */
export const MIN_OUTBOX_RELAY_TIMEOUT = Duration.minutes(1);
/** The longest time between sweeps: a row left by a crash waits for the next one. */
const MAX_SCHEDULE_INTERVAL_SECONDS = 24 * 3600;

/** Props for {@link InboxOutboxRelay}. */
export interface InboxOutboxRelayProps {
  /**
   * The database whose outbox table (`inbox.outbox_message`) is swept: an Aurora cluster through the Data API, or an
   * Aurora DSQL cluster (the sweeper then signs in with `dsql:DbConnect` as its own role, mapped by the DSQL schema
   * function).
   */
  readonly database: InboxDatabase | InboxDsqlDatabase;
  /**
   * The consumers whose outbox rows this relay sends: it may send to every queue in their `destinations`, read
   * from the consumers themselves, so a destination added to a consumer is never missing here. Each must use
   * `database`: InboxConsumers on an InboxDatabase, InboxDsqlConsumers on an InboxDsqlDatabase. Synth fails when a
   * consumer with `destinations` on this database is not listed.
   */
  readonly consumers: readonly (InboxConsumer | InboxDsqlConsumer)[];
  /**
   * When the sweeper runs. Every run reads the outbox table, so it wakes an auto-paused database: a schedule
   * shorter than the database's `autoPause` keeps it from ever pausing (synth warns).
   * @default events.Schedule.rate(Duration.minutes(1))
   */
  readonly schedule?: events.Schedule | undefined;
  /**
   * Rows younger than this are left to the invocation that wrote them, which sends them after its batch
   * (`INBOX_OUTBOX_MIN_AGE_SECONDS`). Shorter than a consumer's `timeout`, the sweeper sends rows that invocation
   * is about to send too: harmless (the stable key drops the copy on a FIFO queue, the next inbox on a standard
   * one), but wasted, so synth warns.
   * @default - the runtime's 60 seconds, or the longest `timeout` of `consumers` when that is longer
   */
  readonly minAge?: Duration | undefined;
  /**
   * Unsent rows sent per run at most, oldest first (`INBOX_OUTBOX_SWEEP_LIMIT`).
   * @default 500 (the runtime's default)
   */
  readonly sweepLimit?: number | undefined;
  /**
   * How long a sent row is kept before the sweeper deletes it (`INBOX_OUTBOX_SENT_RETENTION_SECONDS`): a record of
   * what was sent, when, after how many attempts.
   * @default Duration.days(7) (the runtime's default)
   */
  readonly sentRetention?: Duration | undefined;
  /**
   * Function timeout, at least 1 minute. A run cut short resends the rows it sent but had not yet marked, under
   * the same keys.
   * @default Duration.minutes(2)
   */
  readonly timeout?: Duration | undefined;
  /**
   * Retention of the function's log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
  /**
   * The sweeper's own PostgreSQL role, which its function signs in as: SELECT, DELETE and UPDATE of `sent_at`,
   * `attempts`, `last_error` on the outbox table, every consumer's rows (row-level security does not scope it), and
   * nothing on the claims or parked messages, under its own name and secret. Unique per cluster.
   * @default 'inbox_outbox_relay'
   */
  readonly databaseRole?: string | undefined;
}

/**
 * Sends the outbox rows that consumers committed but never sent (an invocation that crashed or timed out between
 * its commit and its relay, or a send SQS refused), with lambda/functions/outbox-sweeper/outbox-sweeper.ts on a schedule (every
 * minute by default): oldest first, in order per FIFO group, under each row's stable idempotency key. It also
 * deletes sent rows after `sentRetention` and reports the oldest unsent row's age (`OutboxOldestUnsentAgeSeconds`),
 * which InboxAlarms' `outboxRelay` alarms on. The function signs in as its own database role and may call
 * `sqs:SendMessage` on the `destinations` of its `consumers` (and use their queues' customer managed keys), nothing
 * else. An EventBridge rule invokes it: no extra IAM role, and a missed run is caught up by the next.
 *
 * One relay per outbox table: two would send the same rows twice.
 *
 * @example
 * const shipper = new InboxConsumer(this, 'Shipper', { ..., destinations: { invoices: invoices.queue } });
 * const relay = new InboxOutboxRelay(this, 'OutboxRelay', { database, consumers: [shipper] });
 * new InboxAlarms(this, 'Alarms', { consumers: [shipper], outboxRelay: relay, createTopic: true });
 */
export class InboxOutboxRelay extends Construct {
  /** The sweeper function. */
  public readonly function: lambda.Function;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** The schedule rule. */
  public readonly rule: events.Rule;
  /** When the sweeper runs. */
  public readonly schedule: events.Schedule;
  /** The database whose outbox table is swept. */
  public readonly database: InboxDatabase | InboxDsqlDatabase;
  /** The consumers whose destinations it may send to. */
  public readonly consumers: readonly (InboxConsumer | InboxDsqlConsumer)[];
  /** Rows younger than this are left to the invocation that wrote them. */
  public readonly minAge: Duration;
  /** Unsent rows per run at most. */
  public readonly sweepLimit: number;
  /** How long a sent row is kept. */
  public readonly sentRetention: Duration;
  /** The sweeper's own database role and its secret; on Aurora DSQL none (see `roleMapping`). */
  public readonly databaseRole?: InboxDatabaseRole;
  /** On Aurora DSQL: the mapping of the sweeper's own role to its function's IAM role (`Custom::InboxDsqlRole`). */
  public readonly roleMapping?: CustomResource;
  /**
   * The `service` dimension of this relay's metrics (`POWERTOOLS_SERVICE_NAME`), unique per InboxOutboxRelay:
   * `inbox-outbox-<construct path>-<hash of the path>`.
   */
  public readonly serviceName: string;
  readonly #destinations: sqs.IQueue[] = [];

  constructor(scope: Construct, id: string, props: InboxOutboxRelayProps) {
    super(scope, id);
    validateProps(this.node.path, props);
    this.database = props.database;
    this.consumers = [...new Set(props.consumers)];
    this.schedule = props.schedule ?? events.Schedule.rate(Duration.minutes(1));
    const longestTimeout = longestConsumerTimeout(this.consumers);
    this.minAge = props.minAge ?? defaultMinAge(longestTimeout);
    this.sweepLimit = props.sweepLimit ?? DEFAULT_OUTBOX_SWEEP_LIMIT;
    this.sentRetention = props.sentRetention ?? DEFAULT_OUTBOX_SENT_RETENTION;
    const timeout = props.timeout ?? Duration.minutes(2);
    this.serviceName = `${OUTBOX_SERVICE_NAME}-${Names.uniqueResourceName(this, {
      separator: '-',
      maxLength: 200,
      allowedSpecialCharacters: '-_.',
    })}`;

    const roleName = props.databaseRole ?? 'inbox_outbox_relay';
    const environment = {
      [INBOX_ENV.OUTBOX_MIN_AGE_SECONDS]: secondsString(this.minAge),
      [INBOX_ENV.OUTBOX_SWEEP_LIMIT]: Token.isUnresolved(this.sweepLimit) ? Token.asString(this.sweepLimit) : String(this.sweepLimit),
      [INBOX_ENV.OUTBOX_SENT_RETENTION_SECONDS]: secondsString(this.sentRetention),
      [INBOX_ENV.METRICS_NAMESPACE]: METRIC_NAMESPACE,
      [INBOX_ENV.SERVICE_NAME]: this.serviceName,
    };
    const description = 'sqs-inbox outbox sweeper: sends the outbox rows left unsent';
    const made = maintenanceFunction(this, {
      database: props.database,
      roleName,
      // Exactly the sweep: read unsent rows, mark them sent, delete old sent ones; no claim.
      purpose: 'outbox',
      aurora: 'outbox-sweeper',
      dsqlHandler: 'sweep',
      id: 'Sweeper',
      mappingPrefix: 'Outbox',
      label: `outbox relay ${this.serviceName}`,
      description,
      timeout,
      environment,
      logRetention: props.logRetention,
    });
    this.function = made.function;
    this.logGroup = made.logGroup;
    this.databaseRole = made.databaseRole;
    this.roleMapping = made.roleMapping;
    for (const queue of distinctQueues(this.consumers.flatMap((consumer) => Object.values(consumer.destinations)))) {
      this.addDestination(queue);
    }

    this.rule = new events.Rule(this, 'Schedule', {
      description: 'Runs the sqs-inbox outbox sweeper',
      schedule: this.schedule,
      // The next scheduled run does the same work, so a stale or repeatedly failing event is dropped.
      targets: [new targets.LambdaFunction(this.function, { retryAttempts: 2, maxEventAge: Duration.hours(1) })],
    });

    this.#warn(props, longestTimeout);
    addInvariants(this, () => [...checkRelayTimeout(durationSeconds(timeout)), ...this.#tableViolations()]);
  }

  /** The queues the sweeper may send to: its consumers' destinations and any added with {@link InboxOutboxRelay.addDestination}. */
  public get destinations(): readonly sqs.IQueue[] {
    return [...this.#destinations];
  }

  /** The inbox table (and its outbox) this relay sweeps. */
  public get tableKey(): string {
    return this.database.tableKey;
  }

  /**
   * Lets the sweeper send to a queue no consumer names in `destinations`: for rows written with `tx.send({ to: url })`
   * and a queue URL (grant the consumer the same, e.g. with `queue.grant(consumer.function, 'sqs:SendMessage')`).
   * Grants `sqs:SendMessage` and, for a customer managed key, `kms:GenerateDataKey` and `kms:Decrypt`.
   */
  public addDestination(queue: sqs.IQueue): void {
    if (this.#destinations.includes(queue)) return;
    this.#destinations.push(queue);
    grantSendMessage(this.function, queue);
  }

  /** Whether this relay may send to the destinations of `consumer`. */
  public relays(consumer: IConstruct): boolean {
    return (this.consumers as readonly IConstruct[]).includes(consumer);
  }

  /** Two sweepers over one table would send the same rows twice; the later of a pair reports. */
  #tableViolations(): InvariantViolation[] {
    const earlier: string[] = [];
    for (const other of this.node.root.node.findAll()) {
      if (other === this) break;
      if (other instanceof InboxOutboxRelay && other.tableKey === this.tableKey) earlier.push(other.node.path);
    }
    if (earlier.length === 0) return [];
    return [
      {
        problem:
          `InboxOutboxRelay ${this.node.path} sweeps ${this.database.tableDescription}, as ${earlier.join(', ')} does: ` +
          'both would send every row left unsent.',
        fix: 'use one InboxOutboxRelay per database and list every consumer that sends in its `consumers`.',
      },
    ];
  }

  /** What is legal but costs money or work: said at synth, not refused. */
  #warn(props: InboxOutboxRelayProps, longestTimeout: number | undefined): void {
    const interval = rateSeconds(this.schedule.expressionString);
    const pause = autoPauseSeconds(props.database);
    if (interval !== undefined && pause !== undefined && interval <= pause) {
      Annotations.of(this).addWarningV2(
        'sqs-inbox:outbox-relay-keeps-database-awake',
        `The outbox sweeper runs ${this.schedule.expressionString}, at least as often as the database auto-pauses ` +
          `(${describeSeconds(pause)} idle): every run reads the outbox table, so the cluster never pauses and is billed ` +
          'for its running capacity around the clock. Accept it, or run the sweeper less often than the auto-pause ' +
          '(`schedule`) and raise InboxAlarms `maxOutboxAge` above the longer wait.',
      );
    }
    const minAge = durationSeconds(this.minAge);
    if (props.minAge !== undefined && minAge !== undefined && longestTimeout !== undefined && minAge < longestTimeout) {
      Annotations.of(this).addWarningV2(
        'sqs-inbox:outbox-relay-min-age-below-consumer-timeout',
        `InboxOutboxRelay \`minAge\` (${describeSeconds(minAge)}) is shorter than the longest \`timeout\` of its consumers ` +
          `(${describeSeconds(longestTimeout)}): the sweeper will send rows that the invocation which wrote them is about to ` +
          'send too. Harmless (the copy is dropped by the FIFO queue or the next inbox), but wasted; leave `minAge` unset ' +
          'for the longest timeout.',
      );
    }
  }
}

/** A consumer that may send through its outbox: InboxConsumer or InboxDsqlConsumer. */
export interface OutboxSender extends IConstruct {
  readonly consumerName: string;
  readonly destinations: OutboxDestinations;
  readonly database: { readonly tableKey: string; readonly tableDescription: string };
}

/**
 * A consumer that sends needs a relay over its table that may send to its destinations: the handler sends its
 * rows after its commits, but the rows an invocation that crashed or timed out left behind are sent by the
 * relay's sweeper only, and without one they would never be. `owner` names the consumer, e.g. `InboxConsumer App/Worker`.
 */
export function outboxRelayViolations(owner: string, consumer: OutboxSender): InvariantViolation[] {
  const names = Object.keys(consumer.destinations);
  if (names.length === 0) return [];
  const overTable = consumer.node.root.node
    .findAll()
    .filter((c): c is InboxOutboxRelay => c instanceof InboxOutboxRelay && c.tableKey === consumer.database.tableKey);
  if (overTable.some((relay) => relay.relays(consumer))) return [];
  const sends = `${owner} sends to ${names.map((name) => `'${name}'`).join(', ')} through its outbox`;
  if (overTable.length === 0) {
    return [
      {
        problem:
          `${sends}, but no InboxOutboxRelay sweeps ${consumer.database.tableDescription}: the messages an invocation that crashed ` +
          'or timed out after its commit left unsent would never be sent.',
        fix: "add `new InboxOutboxRelay(this, 'OutboxRelay', { database, consumers: [consumer] })` (InboxStack does this for its consumers).",
      },
    ];
  }
  return [
    {
      problem:
        `${sends}, but the InboxOutboxRelay over its table (${overTable.map((relay) => relay.node.path).join(', ')}) does not list it ` +
        "in `consumers`, so its sweeper may not send to this consumer's destinations: what it leaves unsent would fail to send.",
      fix: "add the consumer to that relay's `consumers`.",
    },
  ];
}

/** Props that cannot work, all at once. */
function validateProps(path: string, props: InboxOutboxRelayProps): void {
  const problems: string[] = [];
  const wholeSeconds = (name: string, value: Duration | undefined) => {
    const seconds = durationSeconds(value);
    if (seconds !== undefined && !(Number.isInteger(seconds) && seconds >= 0)) {
      problems.push(
        `\`${name}\` must be a whole number of seconds, got ${seconds}. Fix: use Duration.seconds(), .minutes(), .hours() or .days() with an integer.`,
      );
    }
  };
  wholeSeconds('minAge', props.minAge);
  wholeSeconds('sentRetention', props.sentRetention);
  const limit = props.sweepLimit;
  if (limit !== undefined && !Token.isUnresolved(limit) && !(Number.isInteger(limit) && limit > 0)) {
    problems.push(`\`sweepLimit\` must be a positive integer, got ${limit}. Fix: pass e.g. 500, or leave it unset for the runtime default.`);
  }
  if (!Array.isArray(props.consumers)) {
    problems.push('`consumers` must list the consumers whose outbox rows this relay sends. Fix: pass e.g. `consumers: [worker]` (`[]` for none).');
  } else {
    for (const consumer of props.consumers) {
      if (consumer.database.tableKey !== props.database.tableKey) {
        problems.push(
          `consumer '${consumer.consumerName}' (${consumer.node.path}) writes its outbox in ${consumer.database.tableDescription}, ` +
            `not in ${props.database.tableDescription}, which this relay sweeps. Fix: give it a relay over its own \`database\`.`,
        );
      }
    }
  }
  const interval = props.schedule === undefined ? undefined : rateSeconds(props.schedule.expressionString);
  if (interval !== undefined && interval > MAX_SCHEDULE_INTERVAL_SECONDS) {
    problems.push(
      `\`schedule\` runs the sweeper ${props.schedule!.expressionString}: a message a crash left unsent would wait that long. ` +
        'Fix: run it at least daily (every minute by default).',
    );
  }
  if (problems.length > 0) throw InboxConstructError.of(`InboxOutboxRelay ${path}`, problems);
}

/** The longest function timeout of the consumers, in seconds; `undefined` when there is none or one is a token. */
function longestConsumerTimeout(consumers: readonly (InboxConsumer | InboxDsqlConsumer)[]): number | undefined {
  const seconds = consumers.map((consumer) => durationSeconds(consumer.function.timeout));
  if (seconds.length === 0 || seconds.some((s) => s === undefined)) return undefined;
  return Math.max(...(seconds as number[]));
}

/** The runtime's 60 seconds, or the longest consumer timeout: a row younger than that may still be sent by its writer. */
function defaultMinAge(longestTimeout: number | undefined): Duration {
  const runtime = DEFAULT_OUTBOX_MIN_AGE.toSeconds();
  return longestTimeout !== undefined && longestTimeout > runtime ? Duration.seconds(Math.ceil(longestTimeout)) : DEFAULT_OUTBOX_MIN_AGE;
}

/** Every run needs time for its Data API calls and a resume; a shorter timeout cuts runs off mid-send. */
function checkRelayTimeout(timeoutSeconds: number | undefined): InvariantViolation[] {
  const minimum = MIN_OUTBOX_RELAY_TIMEOUT.toSeconds();
  if (timeoutSeconds === undefined || timeoutSeconds >= minimum) return [];
  return [
    {
      problem:
        `InboxOutboxRelay \`timeout\` is ${describeSeconds(timeoutSeconds)}, but one Data API call of the sweep may take 30 seconds ` +
        'and an Aurora resume 25 seconds more: runs would be cut off, resending what they sent but had not marked.',
      fix: `set \`timeout\` to at least ${describeSeconds(minimum)} (the default is 2 minutes).`,
    },
  ];
}

/** The idle time after which a cluster created here pauses; `undefined` when it does not auto-pause or is not known. */
function autoPauseSeconds(database: InboxDatabase | InboxDsqlDatabase): number | undefined {
  // Aurora DSQL is serverless without a pause: nothing to keep awake.
  if (database instanceof InboxDsqlDatabase) return undefined;
  const cluster = database.cluster.node.findAll().find((c): c is rds.CfnDBCluster => c instanceof rds.CfnDBCluster);
  if (cluster === undefined) return undefined;
  // DatabaseCluster sets the scaling configuration lazily; its values are plain numbers once resolved.
  const scaling: unknown = Stack.of(cluster).resolve(cluster.serverlessV2ScalingConfiguration);
  if (scaling === undefined || scaling === null || typeof scaling !== 'object') return undefined;
  const { minCapacity, secondsUntilAutoPause } = scaling as { minCapacity?: unknown; secondsUntilAutoPause?: unknown };
  if (minCapacity !== 0 || typeof secondsUntilAutoPause !== 'number') return undefined;
  return secondsUntilAutoPause;
}

function secondsString(duration: Duration): string {
  const seconds = duration.toSeconds();
  return Token.isUnresolved(seconds) ? Token.asString(seconds) : String(seconds);
}
