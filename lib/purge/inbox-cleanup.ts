import { Duration, Names, Token } from 'aws-cdk-lib';
import type { CustomResource } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { InboxConsumer } from '../consumer/inbox-consumer.js';
import type { InboxDatabase } from '../database/inbox-database.js';
import type { InboxDatabaseRole } from '../database/inbox-database-role.js';
import { InboxDsqlDatabase } from '../dsql/inbox-dsql-database.js';
import { InboxDsqlConsumer } from '../dsql/inbox-dsql-consumer.js';
import { redeliveryWindowSource } from '../sources/source.js';
import { addInvariants, checkRetentionCoversRedelivery, describeSeconds, durationSeconds } from '../invariants.js';
import type { InvariantViolation } from '../invariants.js';
import { maintenanceFunction } from '../database/maintenance-function.js';
import { CLEANUP_SERVICE_NAME, INBOX_ENV, METRIC_NAMESPACE } from '../../lambda/inbox/contract.js';
import { InboxConstructError } from '../errors.js';

/**
 * The runtime's default `service` dimension of the cleanup metrics, and the prefix of every
 * {@link InboxCleanup.serviceName}.
 */
export { CLEANUP_SERVICE_NAME };

/**
 * The shortest cleanup timeout: the runtime keeps max(10 s, 2 x its 30 s call timeout + 5 s) = 65 s of the
 * invocation for the final age query and the metrics, and needs time to purge before that.
 */
export const MIN_CLEANUP_TIMEOUT = Duration.minutes(2);

/** Props for {@link InboxCleanup}. */
export interface InboxCleanupProps {
  /**
   * The database whose inbox table is purged: an Aurora cluster through the Data API, or an Aurora DSQL cluster
   * (its function then signs in with `dsql:DbConnect` as its own role, mapped by the DSQL schema function).
   */
  readonly database: InboxDatabase | InboxDsqlDatabase;
  /**
   * How long an inbox row is kept. It must exceed the longest redelivery window of every consumer of the
   * table (queue retention plus dead-letter queue retention; a stream's or topic's retention); synth fails otherwise.
   * @default Duration.days(30) (more than SQS's longest possible window: 14 + 14 days)
   */
  readonly retention?: Duration | undefined;
  /**
   * When the purge runs.
   * @default events.Schedule.rate(Duration.hours(1))
   */
  readonly schedule?: events.Schedule | undefined;
  /**
   * Rows deleted per statement (`INBOX_PURGE_BATCH_SIZE`). On Aurora DSQL at most 3,000, the rows one transaction
   * may modify (synth fails above it).
   * @default 5000 (the cleanup function's own default; the variable is then left unset); on DSQL 3000
   */
  readonly purgeBatchSize?: number | undefined;
  /**
   * Function timeout; the purge stops in time and reports `PurgeMoreRemaining` when rows are left.
   * At least 2 minutes: the runtime reserves 65 s of it to measure the oldest row and publish the metrics.
   * @default Duration.minutes(5)
   */
  readonly timeout?: Duration | undefined;
  /**
   * Retention of the function's log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays | undefined;
  /**
   * The purge's own PostgreSQL role, which its function signs in as: SELECT and DELETE on the inbox table
   * (and UPDATE of its `processed_at`, which the purge's row locks need), nothing else. Unique per cluster.
   * @default 'inbox_purge'
   */
  readonly databaseRole?: string | undefined;
}

/**
 * Deletes inbox rows older than `retention` on a schedule (hourly by default), with
 * lambda/functions/purge/cleanup.ts, signed in as its own database role (`databaseRole`) that may only read and
 * delete inbox rows. An EventBridge rule invokes it: no extra IAM role, and a missed run
 * is simply caught up by the next one.
 *
 * @example
 * new InboxCleanup(this, 'Cleanup', { database, retention: Duration.days(30) });
 */
export class InboxCleanup extends Construct {
  /** The purge function. */
  public readonly function: lambda.Function;
  /** The function's log group. */
  public readonly logGroup: logs.LogGroup;
  /** The schedule rule. */
  public readonly rule: events.Rule;
  /** How long an inbox row is kept. */
  public readonly retention: Duration;
  /** The database whose inbox table is purged. */
  public readonly database: InboxDatabase | InboxDsqlDatabase;
  /** When the purge runs. */
  public readonly schedule: events.Schedule;
  /** The purge's own database role and its secret; on Aurora DSQL none (see `roleMapping`). */
  public readonly databaseRole?: InboxDatabaseRole;
  /** On Aurora DSQL: the mapping of the purge's own role to its function's IAM role (`Custom::InboxDsqlRole`). */
  public readonly roleMapping?: CustomResource;
  /**
   * The `service` dimension of this cleanup's metrics (`POWERTOOLS_SERVICE_NAME`), unique per InboxCleanup
   * so that two cleanups (other tables, other retentions) never share one metric:
   * `inbox-cleanup-<construct path>-<hash of the path>`.
   */
  public readonly serviceName: string;

  constructor(scope: Construct, id: string, props: InboxCleanupProps) {
    super(scope, id);
    this.database = props.database;
    this.retention = props.retention ?? Duration.days(30);
    const retentionSeconds = durationSeconds(this.retention);
    if (retentionSeconds !== undefined && !Number.isInteger(retentionSeconds)) {
      throw InboxConstructError.of(
        `InboxCleanup ${this.node.path}`,
        [
          `\`retention\` must be a whole number of seconds, got ${retentionSeconds}. ` +
            'Fix: use Duration.days(), .hours(), .minutes() or .seconds() with an integer.',
        ],
        'line',
      );
    }
    if (
      props.purgeBatchSize !== undefined &&
      !Token.isUnresolved(props.purgeBatchSize) &&
      !(Number.isInteger(props.purgeBatchSize) && props.purgeBatchSize > 0)
    ) {
      throw InboxConstructError.of(
        `InboxCleanup ${this.node.path}`,
        [`\`purgeBatchSize\` must be a positive integer, got ${props.purgeBatchSize}. Fix: pass e.g. 1000, or leave it unset for the runtime default.`],
        'line',
      );
    }

    const timeout = props.timeout ?? Duration.minutes(5);
    addInvariants(this, () => [...this.#retentionViolations(retentionSeconds), ...checkCleanupTimeout(durationSeconds(timeout))]);
    this.serviceName = `${CLEANUP_SERVICE_NAME}-${Names.uniqueResourceName(this, {
      separator: '-',
      maxLength: 200,
      allowedSpecialCharacters: '-_.',
    })}`;
    this.schedule = props.schedule ?? events.Schedule.rate(Duration.hours(1));

    const roleName = props.databaseRole ?? 'inbox_purge';
    const environment = {
      [INBOX_ENV.RETENTION_SECONDS]: secondsString(this.retention),
      ...(props.purgeBatchSize === undefined ? {} : { [INBOX_ENV.PURGE_BATCH_SIZE]: props.purgeBatchSize.toString() }),
      [INBOX_ENV.METRICS_NAMESPACE]: METRIC_NAMESPACE,
      [INBOX_ENV.SERVICE_NAME]: this.serviceName,
    };
    const description = 'sqs-inbox scheduled purge of old inbox rows';
    const database = props.database;
    const batchSize = props.purgeBatchSize;
    if (database instanceof InboxDsqlDatabase && batchSize !== undefined && !Token.isUnresolved(batchSize) && batchSize > DSQL_MAX_MODIFIED_ROWS) {
      throw InboxConstructError.of(
        `InboxCleanup ${this.node.path}`,
        [
          `\`purgeBatchSize\` ${batchSize} is above the ${DSQL_MAX_MODIFIED_ROWS} rows one Aurora DSQL transaction may modify. ` +
            `Fix: pass at most ${DSQL_MAX_MODIFIED_ROWS}, or leave it unset.`,
        ],
        'line',
      );
    }
    const made = maintenanceFunction(this, {
      database,
      roleName,
      // SELECT and DELETE on the inbox table.
      purpose: 'purge',
      aurora: 'purge',
      dsqlHandler: 'purge',
      id: 'Purge',
      mappingPrefix: 'Purge',
      label: `purge ${this.serviceName}`,
      description,
      timeout,
      environment,
      logRetention: props.logRetention,
    });
    this.function = made.function;
    this.logGroup = made.logGroup;
    this.databaseRole = made.databaseRole;
    this.roleMapping = made.roleMapping;

    this.rule = new events.Rule(this, 'Schedule', {
      description: 'Runs the sqs-inbox purge',
      schedule: this.schedule,
      // The next scheduled run does the same work, so a stale or repeatedly failing event is dropped.
      targets: [new targets.LambdaFunction(this.function, { retryAttempts: 2, maxEventAge: Duration.hours(1) })],
    });
  }

  /** Every consumer of this table must have its redelivery window covered by the retention. */
  #retentionViolations(retentionSeconds: number | undefined): ReturnType<typeof checkRetentionCoversRedelivery> {
    return this.node.root.node
      .findAll()
      .filter(
        (c): c is InboxConsumer | InboxDsqlConsumer =>
          (c instanceof InboxConsumer || c instanceof InboxDsqlConsumer) && c.database.tableKey === this.database.tableKey,
      )
      .flatMap((consumer) =>
        checkRetentionCoversRedelivery({
          retentionSeconds,
          consumerName: consumer.consumerName,
          windowSeconds: consumer.redeliveryWindowSeconds,
          window: redeliveryWindowSource(consumer.source),
        }),
      );
  }
}

/** A shorter timeout leaves the purge no time before the runtime's reserve, so no metrics would ever be published. */
function checkCleanupTimeout(timeoutSeconds: number | undefined): InvariantViolation[] {
  const minimum = MIN_CLEANUP_TIMEOUT.toSeconds();
  if (timeoutSeconds === undefined || timeoutSeconds >= minimum) return [];
  return [
    {
      problem:
        `InboxCleanup \`timeout\` is ${describeSeconds(timeoutSeconds)}, but the purge keeps 65 seconds of it to measure ` +
        'the oldest row and publish its metrics, so it could never purge and report within it.',
      fix: `set \`timeout\` to at least ${describeSeconds(minimum)} (the default is 5 minutes).`,
    },
  ];
}

/** Aurora DSQL modifies at most this many rows in one transaction (its quotas page): a purge batch is one. */
const DSQL_MAX_MODIFIED_ROWS = 3000;

function secondsString(duration: Duration): string {
  const seconds = duration.toSeconds();
  return Token.isUnresolved(seconds) ? Token.asString(seconds) : String(seconds);
}
