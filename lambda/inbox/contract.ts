/**
 * What the runtime shares with the constructs (`lib/`) and the testkit (`local/`): the environment variables a
 * construct sets and a function reads, the consumer-name rule, the metric namespace and the metric names the
 * alarms watch, and SQS's FIFO id rule. Defined here once; the other parts import them, so a name changed on
 * one side cannot silently stop matching the other. This file imports nothing: `lib/` may depend on it
 * without pulling any runtime code into a CDK app.
 */

/*
 * The environment variables the constructs set and the runtime's functions read: one constant each, so a
 * function bundles only the names it reads, and all of them in INBOX_ENV for the constructs.
 */

/** The Aurora cluster's ARN. */
export const ENV_RESOURCE_ARN = 'INBOX_RESOURCE_ARN';

/** The ARN of the secret the Data API signs in with. */
export const ENV_SECRET_ARN = 'INBOX_SECRET_ARN';

/** The database name (else the cluster's default database). */
export const ENV_DATABASE = 'INBOX_DATABASE';

/** A Data API endpoint to use instead of AWS's (the local Data API server). */
export const ENV_DATA_API_ENDPOINT = 'INBOX_DATA_API_ENDPOINT';

/** The schema holding the inbox tables (else `inbox`). */
export const ENV_SCHEMA = 'INBOX_SCHEMA';

/** The consumer name a handler claims under, when its `consumer` option is unset. */
export const ENV_CONSUMER = 'INBOX_CONSUMER';

/** The consumer's event source: `sqs`, `kinesis`, `dynamodb` or `kafka`. */
export const ENV_SOURCE = 'INBOX_SOURCE';

/** `true` when a Kafka mapping reports partial batch failures. */
export const ENV_REPORT_BATCH_ITEM_FAILURES = 'INBOX_REPORT_BATCH_ITEM_FAILURES';

/** JSON of outbox destination name -> queue URL. */
export const ENV_DESTINATIONS = 'INBOX_DESTINATIONS';

/** The purge's retention: rows older than this many seconds are deleted. */
export const ENV_RETENTION_SECONDS = 'INBOX_RETENTION_SECONDS';

/** Rows the purge deletes per statement. */
export const ENV_PURGE_BATCH_SIZE = 'INBOX_PURGE_BATCH_SIZE';

/** The sweeper leaves unsent outbox rows younger than this many seconds to the handler that wrote them. */
export const ENV_OUTBOX_MIN_AGE_SECONDS = 'INBOX_OUTBOX_MIN_AGE_SECONDS';

/** Unsent outbox rows the sweeper sends per run at most. */
export const ENV_OUTBOX_SWEEP_LIMIT = 'INBOX_OUTBOX_SWEEP_LIMIT';

/** How long, in seconds, the sweeper keeps a sent outbox row. */
export const ENV_OUTBOX_SENT_RETENTION_SECONDS = 'INBOX_OUTBOX_SENT_RETENTION_SECONDS';

/** On the PostgreSQL wire transport (`postgresFromEnvironment()`): the host (RDS Proxy's endpoint, or a server's). */
export const ENV_PG_HOST = 'INBOX_PG_HOST';

/** Its port (else 5432). */
export const ENV_PG_PORT = 'INBOX_PG_PORT';

/** Its database. */
export const ENV_PG_DATABASE = 'INBOX_PG_DATABASE';

/** The database role the consumer signs in as. */
export const ENV_PG_USER = 'INBOX_PG_USER';

/** `true`: sign in with an RDS IAM token, made fresh for each new connection. */
export const ENV_PG_IAM_AUTH = 'INBOX_PG_IAM_AUTH';

/** Or: the ARN of a Secrets Manager secret holding `username` and `password`. */
export const ENV_PG_SECRET_ARN = 'INBOX_PG_SECRET_ARN';

/** On Aurora DSQL (`dsqlFromEnvironment()`): the cluster's endpoint, `<id>.dsql.<region>.on.aws`. */
export const ENV_DSQL_ENDPOINT = 'INBOX_DSQL_ENDPOINT';

/** The cluster's Region (else AWS_REGION). */
export const ENV_DSQL_REGION = 'INBOX_DSQL_REGION';

/** The database role the function connects as (never admin). */
export const ENV_DSQL_USER = 'INBOX_DSQL_USER';

/** The metric namespace (Powertools' variable, read by every metrics writer of the package). */
export const ENV_METRICS_NAMESPACE = 'POWERTOOLS_METRICS_NAMESPACE';

/** The metrics' `service` dimension of the scheduled functions (Powertools' variable). */
export const ENV_SERVICE_NAME = 'POWERTOOLS_SERVICE_NAME';

/** The environment variables the constructs set and the runtime's functions read, by role. */
export const INBOX_ENV = {
  RESOURCE_ARN: ENV_RESOURCE_ARN,
  SECRET_ARN: ENV_SECRET_ARN,
  DATABASE: ENV_DATABASE,
  DATA_API_ENDPOINT: ENV_DATA_API_ENDPOINT,
  SCHEMA: ENV_SCHEMA,
  CONSUMER: ENV_CONSUMER,
  SOURCE: ENV_SOURCE,
  REPORT_BATCH_ITEM_FAILURES: ENV_REPORT_BATCH_ITEM_FAILURES,
  DESTINATIONS: ENV_DESTINATIONS,
  RETENTION_SECONDS: ENV_RETENTION_SECONDS,
  PURGE_BATCH_SIZE: ENV_PURGE_BATCH_SIZE,
  OUTBOX_MIN_AGE_SECONDS: ENV_OUTBOX_MIN_AGE_SECONDS,
  OUTBOX_SWEEP_LIMIT: ENV_OUTBOX_SWEEP_LIMIT,
  OUTBOX_SENT_RETENTION_SECONDS: ENV_OUTBOX_SENT_RETENTION_SECONDS,
  PG_HOST: ENV_PG_HOST,
  PG_PORT: ENV_PG_PORT,
  PG_DATABASE: ENV_PG_DATABASE,
  PG_USER: ENV_PG_USER,
  PG_IAM_AUTH: ENV_PG_IAM_AUTH,
  PG_SECRET_ARN: ENV_PG_SECRET_ARN,
  DSQL_ENDPOINT: ENV_DSQL_ENDPOINT,
  DSQL_REGION: ENV_DSQL_REGION,
  DSQL_USER: ENV_DSQL_USER,
  METRICS_NAMESPACE: ENV_METRICS_NAMESPACE,
  SERVICE_NAME: ENV_SERVICE_NAME,
} as const;

/**
 * The consumer names the runtime accepts: the inbox table's key, so a name once used must never change.
 * 1 to 128 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or digit.
 */
export const CONSUMER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** {@link CONSUMER_NAME_PATTERN} in words, for errors. */
export const CONSUMER_NAME_RULE = "1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit";

/**
 * The names a migration set's versions are recorded under (`InboxMigrationSet.name`), held by the constructs at
 * synth and by `migrate()` and `migrateDsql()` before they open a transaction: one row key of the migrations
 * table, never renamed, and a name a shell and a folder can carry.
 */
export const MIGRATION_SET_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** {@link MIGRATION_SET_NAME_PATTERN} in words, for errors. */
export const MIGRATION_SET_NAME_RULE = "1 to 63 lower-case letters, digits, '_' or '-', starting with a letter or digit";

/** The metric namespace of every metric the package's functions write, unless POWERTOOLS_METRICS_NAMESPACE says otherwise. */
export const METRIC_NAMESPACE = 'SqsInbox';

/** Count metrics every consumer emits (dimensions `service` = consumer name, `source` = `sqs`, `kinesis`, `dynamodb` or `kafka`). */
export const CONSUMER_COUNT_METRICS = [
  'Processed',
  'Duplicates',
  'KeyCollisions',
  'Failures',
  'ShortCircuited',
  'DeferredByDeadline',
  'ResumeRetries',
  'BatchSets',
  'BatchFallbacks',
  'Parked',
  'OutboxSent',
  'OutboxDeferred',
] as const;
/** Latency metrics every consumer emits, in milliseconds. */
export const CONSUMER_LATENCY_METRICS = ['RecordLatency', 'BatchLatency'] as const;
/** Metrics the cleanup function emits (dimension `service` = the InboxCleanup's `serviceName`). */
export const CLEANUP_METRICS = ['PurgedRows', 'PurgeMoreRemaining', 'OldestRowAgeSeconds'] as const;
/** Metrics the outbox sweeper emits (dimension `service` = the InboxOutboxRelay's `serviceName`) that the alarms watch; it also counts `OutboxSweepFailures`. */
export const OUTBOX_RELAY_METRICS = ['OutboxSwept', 'OutboxSweepDeferred', 'OutboxOldestUnsentAgeSeconds'] as const;
/**
 * Every metric the outbox sweeper emits: {@link OUTBOX_RELAY_METRICS} and `OutboxSweepFailures`. Spelt out, not
 * spread: a spread is code a bundler keeps, so every consumer's bundle would carry both lists.
 */
export const OUTBOX_SWEEPER_METRICS = ['OutboxSwept', 'OutboxSweepDeferred', 'OutboxOldestUnsentAgeSeconds', 'OutboxSweepFailures'] as const;
/**
 * Count metrics a consumer on Aurora DSQL adds (same dimensions as {@link CONSUMER_COUNT_METRICS}), one value of 1
 * per event, so their Sum is the events' number: `ConflictRetries`, a transaction run again after an
 * optimistic-concurrency conflict (SQLSTATE 40001); `ConflictsExhausted`, a conflict after the retries ran out,
 * which failed its record. The DSQL transport (`sqs-inbox/dsql`) counts them, so no other consumer bundles it.
 */
export const DSQL_CONFLICT_METRICS = ['ConflictRetries', 'ConflictsExhausted'] as const;

/** A consumer's count metric. */
export type ConsumerCountMetric = (typeof CONSUMER_COUNT_METRICS)[number];
/** A consumer's latency metric. */
export type ConsumerLatencyMetric = (typeof CONSUMER_LATENCY_METRICS)[number];
/** A metric of the scheduled purge. */
export type CleanupMetric = (typeof CLEANUP_METRICS)[number];
/** A metric of the outbox sweeper. */
export type OutboxSweeperMetric = (typeof OUTBOX_SWEEPER_METRICS)[number];
/** A metric of a consumer on Aurora DSQL. */
export type DsqlConflictMetric = (typeof DSQL_CONFLICT_METRICS)[number];

/**
 * SQS's rule for a FIFO MessageGroupId and MessageDeduplicationId (and so for the producer's idempotency key):
 * 1 to 128 ASCII letters, digits and punctuation.
 */
export const FIFO_ID_PATTERN = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

/** The runtime's default `service` dimension of the cleanup metrics, and the prefix of every InboxCleanup's `serviceName`. */
export const CLEANUP_SERVICE_NAME = 'inbox-cleanup';
/**
 * The sweeper's default `service` dimension of its metrics (the runtime's, when POWERTOOLS_SERVICE_NAME is unset), and the
 * prefix of every InboxOutboxRelay's `serviceName`.
 */
export const OUTBOX_SERVICE_NAME = 'inbox-outbox';
/** Rows the purge deletes per statement when INBOX_PURGE_BATCH_SIZE is unset. */
export const DEFAULT_PURGE_BATCH_SIZE = 5000;
/** The outbox sweeper's defaults for the INBOX_OUTBOX_* variables left unset. */
export const OUTBOX_SWEEP_DEFAULTS = {
  /** Unsent rows younger than this are left to the handler that wrote them. */
  minAgeSeconds: 60,
  /** Unsent rows sent per run at most, oldest first. */
  limit: 500,
  /** How long a sent row is kept: 7 days (a literal, not 7 * 24 * 3600, so that bundlers drop it from a consumer that does not use it). */
  sentRetentionSeconds: 604_800,
} as const;

/**
 * The function (inbox migration 7) the relay asks whether an older unsent outbox row of a FIFO group exists, whoever's
 * it is: its name in the inbox schema, and its argument types as GRANT names them. It answers for rows the caller's
 * row-level security hides, and tells nothing of them but that; the constructs grant it to consumer roles only.
 */
export const OUTBOX_ORDER_FUNCTION = { name: 'outbox_older_unsent', args: 'text, text, bigint, bigint[]' } as const;

/**
 * A statement of the DSQL role mapping, as InboxDsqlDatabase writes it (lib/dsql/dsql-role-sql.ts) and the
 * `Custom::InboxDsqlSchema` function runs it (lambda/functions/dsql-schema): its `Statements` are JSON of these.
 */
export interface DsqlStatement {
  readonly sql: string;
  /** "Already exists" (SQLSTATE 42710) counts as done: DSQL has no `IF NOT EXISTS` for roles or IAM grants. */
  readonly ignoreDuplicate?: boolean;
}

/**
 * One numbered migration, as the SQL that runs: its statements in order, in one transaction with its version's
 * row and the checksum of its statements. `InboxDatabase` carries these to the deploy (`Custom::InboxMigration`)
 * and the runtime's `migrate()` takes the same value, so one definition serves the stack and your tests. Never
 * change a migration once it has been applied anywhere: the next run refuses it, naming its version
 * (`MigrationChangedError`); add a migration with a higher version instead.
 *
 * @example
 * { version: 1, name: 'create_credits', statements: ['CREATE TABLE public.credits (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, cents bigint NOT NULL)'] }
 */
export interface InboxMigration {
  /** A positive integer, higher than the one before it in its set; each version is applied once. */
  readonly version: number;
  /** A short name, recorded with the version. */
  readonly name: string;
  /** One SQL statement per entry (the Data API runs one statement per call), none of them empty. */
  readonly statements: readonly string[];
}

/**
 * A named list of migrations, versioned apart from every other set under its `name`: your own tables', as SQL
 * text ({@link InboxMigration}). `InboxDatabase` and `migrate()` apply the inbox's own set first, then yours.
 *
 * @example
 * const credits: InboxMigrationSet = {
 *   name: 'credits',
 *   migrations: [{ version: 1, name: 'create_credits', statements: ['CREATE TABLE public.credits (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, cents bigint NOT NULL)'] }],
 * };
 *
 * @typeParam M - its migrations' type: {@link InboxMigration}; the inbox's own sets, internal, write theirs from its schema's table names
 */
export interface InboxMigrationSet<M extends Omit<InboxMigration, 'statements'> = InboxMigration> {
  /**
   * The name its versions are recorded under: 1 to 63 lower-case letters, digits, `_` and `-` (the constructs
   * check it at synth, `migrate()` and `migrateDsql()` before they begin), not a built-in set's. Never rename a set that has been applied: under a new name every
   * migration would run again.
   */
  readonly name: string;
  /** The migrations, in increasing version order. */
  readonly migrations: readonly M[];
}
