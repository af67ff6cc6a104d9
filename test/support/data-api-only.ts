import { it } from 'vitest';
import { CURRENT } from './transport.js';

/**
 * What of test/inbox the `wire` project does not run, each with its reason, in this one place: the wire
 * project's setup prints it with its counts, and test/inbox/transport/suite-coverage.test.ts checks it
 * against the files (every entry names a file or test that exists; every test/inbox file that goes
 * through the transport switch runs on the wire).
 */

/** Files that test the Data API transport itself: left out of the wire project. */
export const DATA_API_ONLY_FILES: Readonly<Record<string, string>> = {
  'test/inbox/data-api.test.ts':
    'tests DataApiSession itself (its parameters, results, retries and failure classes); the wire session has its own, test/inbox/transport/postgres.test.ts',
  'test/inbox/idle-sockets.test.ts':
    "tests the Data API client's idle HTTPS keep-alive sockets; the wire's half-open connections are tested in test/inbox/transport/wire-faults.test.ts",
  'test/inbox/schema.test.ts':
    'tests the migration custom resource, which speaks the Data API (lambda/functions/migration); every wire fixture migrates over the wire',
  'test/inbox/own-migrations.test.ts': "tests the migration custom resource with an app's own sets, over the Data API (lambda/functions/migration)",
  'test/inbox/roles.test.ts': 'tests the database-roles custom resource and its secrets, which speak the Data API (lambda/functions/database-roles)',
  'test/inbox/isolation.test.ts':
    "checks the isolation matrix with roles the database-roles custom resource makes, which speaks the Data API (lambda/functions/database-roles); the policies it checks are the database's, the same on every transport",
};

/** Files that never reach a transport (no database, or the wire transport directly): the default project runs them once. */
export const TRANSPORT_FREE_FILES: Readonly<Record<string, string>> = {
  'test/inbox/emf-metrics.test.ts': 'metrics only, no database',
  'test/inbox/logger.test.ts': 'the logger only, no database',
  'test/inbox/lanes.test.ts': "runBatch's own contract, no database",
  'test/inbox/payload-text.test.ts': "a record's text as bytes, as storable text and as SQS takes it: pure functions, no database",
  'test/inbox/options.test.ts': "inbox()'s option checks, refused before any call",
  'test/inbox/producer.test.ts': 'the producer sends to SQS only',
  'test/inbox/target.test.ts': 'resolves a target from the environment, no call',
  'test/inbox/transport/postgres.test.ts': 'the wire session itself, on its own pools',
  'test/inbox/transport/wire-faults.test.ts': "the wire's own failures, on its own pools and proxy",
  'test/inbox/transport/suite-coverage.test.ts': 'checks these lists against the files',
  'test/inbox/transport/import-safe.test.ts': 'imports workers of each transport without their environment, in processes of its own',
  'test/inbox/sql-scanner.test.ts': 'the SQL scanner, checked against PostgreSQL itself on a connection of its own',
  'test/inbox/transport/postgres-environment.test.ts': "postgresFromEnvironment's settings, through its own TLS front and pools",
  'test/inbox/dsql-maintenance.test.ts': 'the DSQL purge function, on its own profile and pool',
  'test/inbox/dsql-schema.test.ts': "the DSQL schema function's SQL, on its own profile",
  'test/inbox/dsql-isolation.test.ts': 'the DSQL isolation matrix, with roles the DSQL schema function maps, on its own profile',
  'test/inbox/transport/dsql.test.ts': 'the DSQL target and its profile themselves, on their own profile and pools',
};

/**
 * Files that build their database through the fixture, so they could run on every transport, but whose code
 * under test is the same on each: what a source makes of its events, records, keys and payloads, and how
 * options and parsing refuse, before the one claim-and-effect path every source shares. That path, its
 * failures, limits, parking and outbox, runs on every transport in the suites not listed here (the SQS
 * suites, streams/faults, streams/payloads, streams/races and the adversarial suite, which takes records from
 * every source), so these would prove nothing new there: the default project runs them once.
 */
export const SAME_ON_EVERY_TRANSPORT_FILES: Readonly<Record<string, string>> = {
  'test/inbox/parse-with.test.ts': "parseWith's validation of a body, before the transaction",
  'test/inbox/cold-start.test.ts': "a handler module's checks at load and at its first invocation, before any call",
  'test/inbox/streams/sources.test.ts': "what the stream sources make of DynamoDB images and Kafka options: the records' text, no transport",
  'test/inbox/streams/kafka-edges.test.ts': "kafkaInbox's refusals of malformed events, options and records, word for word",
  'test/inbox/streams/stream-edges.test.ts': "Kinesis and DynamoDB records Lambda would not send, and the key options' edges",
  'test/inbox/streams/kinesis.test.ts': "kinesisInbox's records, keys and answers; its claim and effect are the SQS suites'",
  'test/inbox/streams/dynamodb.test.ts': "dynamoDbInbox's records, keys and answers; its claim and effect are the SQS suites'",
  'test/inbox/streams/kafka.test.ts': "kafkaInbox's records, keys and answers; its claim and effect are the SQS suites'",
  'test/inbox/streams/order.test.ts':
    "a lane's order and restart points over random failing effects (lanes.ts), the same on each transport; a transport's own failures of a stream lane are streams/faults.test.ts's",
};

/** Tests, by file and name, that exercise a Data API feature the wire does not have. */
export const DATA_API_ONLY_TESTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'test/inbox/consumer.test.ts': {
    'refuses, at the first invocation, a client whose SDK retries would re-send statements inside a transaction':
      'an RDSDataClient option (maxAttempts); a wire target has no SDK client',
    'retries auto-pause only while the retry can finish before the deadline margin':
      "schedules the Data API's DatabaseResumingException retries; on the wire RDS Proxy holds the statement instead (test/inbox/faults.test.ts)",
  },
  'test/inbox/outbox.test.ts': {
    'runs as the scheduled sweeper function: sends what is left, deletes old sent rows, publishes its metrics':
      'the deployed sweeper function (lambda/functions/outbox-sweeper) reaches the database by the Data API its environment names; sweepOutbox itself runs on the wire session in the other outbox tests',
    'reports what it did when the delete and the age query fail: metrics out, failures counted, then the error':
      'the deployed sweeper function speaks the Data API only, so the wire proxy cannot fault its calls',
  },
};

/**
 * `it`, for a test listed in {@link DATA_API_ONLY_TESTS}: it runs on the Data API and is reported skipped
 * on the wire. A name that is not listed is refused, so nothing is skipped without its reason.
 */
export function dataApiOnly(file: string, name: string, test: () => Promise<void>): void {
  if (DATA_API_ONLY_TESTS[file]?.[name] === undefined) {
    throw new Error(`dataApiOnly("${file}", "${name}"): list it, with its reason, in DATA_API_ONLY_TESTS (test/support/data-api-only.ts).`);
  }
  it.skipIf(CURRENT.protocol !== 'data-api')(name, test);
}

/** What of test/inbox the `wire` and `dsql` projects leave out. */
export const NOT_ON_EVERY_TRANSPORT: readonly string[] = [
  ...Object.keys(DATA_API_ONLY_FILES),
  ...Object.keys(TRANSPORT_FREE_FILES),
  ...Object.keys(SAME_ON_EVERY_TRANSPORT_FILES),
];

/** The lists as lines, with their counts: what the wire project prints before it runs. */
export function describeLeftOut(): string {
  const tests = Object.entries(DATA_API_ONLY_TESTS).flatMap(([file, names]) => Object.entries(names).map(([name, why]) => `  ${file} > ${name}\n      ${why}`));
  return [
    `wire project: ${Object.keys(DATA_API_ONLY_FILES).length} Data API-only files left out:`,
    ...Object.entries(DATA_API_ONLY_FILES).map(([file, why]) => `  ${file}\n      ${why}`),
    `${tests.length} Data API-only tests reported skipped:`,
    ...tests,
    `${Object.keys(SAME_ON_EVERY_TRANSPORT_FILES).length} files whose code under test is the same on every transport, run once by the default project:`,
    ...Object.entries(SAME_ON_EVERY_TRANSPORT_FILES).map(
      ([file, why]) => `  ${file}
      ${why}`,
    ),
    `${Object.keys(TRANSPORT_FREE_FILES).length} files that reach no transport, run once by the default project: ${Object.keys(TRANSPORT_FREE_FILES).join(', ')}`,
  ].join('\n');
}
