import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

// `inbox()`'s default logger, JsonLogger, claims to write the lines `new Logger({ serviceName })` from
// @aws-lambda-powertools/logger writes (keys, key order, indentation, stream) and to read the same environment.
// Both read the environment at module load and construction, so every setup runs each variant in a fresh
// process: the same child script, one Logger or the other, the same calls, stdout and stderr captured apart.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The child, bundled once (JsonLogger from source, Powertools as installed) and run with `node --eval`. The
 * errors it logs are made by the same code at the same lines in both variants, so their stacks and locations
 * match as they are: only the timestamps' date and time are masked before comparing.
 */
const CHILD = `
import { Logger } from '@aws-lambda-powertools/logger';
import { InvokeStore, InvokeStoreBase } from '@aws/lambda-invoke-store';
import { JsonLogger } from './lambda/inbox/telemetry/logger.js';

const variant = process.argv.at(-1);
// Lambda's multi-concurrency runtime (AWS_LAMBDA_MAX_CONCURRENCY) creates the InvokeStore before the
// function's code loads and runs each invocation in its own context, with that invocation's trace header.
const storeTrace = process.env.LOGCHECK_INVOKE_STORE_TRACE;
delete process.env.LOGCHECK_INVOKE_STORE_TRACE;
const store = storeTrace ? await InvokeStore.getInstanceAsync() : undefined;

class DataApiError extends Error {
  code = 'BadRequestException';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DataApiError';
  }
}
function failure(): Error {
  return new DataApiError('statement failed', { cause: new Error('connection reset', { cause: 'ECONNRESET' }) });
}

function calls(logger: any): void {
  const step = (fn: () => void) => {
    try {
      fn();
    } catch (error: any) {
      process.stdout.write('!call threw ' + error.name + ': ' + error.message + '\\n');
    }
  };
  // The inbox's own calls (lambda/inbox/handler/consumer.ts).
  step(() => logger.warn("inbox consumer differs from INBOX_CONSUMER: claims and metrics use the option, the deployment's alarms watch the environment name", { consumer: 'orders', INBOX_CONSUMER: 'orders-v2' }));
  step(() => logger.warn('record failed; SQS will deliver it again', { messageId: 'm-1', error: { name: 'DataApiError', message: 'statement failed' } }));
  step(() => logger.warn('record parked', { messageId: 'm-2', error: { name: 'SyntaxError', message: 'Unexpected token } in JSON' } }));
  step(() => logger.error('key collision: a different message reused a claimed idempotency key; not applied', { messageId: 'm-3', key: 'order-7', storedSha256: 'aa'.repeat(32), receivedSha256: 'bb'.repeat(32), attempt: 2, groupId: undefined }));
  step(() => logger.error('key collision: a different message reused a claimed idempotency key; not applied', { messageId: 'm-4', key: 'order-8', storedSha256: 'cc'.repeat(32), receivedSha256: 'dd'.repeat(32), attempt: 1, groupId: 'customer-9' }));
  // The other levels and shapes an InboxLogger may be handed.
  step(() => logger.info('batch done', { records: 3, processed: 2, latenciesMs: [1.5, 2, { slowest: 'm-1' }], empty: '', nil: null, none: undefined, zero: 0, no: false }));
  step(() => logger.debug('claim', { messageId: 'm-5', key: 'order-9' }));
  step(() => logger.error('apply failed', failure()));
  step(() => logger.warn('apply failed', { messageId: 'm-6', error: failure() }));
  step(() => logger.info('mixed extras', 'a string', null, undefined, { a: 1 }, 42, { a: 2, b: [] }));
  step(() => logger.info('bigint', { sequence: 18446744073709551615n, nested: { list: [1n, -2n] } }));
  const circular: any = { id: 'c-1' };
  circular.self = circular;
  circular.children = [{ parent: circular }, circular];
  step(() => logger.warn('circular', { circular }));
  const extras: any = { id: 'x' };
  extras.me = extras;
  step(() => logger.warn('circular extras', extras));
  // How Powertools' deepMerge copies extra keys: circular plain objects and arrays left out (holes in an
  // array, cut after the last kept item), other objects kept as they are, \`constructor\` keys dropped, and
  // a later extra replacing an earlier one even with undefined.
  const node: any = { id: 'n' };
  node.siblings = [node, 'kept', node];
  const list: any[] = [1];
  list.push(list);
  class Holder {
    constructor(readonly owner: unknown) {}
  }
  const owner: any = { name: 'owner' };
  owner.holder = new Holder(owner);
  const bare = Object.assign(Object.create(null), { k: 'v' });
  step(() => logger.info('merge', { node, list, owner, bare, constructor: 'Object', holes: [1, , 3], at: new Date(0), replaced: 'first' }, { replaced: undefined }));
  step(() => logger.warn('reserved keys', { service: 'other', level: 'FATAL', sampling_rate: 1, timestamp: 0, message: 'm', ok: true }));
  step(() => logger.info('base keys', { xray_trace_id: undefined, function_name: 'shadow' }));
  step(() => logger.error('no extras'));
}

let logger: any;
try {
  logger = variant === 'powertools' ? new Logger({ serviceName: 'orders' }) : new JsonLogger('orders');
} catch (error: any) {
  process.stdout.write('!constructor threw ' + error.name + ': ' + error.message + '\\n');
}
if (logger && store) store.run({ [InvokeStoreBase.PROTECTED_KEYS.X_RAY_TRACE_ID]: storeTrace }, () => calls(logger));
else if (logger) calls(logger);
`;

type Stream = 'stdout' | 'stderr';
/** One thing the child wrote: a JSON log line (pretty-printed ones span lines) or a plain text line. */
interface Entry {
  readonly stream: Stream;
  /** As written, with the timestamp's date and time masked (its zone offset kept). */
  readonly text: string;
  readonly json?: Record<string, unknown>;
}
interface Run {
  readonly entries: readonly Entry[];
  readonly code: number | null;
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})(Z|[+-]\d{2}:\d{2})$/;

function entriesOf(stream: Stream, output: string): Entry[] {
  const entries: Entry[] = [];
  let pending = '';
  for (const line of output.split('\n')) {
    if (pending === '' && line === '') continue;
    pending = pending === '' ? line : `${pending}\n${line}`;
    if (!pending.startsWith('{')) {
      entries.push({ stream, text: pending });
      pending = '';
      continue;
    }
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(pending) as Record<string, unknown>;
    } catch {
      continue; // a pretty-printed line goes on
    }
    const timestamp = json.timestamp;
    expect(timestamp, pending).toMatch(TIMESTAMP);
    // Written moments ago, whatever the zone.
    expect(Math.abs(Date.parse(timestamp as string) - Date.now())).toBeLessThan(60_000);
    const masked = (timestamp as string).replace(TIMESTAMP, 'YYYY-MM-DDThh:mm:ss.sss$2');
    entries.push({ stream, text: pending.replace(`"${timestamp as string}"`, `"${masked}"`), json: { ...json, timestamp: masked } });
    pending = '';
  }
  expect(pending, 'a JSON line left unfinished').toBe('');
  return entries;
}

let child = '';
let slots = Math.max(2, availableParallelism() * 2);
const waiting: (() => void)[] = [];

async function run(variant: 'powertools' | 'json', env: Record<string, string>): Promise<Run> {
  if (slots === 0) await new Promise<void>((resolve) => waiting.push(resolve));
  else slots--;
  try {
    const proc = spawn(process.execPath, ['--input-type=module', '--eval', child, '--', variant], {
      cwd: ROOT,
      // Only the setup's variables: not the test runner's (it sets POWERTOOLS_LOG_LEVEL=SILENT).
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve, reject) => {
      proc.on('error', reject);
      proc.on('close', resolve);
    });
    return { code, entries: [...entriesOf('stdout', stdout), ...entriesOf('stderr', stderr)] };
  } finally {
    const next = waiting.shift();
    if (next) next();
    else slots++;
  }
}

const TRACE_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
const SAMPLED = 'Setting log level to DEBUG due to sampling rate';
const CALL_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
type Level = (typeof CALL_LEVELS)[number];

const levels = (run: Run) => [...new Set(run.entries.flatMap((entry) => (entry.json ? [entry.json.level as Level] : [])))].sort();
const from = (lowest: Level) => CALL_LEVELS.slice(CALL_LEVELS.indexOf(lowest)).sort();
const json = (run: Run) => run.entries.flatMap((entry) => (entry.json ? [entry.json] : []));

interface Setup {
  readonly name: string;
  readonly env: Record<string, string>;
  /** The levels that get printed: proof the setup took effect, not only that both variants agree. */
  readonly printed: readonly string[];
  /** What else the setup must show in the Powertools output (and so in JsonLogger's). */
  readonly check?: (run: Run) => void;
}

const setups: Setup[] = [
  {
    name: 'default',
    env: {},
    printed: from('INFO'),
    check: (run) => {
      for (const entry of run.entries) {
        expect(entry.stream).toBe(['INFO', 'DEBUG'].includes(entry.json!.level as string) ? 'stdout' : 'stderr');
        expect(entry.text).not.toContain('\n');
      }
      const mismatch = json(run).find((line) => 'INBOX_CONSUMER' in line)!;
      expect(Object.keys(mismatch)).toEqual(['level', 'message', 'timestamp', 'service', 'sampling_rate', 'consumer', 'INBOX_CONSUMER']);
      expect(mismatch.timestamp).toMatch(/Z$/);
      // The shapes are what they claim to be, so that agreeing on them means something.
      expect(json(run).find((line) => line.message === 'apply failed' && !('messageId' in line))!.error).toMatchObject({
        name: 'DataApiError',
        location: expect.stringMatching(/\[eval1\]:\d+$/),
        message: 'statement failed',
        stack: expect.stringMatching(/^DataApiError: statement failed\n {4}at failure /),
        cause: { name: 'Error', message: 'connection reset', cause: 'ECONNRESET' },
        code: 'BadRequestException',
      });
      expect(json(run).find((line) => line.message === 'bigint')).toMatchObject({ sequence: '18446744073709551615', nested: { list: ['1', '-2'] } });
      expect(json(run).find((line) => line.message === 'circular')!.circular).toEqual({ id: 'c-1', children: [{}] });
      expect(json(run).every((line) => line.xray_trace_id === undefined)).toBe(true);
    },
  },
  { name: 'POWERTOOLS_LOG_LEVEL=DEBUG', env: { POWERTOOLS_LOG_LEVEL: 'DEBUG' }, printed: from('DEBUG') },
  { name: 'POWERTOOLS_LOG_LEVEL=debug (not a level name: ignored)', env: { POWERTOOLS_LOG_LEVEL: 'debug' }, printed: from('INFO') },
  { name: 'POWERTOOLS_LOG_LEVEL=" ERROR " (trimmed)', env: { POWERTOOLS_LOG_LEVEL: ' ERROR ' }, printed: from('ERROR') },
  { name: 'POWERTOOLS_LOG_LEVEL=SILENT', env: { POWERTOOLS_LOG_LEVEL: 'SILENT' }, printed: [], check: (run) => expect(run.entries).toEqual([]) },
  { name: 'LOG_LEVEL=WARN', env: { LOG_LEVEL: 'WARN' }, printed: from('WARN') },
  { name: 'POWERTOOLS_LOG_LEVEL=ERROR wins over LOG_LEVEL=DEBUG', env: { POWERTOOLS_LOG_LEVEL: 'ERROR', LOG_LEVEL: 'DEBUG' }, printed: from('ERROR') },
  {
    name: 'AWS_LAMBDA_LOG_LEVEL=ERROR wins over POWERTOOLS_LOG_LEVEL=DEBUG',
    env: { AWS_LAMBDA_LOG_LEVEL: 'ERROR', POWERTOOLS_LOG_LEVEL: 'DEBUG' },
    printed: from('ERROR'),
  },
  { name: 'AWS_LAMBDA_LOG_LEVEL=FATAL', env: { AWS_LAMBDA_LOG_LEVEL: 'FATAL' }, printed: [], check: (run) => expect(run.entries).toEqual([]) },
  { name: 'AWS_LAMBDA_LOG_LEVEL=DEBUG', env: { AWS_LAMBDA_LOG_LEVEL: 'DEBUG', LOG_LEVEL: 'ERROR' }, printed: from('DEBUG') },
  { name: 'AWS_LAMBDA_LOG_LEVEL=TRACE', env: { AWS_LAMBDA_LOG_LEVEL: 'TRACE' }, printed: from('DEBUG') },
  {
    name: 'POWERTOOLS_LOGGER_SAMPLE_RATE=1 (always promoted to DEBUG)',
    env: { POWERTOOLS_LOGGER_SAMPLE_RATE: '1' },
    printed: from('DEBUG'),
    check: (run) => {
      expect(json(run)[0]).toMatchObject({ level: 'DEBUG', message: SAMPLED, sampling_rate: 1 });
      expect(json(run).every((line) => line.sampling_rate === 1)).toBe(true);
    },
  },
  {
    name: 'POWERTOOLS_LOGGER_SAMPLE_RATE=0 (never promoted)',
    env: { POWERTOOLS_LOGGER_SAMPLE_RATE: '0' },
    printed: from('INFO'),
    check: (run) => expect(json(run).some((line) => line.message === SAMPLED)).toBe(false),
  },
  {
    name: 'POWERTOOLS_LOGGER_SAMPLE_RATE=1 promotes POWERTOOLS_LOG_LEVEL=SILENT',
    env: { POWERTOOLS_LOGGER_SAMPLE_RATE: '1', POWERTOOLS_LOG_LEVEL: 'SILENT' },
    printed: from('DEBUG'),
  },
  {
    name: 'POWERTOOLS_LOGGER_SAMPLE_RATE=1 under AWS_LAMBDA_LOG_LEVEL=WARN (warns, stays at WARN)',
    env: { POWERTOOLS_LOGGER_SAMPLE_RATE: '1', AWS_LAMBDA_LOG_LEVEL: 'WARN' },
    printed: from('WARN'),
    check: (run) =>
      expect(json(run)[0]!.message).toMatch(/^Current log level \(DEBUG\) does not match AWS Lambda Advanced Logging Controls minimum log level \(WARN\)/),
  },
  {
    name: 'POWERTOOLS_LOGGER_SAMPLE_RATE=1 under AWS_LAMBDA_LOG_LEVEL=DEBUG',
    env: { POWERTOOLS_LOGGER_SAMPLE_RATE: '1', AWS_LAMBDA_LOG_LEVEL: 'DEBUG' },
    printed: from('DEBUG'),
  },
  { name: 'POWERTOOLS_LOGGER_SAMPLE_RATE=2 (out of range: ignored)', env: { POWERTOOLS_LOGGER_SAMPLE_RATE: '2' }, printed: from('INFO') },
  {
    name: 'POWERTOOLS_LOGGER_SAMPLE_RATE=often (not a number: the constructor throws)',
    env: { POWERTOOLS_LOGGER_SAMPLE_RATE: 'often' },
    printed: [],
    check: (run) =>
      expect(run.entries.map((entry) => entry.text)).toEqual([
        '!constructor threw TypeError: Environment variable POWERTOOLS_LOGGER_SAMPLE_RATE must be a number',
      ]),
  },
  {
    name: 'POWERTOOLS_DEV=true (indented, stack as lines, global console)',
    env: { POWERTOOLS_DEV: 'true' },
    printed: from('INFO'),
    check: (run) => {
      expect(run.entries[0]!.text).toMatch(/^\{\n {4}"level": "/);
      const failed = json(run).find((line) => line.message === 'apply failed')!;
      expect(failed.error).toMatchObject({ name: 'DataApiError', stack: expect.any(Array), cause: { stack: expect.any(Array) } });
    },
  },
  { name: 'POWERTOOLS_DEV=1', env: { POWERTOOLS_DEV: '1' }, printed: from('INFO'), check: (run) => expect(run.entries[0]!.text).toContain('\n') },
  {
    name: 'POWERTOOLS_DEV=maybe (not truthy)',
    env: { POWERTOOLS_DEV: 'maybe' },
    printed: from('INFO'),
    check: (run) => expect(run.entries[0]!.text).not.toContain('\n'),
  },
  {
    name: '_X_AMZN_TRACE_ID header',
    env: { _X_AMZN_TRACE_ID: TRACE_HEADER },
    printed: from('INFO'),
    check: (run) => expect(new Set(json(run).map((line) => line.xray_trace_id))).toEqual(new Set(['1-5759e988-bd862e3fe1be46a994272793'])),
  },
  {
    name: '_X_AMZN_TRACE_ID without fields',
    env: { _X_AMZN_TRACE_ID: '1-plain-id' },
    printed: from('INFO'),
    check: (run) => expect(json(run)[0]!.xray_trace_id).toBe('1-plain-id'),
  },
  {
    name: 'InvokeStore trace id (multi-concurrency) over _X_AMZN_TRACE_ID',
    env: { _X_AMZN_TRACE_ID: TRACE_HEADER, AWS_LAMBDA_MAX_CONCURRENCY: '4', LOGCHECK_INVOKE_STORE_TRACE: 'Root=1-from-the-store;Sampled=0' },
    printed: from('INFO'),
    check: (run) => expect(json(run)[0]!.xray_trace_id).toBe('1-from-the-store'),
  },
  { name: 'TZ=Europe/Paris', env: { TZ: 'Europe/Paris' }, printed: from('INFO'), check: (run) => expect(json(run)[0]!.timestamp).toMatch(/\+0[12]:00$/) },
  {
    name: 'TZ=America/New_York',
    env: { TZ: 'America/New_York' },
    printed: from('INFO'),
    check: (run) => expect(json(run)[0]!.timestamp).toMatch(/-0[45]:00$/),
  },
  { name: 'TZ=Asia/Kolkata', env: { TZ: 'Asia/Kolkata' }, printed: from('INFO'), check: (run) => expect(json(run)[0]!.timestamp).toMatch(/\+05:30$/) },
  { name: 'TZ=UTC', env: { TZ: 'UTC' }, printed: from('INFO'), check: (run) => expect(json(run)[0]!.timestamp).toMatch(/Z$/) },
  {
    name: 'TZ=Nowhere/Bad (warns once on stderr, UTC)',
    env: { TZ: 'Nowhere/Bad' },
    printed: from('INFO'),
    check: (run) => {
      expect(run.entries.filter((entry) => !entry.json).map((entry) => [entry.stream, entry.text])).toEqual([
        ['stderr', 'Invalid or unresolvable time zone: "Nowhere/Bad" - falling back to UTC.'],
      ]);
      expect(json(run)[0]!.timestamp).toMatch(/\+00:00$/);
    },
  },
  {
    name: 'Lambda-like environment',
    env: {
      TZ: ':UTC',
      _X_AMZN_TRACE_ID: TRACE_HEADER,
      AWS_REGION: 'eu-west-1',
      AWS_LAMBDA_FUNCTION_NAME: 'orders-consumer',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      AWS_LAMBDA_LOG_FORMAT: 'JSON',
      POWERTOOLS_SERVICE_NAME: 'not-orders',
      ENVIRONMENT: 'prod',
    },
    printed: from('INFO'),
    check: (run) =>
      expect(json(run)[0]).toMatchObject({ service: 'orders', timestamp: expect.stringMatching(/Z$/), xray_trace_id: '1-5759e988-bd862e3fe1be46a994272793' }),
  },
];

beforeAll(async () => {
  const bundle = await build({
    stdin: { contents: CHILD, loader: 'ts', resolveDir: ROOT, sourcefile: 'logger-child.ts' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Powertools is loaded as installed; JsonLogger is lambda/inbox/telemetry/logger.ts as it is now.
    packages: 'external',
    write: false,
    logLevel: 'silent',
  });
  child = bundle.outputFiles[0]!.text;
});

describe.concurrent('JsonLogger writes what Powertools Logger writes', () => {
  it.each(setups)('$name', async ({ env, printed, check }) => {
    const [powertools, ours] = await Promise.all([run('powertools', env), run('json', env)]);
    expect(powertools.code).toBe(0);
    expect(levels(powertools)).toEqual([...printed].sort());
    check?.(powertools);
    // The same lines, keys in the same order, same indentation, on the same streams, in the same order on each
    // (the order between stdout and stderr is not observable through two pipes).
    expect(ours.entries).toEqual(powertools.entries);
    expect(ours.code).toBe(powertools.code);
  });
});
