#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { DataApiSession, InboxConfigError, migrate, purge, resolveTarget } from '../lambda/inbox/index.js';
import { migrationSets } from '../lambda/functions/migrate.js';
import { startDataApi } from '../local/data-api/server.js';
import { startLocal } from '../local/stack.js';
import { runDemo } from '../local/demo.js';

const USAGE = `sqs-inbox: exactly-once SQS consumers on Aurora PostgreSQL over the RDS Data API

Usage:
  sqs-inbox demo [--messages N] [--seed N] [--faults LIST] [--consumers N]
      The fault-injection demo (what \`npm start\` runs): the inbox pattern against the naive one.
  sqs-inbox local [--json]
      Embedded PostgreSQL, the local Data API server and the local SQS endpoint, until interrupted.
  sqs-inbox data-api [--port N] [--database-url URL] [--json]
      Embedded PostgreSQL (unless --database-url or DATABASE_URL) and the local Data API server.
  sqs-inbox migrate [--sets inbox,example-orders] [--schema inbox] [database flags]
      Applies the schema migrations through the Data API.
  sqs-inbox purge --retention-seconds N [--batch-size N] [--schema inbox] [database flags]
      Deletes inbox rows older than the retention.

Database flags (default: the INBOX_* environment, as the Lambda handler reads it):
  --resource-arn ARN      INBOX_RESOURCE_ARN
  --secret-arn ARN        INBOX_SECRET_ARN
  --database NAME         INBOX_DATABASE
  --endpoint URL          INBOX_DATA_API_ENDPOINT (a local Data API server; omit for AWS)
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'data-api':
      return dataApi(rest);
    case 'local':
      return local(rest);
    case 'migrate':
      return migrateCommand(rest);
    case 'purge':
      return purgeCommand(rest);
    case 'demo':
      return runDemo(rest);
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 1 : 0;
    default:
      process.stderr.write(`sqs-inbox: unknown command "${command}".\n\n${USAGE}`);
      return 1;
  }
}

async function dataApi(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { port: { type: 'string' }, 'database-url': { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const server = await startDataApi({
    ...(values.port ? { port: port(values.port) } : {}),
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
  });
  const info = { endpoint: server.endpoint, resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(info)}\n`);
  } else {
    process.stdout.write(
      `Local Data API ready.\n  endpoint     ${info.endpoint}\n  resourceArn  ${info.resourceArn}\n  secretArn    ${info.secretArn}\n  database     ${info.database}\n\n` +
        `Point any Data API client at it, e.g.\n  INBOX_DATA_API_ENDPOINT=${info.endpoint} INBOX_RESOURCE_ARN=${info.resourceArn} INBOX_SECRET_ARN=${info.secretArn} INBOX_DATABASE=${info.database} npx sqs-inbox migrate\n` +
        'Ctrl-C stops it.\n',
    );
  }
  await untilInterrupted(() => server.close());
  return 0;
}

async function local(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  const stack = await startLocal();
  const info = {
    dataApi: { endpoint: stack.dataApi.endpoint, resourceArn: stack.dataApi.resourceArn, secretArn: stack.dataApi.secretArn, database: stack.dataApi.database },
    sqs: { endpoint: stack.sqs.endpoint, region: stack.sqs.region },
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(info)}\n`);
  } else {
    process.stdout.write(
      `Local runtime ready.\n  Data API  ${info.dataApi.endpoint}  (resourceArn ${info.dataApi.resourceArn}, secretArn ${info.dataApi.secretArn}, database ${info.dataApi.database})\n` +
        `  SQS       ${info.sqs.endpoint}  (region ${info.sqs.region})\nCtrl-C stops it.\n`,
    );
  }
  await untilInterrupted(() => stack.close());
  return 0;
}

const DATABASE_FLAGS = {
  'resource-arn': { type: 'string' },
  'secret-arn': { type: 'string' },
  database: { type: 'string' },
  endpoint: { type: 'string' },
  schema: { type: 'string', default: 'inbox' },
} as const;

function sessionFrom(values: { 'resource-arn'?: string; 'secret-arn'?: string; database?: string; endpoint?: string }): DataApiSession {
  const env = { ...process.env, ...(values.endpoint ? { INBOX_DATA_API_ENDPOINT: values.endpoint } : {}) };
  const target = resolveTarget(
    {
      ...(values['resource-arn'] ? { resourceArn: values['resource-arn'] } : {}),
      ...(values['secret-arn'] ? { secretArn: values['secret-arn'] } : {}),
      ...(values.database ? { database: values.database } : {}),
    },
    env,
    'flags',
  );
  return new DataApiSession(target, { callTimeoutMs: 60_000, resumeDelaysMs: [1000, 2000, 4000, 8000, 10_000, 10_000] });
}

async function migrateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { ...DATABASE_FLAGS, sets: { type: 'string', default: 'inbox' } } });
  const report = await migrate(sessionFrom(values), migrationSets(values.sets), values.schema);
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return 0;
}

async function purgeCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...DATABASE_FLAGS, 'retention-seconds': { type: 'string' }, 'batch-size': { type: 'string' } },
  });
  if (!values['retention-seconds']) {
    throw new InboxConfigError('--retention-seconds', 'is required: rows younger than this are kept, e.g. --retention-seconds 1209600 (14 days)');
  }
  const report = await purge(sessionFrom(values), {
    retentionSeconds: Number(values['retention-seconds']),
    ...(values['batch-size'] ? { batchSize: Number(values['batch-size']) } : {}),
    schema: values.schema,
  });
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return 0;
}

function port(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new InboxConfigError('--port', `"${text}" must be a port number from 0 to 65535`);
  }
  return value;
}

/** Resolves after SIGINT or SIGTERM and the cleanup ran. */
function untilInterrupted(cleanup: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void cleanup().finally(resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    process.stderr.write(`sqs-inbox: ${message}\n`);
    process.exitCode = 1;
  },
);
