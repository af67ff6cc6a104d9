import { describe, expect, it } from 'vitest';
import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { dataApi, inbox, InboxConfigError } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';

const settings = {
  resourceArn: 'arn:aws:rds:us-east-1:1:cluster:c',
  secretArn: 'arn:aws:secretsmanager:us-east-1:1:secret:s',
  client: new RDSDataClient({ region: 'us-east-1' }),
};
const database = dataApi(settings);

/** The options with the valid ones patched; a patch's `dataApi` is given to dataApi() here, where its error is caught. */
function patched(patch: Record<string, unknown>): InboxOptions {
  const { dataApi: given, ...rest } = patch;
  return { consumer: 'order-worker', database, apply, ...rest, ...(given ? { database: dataApi(given as never) } : {}) } as InboxOptions;
}
const apply = async () => {};

// The batch modes' options.
const invalidBatch: [string, Partial<InboxOptions>, RegExp][] = [
  [
    'statementBatch',
    { apply: undefined, statementBatch: 'INSERT INTO shipments SELECT 1' as never },
    /"statementBatch": must be \{ sql, params\?: \(messages\) => params \}/,
  ],
  ['statementBatch.sql', { apply: undefined, statementBatch: { sql: 5 as never } }, /"statementBatch\.sql": must be a string; got the number 5/],
  [
    'statementBatch.sql',
    { apply: undefined, statementBatch: { sql: 'INSERT INTO shipments SELECT 1' } },
    /"statementBatch\.sql": the statement never mentions `claimed`/,
  ],
  [
    'statementBatch.params',
    { apply: undefined, statementBatch: { sql: 'SELECT 1 FROM claimed', params: 5 as never } },
    /"statementBatch\.params": must be a function \(messages\)/,
  ],
  [
    'statementBatch.params',
    { apply: undefined, statementBatch: { sql: 'SELECT 1 FROM claimed', params: null as never } },
    /"statementBatch\.params": must be a function \(messages\) => \(\{ name: value, \.\.\. \}\); got null/,
  ],
  [
    'statementBatch.param',
    { apply: undefined, statementBatch: { sql: 'SELECT 1 FROM claimed', param: () => ({}) } as never },
    /"statementBatch\.param": is not an option of statementBatch; did you mean "params"\?$/,
  ],
];

const invalid: [string, Partial<InboxOptions>, RegExp][] = [
  ['consumer', { consumer: '' }, /"consumer".*is not set.*INBOX_CONSUMER/],
  ['consumer', { consumer: '-leading-dash' }, /"consumer".*letters, digits/],
  ['consumer', { consumer: 'has space' }, /"consumer"/],
  ['apply', { apply: undefined }, /"apply".*give `apply/],
  [
    'statement',
    { statement: { sql: 'SELECT 1 FROM claimed', params: () => ({}) } },
    /"statement": give only one of apply, statement, applyBatch and statementBatch; got apply and statement/,
  ],
  ['statementBatch', { statementBatch: { sql: 'SELECT 1 FROM claimed' } }, /"statementBatch": give only one of .* got apply and statementBatch/],
  ['applyBatch', { apply: undefined, applyBatch: 'x' as never }, /"applyBatch": must be an async function \(tx, messages\) => void; got the string "x"/],
  ['duplicateFilter', { duplicateFilter: 'sometimes' as never }, /"duplicateFilter": "sometimes" must be 'auto' or 'always' or 'never'/],
  ['fifo.onFailure', { fifo: { onFailure: 'skip' as never } }, /"fifo\.onFailure".*'skip-group' or 'stop-batch'/],
  ['onPermanentError', { onPermanentError: 'drop' as never }, /"onPermanentError": "drop" must be 'retry' or 'park'/],
  // The imported object of earlier versions: refused, naming the string that replaced it.
  [
    'onPermanentError',
    { onPermanentError: { [Symbol.for('sqs-inbox.parking-runtime')]: {} } as never },
    /"onPermanentError": takes a string now: pass onPermanentError: 'park' where you passed the imported park, which is gone/,
  ],
  ['concurrency', { concurrency: 0 }, /"concurrency".*positive integer/],
  ['callTimeoutMs', { callTimeoutMs: 1.5 }, /"callTimeoutMs"/],
  ['deadlineMarginMs', { deadlineMarginMs: -1 }, /"deadlineMarginMs"/],
  ['key', { key: 'uuid' as never }, /"key".*not a key strategy/],
  ['key.attribute', { key: { attribute: '' } }, /"key\.attribute"/],
  ['key.attribute', { key: { attribute: 5 as never } }, /"key\.attribute": must be a non-empty message attribute name, e\.g\. \{ attribute: "order-key" \}/],
  ['schema', { schema: 'Inbox; DROP' }, /"schema".*must match/],
  ['database.resourceArn', { dataApi: { secretArn: 's', client: settings.client } } as never, /"database\.resourceArn".*INBOX_RESOURCE_ARN/],
  ['database.secretArn', { dataApi: { resourceArn: 'r', client: settings.client } } as never, /"database\.secretArn".*INBOX_SECRET_ARN/],
];

// What plain JavaScript can pass that the types would have refused: each names the option, what it got and the fix.
const sql = 'INSERT INTO shipments (order_id) SELECT :orderId FROM claimed';
const wrongType: [string, Record<string, unknown>, RegExp][] = [
  ['fifo', { fifo: 'stop-batch' }, /"fifo": must be an object, e\.g\. fifo: \{ onFailure: 'stop-batch' \}; got the string "stop-batch"/],
  ['fifo.onFailure', { fifo: { onFailure: true } }, /"fifo\.onFailure": must be 'skip-group' or 'stop-batch'; got the boolean true/],
  ['onPermanentError', { onPermanentError: 1 }, /"onPermanentError": must be 'retry' or 'park'; got the number 1/],
  [
    'resumeDelaysMs',
    { resumeDelaysMs: 'fast' },
    /"resumeDelaysMs": must be an array of whole numbers of milliseconds >= 0, e\.g\. \[250, 500, 1000\]; got the string "fast"/,
  ],
  ['resumeDelaysMs[1]', { resumeDelaysMs: [250, '500'] }, /"resumeDelaysMs\[1\]": must be a number .*; got the string "500"/],
  ['resumeDelaysMs[0]', { resumeDelaysMs: [-1] }, /"resumeDelaysMs\[0\]": -1 must be a non-negative integer/],
  ['concurrency', { concurrency: '5' }, /"concurrency": must be a number \(a positive integer, e\.g\. 10\); got the string "5"/],
  ['callTimeoutMs', { callTimeoutMs: '1000' }, /"callTimeoutMs": must be a number \(a positive integer, e\.g\. 10000\); got the string "1000"/],
  ['deadlineMarginMs', { deadlineMarginMs: '500' }, /"deadlineMarginMs": must be a number .*; got the string "500"/],
  ['consumer', { consumer: 42 }, /"consumer": must be a string, e\.g\. 'order-worker'; got the number 42/],
  ['schema', { schema: true }, /"schema": must match .*; got the boolean true/],
  ['apply', { apply: 'ship' }, /"apply": must be an async function \(tx, message\) => void; got the string "ship"/],
  ['statement', { apply: undefined, statement: sql }, /"statement": must be \(message\) => .*; got the string "INSERT/],
  [
    'statement.params',
    { apply: undefined, statement: { sql, params: { orderId: 'o-1' } } },
    /"statement\.params": must be a function \(message\) => .*; got an object/,
  ],
  ['parse', { parse: 'json' }, /"parse": must be a function \(body, record\) => parsed body; got the string "json"/],
  ['key', { key: 5 }, /"key": the number 5 is not a key strategy/],
  ['onBatch', { onBatch: true }, /"onBatch": must be a function \(summary\) => void; got the boolean true/],
  ['now', { now: 1_700_000_000_000 }, /"now": must be a function .*; got the number 1700000000000/],
  ['sleep', { sleep: 100 }, /"sleep": must be a function .*; got the number 100/],
  ['logger', { logger: { info() {} } }, /"logger": must be an object with the methods debug, info, warn, error .*; this one has no debug, warn, error/],
  ['metrics', { metrics: 'emf' }, /"metrics": must be an object with the methods addMetric, publishStoredMetrics .*; got the string "emf"/],
  [
    'database',
    { database: 'arn:aws:rds:us-east-1:1:cluster:c' },
    /"database": must be a transport: dataApi\(\{ resourceArn, secretArn, database, client \}\) from "sqs-inbox", .*; got the string/,
  ],
  ['database', { database: { resourceArn: settings.resourceArn, secretArn: settings.secretArn } as never }, /"database": must be a transport: dataApi\(/],
  ['database.resourceArn', { dataApi: { ...settings, resourceArn: 7 } } as never, /"database\.resourceArn": must be a string; got the number 7/],
  ['database.client', { dataApi: { ...settings, client: {} } } as never, /"database\.client": must be an RDSDataClient/],
  ['database.client', { dataApi: { ...settings, client: null } } as never, /"database\.client": must be an RDSDataClient.*; got null$/],
  // Something with a send() that is not an object: a function is no client.
  [
    'database.client',
    { dataApi: { ...settings, client: Object.assign(() => {}, { send: () => {} }) } } as never,
    /"database\.client": must be an RDSDataClient.*; got a function$/,
  ],
  [
    'dataApi',
    { dataApi: 'arn:aws:rds:us-east-1:1:cluster:c' } as never,
    /^inbox option "dataApi": takes an object \{ resourceArn\?, secretArn\?, database\?, client\? \}; got the string/,
  ],
];

// A misspelt option would otherwise be ignored and its default used in silence.
const unknownKey: [string, Record<string, unknown>, RegExp][] = [
  ['concurency', { concurency: 5 }, /"concurency": is not an option of inbox\(\); did you mean "concurrency"\?$/],
  ['CallTimeoutMs', { CallTimeoutMs: 5000 }, /did you mean "callTimeoutMs"\?$/],
  [
    'retries',
    { retries: 3 },
    /"retries": is not an option of inbox\(\); the inbox\(\) options are consumer, database, apply, statement, .*, sleep, key, fifo$/,
  ],
  ['onFailure', { onFailure: 'stop-batch' }, /"onFailure": is not an option of inbox\(\); it belongs inside fifo: fifo: \{ onFailure: \.\.\. \}$/],
  ['fifo.onfailure', { fifo: { onfailure: 'stop-batch' } }, /"fifo\.onfailure": is not an option of fifo; did you mean "onFailure"\?$/],
  ['fifo.order', { fifo: { order: 'strict' } }, /"fifo\.order": is not an option of fifo; the fifo options are onFailure$/],
  [
    'database.resourceARN',
    { dataApi: { ...settings, resourceARN: 'r' } } as never,
    /"database\.resourceARN": is not an option of database; did you mean "resourceArn"\?$/,
  ],
  ['database.region', { dataApi: { ...settings, region: 'eu-west-1' } } as never, /the database options are resourceArn, secretArn, database, client$/],
  [
    'statement.param',
    { apply: undefined, statement: { sql, params: () => ({}), param: 1 } },
    /"statement\.param": is not an option of statement; did you mean "params"\?$/,
  ],
  ['key.attributes', { key: { attributes: 'order-key' } }, /"key\.attributes": is not an option of key; did you mean "attribute"\?$/],
];

/** Calls inbox() with the valid options patched and returns what it threw, with no INBOX_* environment to fall back on. */
function thrownBy(patch: Record<string, unknown>): unknown {
  const previous = { ...process.env };
  delete process.env.INBOX_RESOURCE_ARN;
  delete process.env.INBOX_SECRET_ARN;
  delete process.env.INBOX_CONSUMER;
  try {
    inbox(patched(patch));
    return undefined;
  } catch (error) {
    return error;
  } finally {
    process.env = previous;
  }
}

describe('inbox() options, validated once at cold start', () => {
  it.each([...invalid.map((row) => [...row, inbox] as const), ...invalidBatch.map((row) => [...row, inbox] as const)])(
    'names %s and the fix',
    (option, patch, message, make) => {
      const previous = { ...process.env };
      delete process.env.INBOX_RESOURCE_ARN;
      delete process.env.INBOX_SECRET_ARN;
      delete process.env.INBOX_CONSUMER;
      try {
        let thrown: unknown;
        try {
          make(patched(patch));
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(InboxConfigError);
        expect((thrown as InboxConfigError).option).toBe(option);
        expect((thrown as Error).message).toMatch(message);
      } finally {
        process.env = previous;
      }
    },
  );

  it.each(wrongType)('names %s, the type it got and the fix', (option, patch, message) => {
    const thrown = thrownBy(patch);
    expect(thrown).toBeInstanceOf(InboxConfigError);
    expect((thrown as InboxConfigError).option).toBe(option);
    expect((thrown as Error).message).toMatch(message);
  });

  it.each(unknownKey)('refuses the unknown option %s, naming the one it likely meant or listing them', (option, patch, message) => {
    const thrown = thrownBy(patch);
    expect(thrown).toBeInstanceOf(InboxConfigError);
    expect((thrown as InboxConfigError).option).toBe(option);
    expect((thrown as Error).message).toMatch(message);
  });

  it("names the Data API transport 'data-api', as InboxTransport.name says", () => {
    expect(dataApi(settings).name).toBe('data-api');
  });

  it("keeps the README's example message word for word", () => {
    expect((thrownBy({ fifo: { onFailure: 'skip' } }) as Error).message).toBe(`inbox option "fifo.onFailure": "skip" must be 'skip-group' or 'stop-batch'`);
  });

  it('accepts every option spelt right, null as the default, and a logger and metrics with the methods it calls', () => {
    const logger = { debug() {}, info() {}, warn() {}, error() {} };
    const metrics = { addMetric() {}, publishStoredMetrics() {} };
    const all = {
      key: { attribute: 'order-key' },
      parse: JSON.parse,
      fifo: { onFailure: 'stop-batch' },
      concurrency: 4,
      onPermanentError: 'park',
      schema: 'inbox',
      callTimeoutMs: 5000,
      deadlineMarginMs: 0,
      resumeDelaysMs: [],
      logger,
      metrics,
      onBatch: () => {},
      now: Date.now,
      sleep: async () => {},
    };
    expect(thrownBy(all)).toBeUndefined();
    expect(thrownBy({ apply: undefined, statement: { sql, params: () => ({ orderId: 'o-1' }) } })).toBeUndefined();
    expect(thrownBy({ fifo: null, concurrency: null, onBatch: null, logger: null, dataApi: { ...settings, database: 'orders' } })).toBeUndefined();
  });

  it('takes a logger without metrics, or metrics without a logger, and makes the other one itself', () => {
    const logger = { debug() {}, info() {}, warn() {}, error() {} };
    const metrics = { addMetric() {}, publishStoredMetrics() {} };
    expect(thrownBy({ logger })).toBeUndefined();
    expect(thrownBy({ metrics })).toBeUndefined();
  });

  it('reads the consumer and the database from the INBOX_* environment the construct sets', () => {
    const previous = { ...process.env };
    process.env.INBOX_RESOURCE_ARN = 'arn:aws:rds:us-east-1:1:cluster:c';
    process.env.INBOX_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:1:secret:s';
    process.env.INBOX_CONSUMER = 'order-worker';
    try {
      expect(() => inbox({ apply })).not.toThrow();
      process.env.INBOX_CONSUMER = 'not valid!';
      expect(() => inbox({ apply })).toThrow(/"consumer"/);
    } finally {
      process.env = previous;
    }
  });
});
