import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inbox, kinesisInbox, PermanentError } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { inboxFixture, lambdaContext, recordingLogger, recordingMetrics, sqsRecord } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';
import { startSqsFixture } from '../support/sqs.js';
import { BIN, NO_TARGET, cliRun as runCli, databaseEnv } from '../support/cli.js';
import type { SqsFixture } from '../support/sqs.js';
import { kinesisEvent, kinesisRecord } from '../support/streams.js';
import { rawControls, storableHostileText } from '../support/hostile-text.js';
import { parkedMessages } from '../../lambda/inbox/parked/parking.js';
import { propertyParameters } from '../support/seed.js';

/** The handler inbox() returns. */
type InboxHandler = ReturnType<typeof inbox>;

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** A JavaScript error class name as Node prints it: `Error:`, `TypeError:`, `InboxConfigError:`. */
const CLASS_NAME = /\b[A-Za-z]*Error:/;

/** Runs the CLI to its end (stdin a pipe, so not a terminal) and collects everything it printed. */
const cliRun = (args: string[], env: NodeJS.ProcessEnv = {}) => runCli(args, env, children);

/**
 * Runs the CLI on a pseudo-terminal (util-linux `script`), typing `answer` at its prompt. `output` has the
 * terminal's CRs taken out; `raw` is every byte the terminal got.
 */
async function cliOnTerminal(args: string[], env: NodeJS.ProcessEnv, answer: string) {
  const command = [process.execPath, BIN, ...args].map((arg) => `'${arg.replace(/'/g, "'\\''")}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...NO_TARGET, ...env } });
  children.push(child);
  let output = '';
  let answered = false;
  child.stdout.on('data', (chunk) => {
    output += chunk;
    if (!answered && output.includes('[y/N]')) {
      answered = true;
      child.stdin.end(`${answer}\n`);
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, output: output.replace(/\r/g, ''), raw: output };
}

let db: InboxFixture;
let f: SqsFixture;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`node scripts/build.mjs --js-only\` (npm test does).`);
  db = await inboxFixture('cli_parked');
  await db.query('CREATE TABLE public.applied (order_id text PRIMARY KEY, n int NOT NULL DEFAULT 1)');
  env = databaseEnv(db);
});
afterAll(async () => db.close());
beforeEach(async () => {
  f = await startSqsFixture();
});
afterEach(async () => f.close());

let run = 0;

/** A consumer that parks every order until `fix()`, and a standard queue of the local SQS it reads. */
function stage() {
  run++;
  const consumer = `cli-worker-${run}`;
  const queue = f.sqs.model.createQueue(`cli-orders-${run}`);
  let rejecting = true;
  const handler: InboxHandler = inbox<{ orderId: string }>({
    consumer,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    onPermanentError: 'park',
    apply: async (tx, message) => {
      if (rejecting) throw new PermanentError('warehouse code unknown');
      await tx.execute('INSERT INTO public.applied (order_id) VALUES (:id) ON CONFLICT (order_id) DO UPDATE SET n = applied.n + 1', {
        id: message.body.orderId,
      });
    },
  });
  /** Delivers one order as Lambda would from the queue, and returns its parked id. */
  const park = async (orderId: string): Promise<number> => {
    const record: SQSRecord = { ...sqsRecord({ body: { orderId }, key: `key-${orderId}` }), eventSourceARN: queue.arn };
    expect((await handler({ Records: [record] }, lambdaContext())).batchItemFailures).toEqual([]);
    return (await parkedMessages(handler).list({ limit: 1000 })).find((message) => message.key === `key-${orderId}`)!.id;
  };
  /** Hands what is on the queue to the consumer, as Lambda would (attributes included). */
  const consume = async () => {
    const messages = await f.sqs.model.receiveMessages({ queue: queue.url, maxNumberOfMessages: 10, messageAttributeNames: ['All'], waitTimeSeconds: 0 });
    const records = messages.map((message) => sqsRecord({ body: message.body, key: message.messageAttributes['idempotency-key']?.stringValue ?? '' }));
    if (records.length > 0) expect((await handler({ Records: records }, lambdaContext())).batchItemFailures).toEqual([]);
    for (const message of messages) f.sqs.model.deleteMessage(queue.url, message.receiptHandle);
    return messages.length;
  };
  return { consumer, queue, handler, park, consume, fix: () => void (rejecting = false) };
}

const applied = async (orderId: string) => (await db.query<{ n: number }>('SELECT n FROM public.applied WHERE order_id = $1', [orderId]))[0]?.n ?? 0;
const status = async (id: number) =>
  (
    await db.query<{ redriven_at: Date | null; discarded_at: Date | null }>('SELECT redriven_at, discarded_at FROM inbox.parked_message WHERE id = $1', [id])
  )[0];

describe('npx sqs-inbox parked', () => {
  it('is listed in the top-level help, and parked --help and help parked print its usage with every flag and its default', async () => {
    expect((await cliRun(['--help'])).stdout).toMatch(/\n {2}parked {2,}lists, shows, redrives/);
    for (const args of [
      ['parked', '--help'],
      ['help', 'parked'],
      ['parked', 'list', '-h'],
    ]) {
      const run = await cliRun(args);
      expect(run.code).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout).toMatch(/^Usage: sqs-inbox parked <subcommand> --consumer NAME/);
      for (const flag of [
        '--consumer',
        '--json',
        '--yes',
        '--all',
        '--limit',
        '--queue-url',
        '--sqs-endpoint',
        '--resource-arn',
        '--secret-arn',
        '--database',
        '--endpoint',
        '--schema',
      ]) {
        const line = run.stdout.split('\n').find((text) => text.trimStart().startsWith(`${flag} `));
        expect(line, `${flag} in the usage`).toBeDefined();
        expect(line).toMatch(/\((default: .+|required)\)$/);
      }
      for (const subcommand of ['list', 'show ID', 'redrive ID...', 'discard ID...']) expect(run.stdout).toContain(`\n  ${subcommand} `);
    }
  });

  it.each([
    ['no subcommand', ['parked', '--consumer', 'c'], 'give a subcommand'],
    ['an unknown subcommand', ['parked', 'retry', '1', '--consumer', 'c'], '"retry" is not a subcommand'],
    ['a missing --consumer', ['parked', 'list'], '--consumer is required'],
    ['--consumer without its value', ['parked', 'list', '--consumer'], '--consumer needs a value'],
    ['an ID that is not a whole number', ['parked', 'show', 'seven', '--consumer', 'c'], '"seven" is not a parked message ID'],
    ['an ID of 0', ['parked', 'discard', '0', '--consumer', 'c'], '"0" is not a parked message ID'],
    ['show with two IDs', ['parked', 'show', '1', '2', '--consumer', 'c'], 'show takes exactly one ID'],
    ['redrive without an ID', ['parked', 'redrive', '--consumer', 'c', '--yes'], 'redrive needs the IDs'],
    ['list with an ID', ['parked', 'list', '3', '--consumer', 'c'], 'list takes no ID'],
    [
      'a redrive flag given to list',
      ['parked', 'list', '--consumer', 'c', '--queue-url', 'https://sqs.us-east-1.amazonaws.com/1/q'],
      '--queue-url is for redrive',
    ],
    ['a list flag given to discard', ['parked', 'discard', '1', '--consumer', 'c', '--all'], '--all is for list'],
    ['--yes given to show', ['parked', 'show', '1', '--consumer', 'c', '--yes'], '--yes is for redrive and discard'],
    ['a --limit of 0', ['parked', 'list', '--consumer', 'c', '--limit', '0'], '--limit "0" must be a whole number from 1 to 10000'],
    [
      'a --queue-url that is not one',
      ['parked', 'redrive', '1', '--consumer', 'c', '--yes', '--queue-url', 'orders'],
      '--queue-url "orders" is not a queue URL',
    ],
    ['an unknown flag', ['parked', 'list', '--consumer', 'c', '--force'], 'unknown flag --force'],
    ['a missing database ARN', ['parked', 'list', '--consumer', 'c'], '--resource-arn (or INBOX_RESOURCE_ARN) is required'],
    ['redrive off a terminal without --yes', ['parked', 'redrive', '1', '--consumer', 'c', '--resource-arn', 'a', '--secret-arn', 's'], 'add --yes'],
    ['discard off a terminal without --yes', ['parked', 'discard', '1', '--consumer', 'c', '--resource-arn', 'a', '--secret-arn', 's'], 'add --yes'],
  ])('names %s in one line on stderr and where the flags are, not the usage; prints nothing on stdout, exit 2', async (_, args, problem) => {
    const run = await cliRun(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    const [first] = run.stderr.split('\n');
    expect(first).toMatch(/^sqs-inbox parked: /);
    expect(first).toContain(problem);
    expect(run.stderr).toBe(`${first}\nRun \`sqs-inbox parked --help\` for the flags it takes.\n`);
    expect(run.stderr).not.toMatch(CLASS_NAME);
  });

  it('refuses to discard or redrive without --yes when stdin is not a terminal, and changes nothing', async () => {
    const s = stage();
    const id = await s.park(`o-${run}`);
    for (const subcommand of ['discard', 'redrive']) {
      const run = await cliRun(['parked', subcommand, String(id), '--consumer', s.consumer], env);
      expect(run.code).toBe(2);
      expect(run.stderr.split('\n')[0]).toBe(
        `sqs-inbox parked: ${subcommand} changes the inbox and asks first, but stdin is not a terminal to ask on: add --yes to ${subcommand} without asking`,
      );
    }
    expect(await status(id)).toEqual({ redriven_at: null, discarded_at: null });
    expect(f.sqs.model.counts(s.queue.url).visible).toBe(0);
  });

  it('list names the consumers that exist when --consumer names none (a typo), exit 1; a known consumer with nothing parked is told so, exit 0', async () => {
    const s = stage();
    const id = await s.park(`o-${run}-typo`);
    await cliRun(['parked', 'discard', String(id), '--consumer', s.consumer, '--yes'], env);

    const typo = await cliRun(['parked', 'list', '--consumer', `${s.consumer}x`], env);
    expect(typo.code).toBe(1);
    expect(typo.stdout).toBe('');
    const [line, ...rest] = typo.stderr.split('\n');
    expect(line).toMatch(
      new RegExp(`^sqs-inbox parked: no consumer "${s.consumer}x" has claimed a message in this database \\(the consumers here: .*\\b${s.consumer}\\b`),
    );
    expect(line).toContain('check --consumer');
    expect(rest).toEqual(['']);
    const known = await cliRun(['parked', 'list', '--consumer', s.consumer], env);
    expect(known).toEqual({ code: 0, stdout: `No still parked messages for consumer "${s.consumer}".\n`, stderr: '' });
  });

  it('list --json prints one JSON document with every field of each message; list prints a table', async () => {
    const s = stage();
    const first = await s.park(`o-${run}-1`);
    const second = await s.park(`o-${run}-2`);
    const json = await cliRun(['parked', 'list', '--consumer', s.consumer, '--json'], env);
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    expect(json.stdout.trimEnd().split('\n')).toHaveLength(1);
    const document = JSON.parse(json.stdout);
    expect(Object.keys(document)).toEqual(['consumer', 'messages']);
    expect(document.consumer).toBe(s.consumer);
    expect(document.messages.map((m: { id: number }) => m.id)).toEqual([first, second]);
    expect(document.messages[0]).toEqual({
      id: first,
      sqsMessageId: expect.any(String),
      key: `key-o-${run}-1`,
      body: JSON.stringify({ orderId: `o-${run}-1` }),
      // The payload's bytes, base64: the body is their text.
      payload: Buffer.from(JSON.stringify({ orderId: `o-${run}-1` })).toString('base64'),
      attributes: {
        attributes: expect.objectContaining({ ApproximateReceiveCount: '1' }),
        messageAttributes: { 'idempotency-key': { dataType: 'String', stringValue: `key-o-${run}-1` } },
        eventSourceARN: s.queue.arn,
      },
      errorClass: 'PermanentError',
      errorMessage: 'warehouse code unknown',
      attempt: 1,
      parkedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      replayedAt: null,
      redrivenAt: null,
      redrivenTo: null,
      discardedAt: null,
      status: 'parked',
      ownsClaim: true,
    });

    const limited = JSON.parse((await cliRun(['parked', 'list', '--consumer', s.consumer, '--json', '--limit', '1'], env)).stdout);
    expect(limited.messages.map((m: { id: number }) => m.id)).toEqual([first]);

    const table = await cliRun(['parked', 'list', '--consumer', s.consumer], env);
    expect(table.code).toBe(0);
    const lines = table.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID +STATUS +PARKED AT +ATTEMPT +KEY +ERROR$/);
    expect(lines[1]).toMatch(new RegExp(`^${first} +parked +\\d{4}-.* +1 +key-o-${run}-1 +PermanentError: warehouse code unknown$`));
    expect(table.stdout).toContain(`2 still parked messages for consumer "${s.consumer}".`);

    // A consumer the database has never seen is a typo, with --json too: no empty list that reads as all clear.
    const empty = await cliRun(['parked', 'list', '--consumer', 'nobody', '--json'], env);
    expect(empty.code).toBe(1);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toMatch(/^sqs-inbox parked: no consumer "nobody" has claimed a message in this database \(the consumers here: /);
  });

  it('show prints one message with its body; --json prints it as list does; an unknown ID exits 1', async () => {
    const s = stage();
    const id = await s.park(`o-${run}`);
    const text = await cliRun(['parked', 'show', String(id), '--consumer', s.consumer], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^id +${id}\n`));
    expect(text.stdout).toMatch(/\nstatus +parked\n/);
    expect(text.stdout).toContain(`\nsource        ${s.queue.arn}\n`);
    expect(text.stdout).toContain(`\nbody\n  {\n    "orderId": "o-${run}"\n  }\n`);

    const json = JSON.parse((await cliRun(['parked', 'show', String(id), '--consumer', s.consumer, '--json'], env)).stdout);
    const listed = JSON.parse((await cliRun(['parked', 'list', '--consumer', s.consumer, '--json'], env)).stdout);
    expect(json).toEqual({ consumer: s.consumer, message: listed.messages[0] });

    const missing = await cliRun(['parked', 'show', '999999', '--consumer', s.consumer, '--json'], env);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toEqual({ consumer: s.consumer, message: null });
    expect(missing.stderr).toBe(`sqs-inbox parked: consumer "${s.consumer}" has no parked message 999999\n`);
  });

  it('discard --yes hides the message from list (list --all still shows it); discarding it again exits 1', async () => {
    const s = stage();
    const kept = await s.park(`o-${run}-kept`);
    const id = await s.park(`o-${run}`);
    const discarded = await cliRun(['parked', 'discard', String(id), '--consumer', s.consumer, '--yes', '--json'], env);
    expect(discarded.code).toBe(0);
    expect(JSON.parse(discarded.stdout)).toEqual({ consumer: s.consumer, results: [{ id, status: 'discarded' }] });

    const listed = JSON.parse((await cliRun(['parked', 'list', '--consumer', s.consumer, '--json'], env)).stdout);
    expect(listed.messages.map((m: { id: number }) => m.id)).toEqual([kept]);
    const all = JSON.parse((await cliRun(['parked', 'list', '--consumer', s.consumer, '--json', '--all'], env)).stdout);
    expect(all.messages.map((m: { id: number; status: string }) => [m.id, m.status])).toEqual([
      [kept, 'parked'],
      [id, 'discarded'],
    ]);

    const again = await cliRun(['parked', 'discard', String(id), '999999', '--consumer', s.consumer, '--yes'], env);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe(`ID      RESULT\n${String(id).padEnd(6)}  already-discarded\n999999  not-found\n`);
  });

  it('redrive --yes sends the message back to the queue its ARN names (--sqs-endpoint or AWS_ENDPOINT_URL_SQS), and the consumer applies it once', async () => {
    for (const endpoint of ['flag', 'environment'] as const) {
      const s = stage();
      const orderId = `o-${run}`;
      const id = await s.park(orderId);
      s.fix();
      const args = ['parked', 'redrive', String(id), '--consumer', s.consumer, '--yes', '--json'];
      const redriven =
        endpoint === 'flag'
          ? await cliRun([...args, '--sqs-endpoint', f.sqs.endpoint], env)
          : await cliRun(args, { ...env, AWS_ENDPOINT_URL_SQS: f.sqs.endpoint });
      expect(redriven.stderr).toBe('');
      expect(redriven.code).toBe(0);
      // The ARN arn:aws:sqs:us-east-1:000000000000:<name>, as a queue URL; the local SQS answers for it.
      const queueUrl = `https://sqs.us-east-1.amazonaws.com/000000000000/${s.queue.name}`;
      expect(JSON.parse(redriven.stdout)).toEqual({
        consumer: s.consumer,
        results: [{ id, status: 'redriven', queueUrl, key: `key-${orderId}`, outboxId: expect.any(Number), sent: true }],
      });
      expect(await s.consume()).toBe(1);
      expect(await applied(orderId)).toBe(1);
      expect((await status(id))!.redriven_at).toBeInstanceOf(Date);

      const twice = await cliRun([...args, '--sqs-endpoint', f.sqs.endpoint], env);
      expect(twice.code).toBe(1);
      expect(JSON.parse(twice.stdout).results).toEqual([{ id, status: 'already-redriven' }]);
      expect(await s.consume()).toBe(0);
    }
  });

  it('redrive refuses a stream-parked message (exit 1, naming replay) and one of unknown queue until --queue-url is given', async () => {
    const consumer = `cli-clicks-${++run}`;
    const kinesis = kinesisInbox({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      apply: async () => {
        throw new PermanentError('unknown page');
      },
    });
    await kinesis(kinesisEvent([kinesisRecord({ body: { page: '/' } })]), lambdaContext());
    const [streamParked] = await parkedMessages(kinesis).list();
    const stream = await cliRun(['parked', 'redrive', String(streamParked!.id), '--consumer', consumer, '--yes', '--sqs-endpoint', f.sqs.endpoint], env);
    expect(stream.code).toBe(1);
    expect(stream.stdout).toMatch(new RegExp(`\\n${streamParked!.id} +refused +- +stream-record: it was parked by a stream consumer .*replay it`));

    const s = stage();
    const orderId = `o-${run}`;
    const id = await s.park(orderId);
    await db.query("UPDATE inbox.parked_message SET attributes = (attributes::jsonb - 'eventSourceARN')::json WHERE id = $1", [id]);
    s.fix();
    const unknown = await cliRun(['parked', 'redrive', String(id), '--consumer', s.consumer, '--yes', '--json', '--sqs-endpoint', f.sqs.endpoint], env);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout).results).toEqual([{ id, status: 'refused', refusal: 'no-queue', message: expect.stringContaining('--queue-url') }]);
    const given = await cliRun(
      ['parked', 'redrive', String(id), '--consumer', s.consumer, '--yes', '--queue-url', s.queue.url, '--sqs-endpoint', f.sqs.endpoint],
      env,
    );
    expect(given.code).toBe(0);
    expect(given.stdout).toMatch(new RegExp(`\\n${id} +redriven +${s.queue.url.replace(/[.]/g, '\\.')} +sent\\n`));
    expect(await s.consume()).toBe(1);
    expect(await applied(orderId)).toBe(1);
  });

  it('redrive exits 1 when the send fails after the commit, naming the sweeper; the outbox keeps the message', async () => {
    const s = stage();
    const id = await s.park(`o-${run}`);
    f.sqs.faults.failRequests('SendMessageBatch', { error: 'InternalError', times: 100 });
    const run_ = await cliRun(['parked', 'redrive', String(id), '--consumer', s.consumer, '--yes', '--json', '--sqs-endpoint', f.sqs.endpoint], env);
    expect(run_.code).toBe(1);
    const [result] = JSON.parse(run_.stdout).results;
    expect(result).toMatchObject({ id, status: 'redriven', sent: false, message: expect.stringContaining('sweepOutbox sends it') });
    expect(await db.query('SELECT sent_at FROM inbox.outbox_message WHERE id = $1', [result.outboxId])).toEqual([{ sent_at: null }]);
  });

  it.skipIf(!existsSync('/usr/bin/script'))('asks on a terminal: "n" changes nothing (exit 1), "y" discards', async () => {
    const s = stage();
    const id = await s.park(`o-${run}`);
    const declined = await cliOnTerminal(['parked', 'discard', String(id), '--consumer', s.consumer], env, 'n');
    expect(declined.output).toContain(`Discard 1 parked message of consumer "${s.consumer}" for good? [y/N]`);
    expect(declined.output).toMatch(new RegExp(`\\n${id} +parked +PermanentError: warehouse code unknown`));
    expect(declined.output).toContain('sqs-inbox parked: nothing done.');
    expect(declined.code).toBe(1);
    expect(await status(id)).toEqual({ redriven_at: null, discarded_at: null });

    const accepted = await cliOnTerminal(['parked', 'discard', String(id), '--consumer', s.consumer], env, 'y');
    expect(accepted.code).toBe(0);
    expect((await status(id))!.discarded_at).toBeInstanceOf(Date);
  });
});

describe('npx sqs-inbox parked, on records that carry terminal escapes', () => {
  /** The prompt and the answer's echo run on the terminal's own line discipline: readline writes no cursor moves on a dumb terminal. */
  const DUMB = { TERM: 'dumb' };

  /** Everything a run printed holds no character a terminal acts on, but the layout's line breaks. */
  function expectPrintable(run: { stdout: string; stderr: string }) {
    expect(rawControls(run.stdout, { lineBreaks: true }), `stdout: ${JSON.stringify(run.stdout)}`).toEqual([]);
    expect(rawControls(run.stderr, { lineBreaks: true }), `stderr: ${JSON.stringify(run.stderr)}`).toEqual([]);
  }

  /**
   * What a terminal got, its line discipline's CR LF read as the line break it stands for, and the CR
   * readline writes itself after the answer it echoes.
   */
  const onTerminal = (raw: string) => raw.replace(/\r\n/g, '\n').replace('[y/N] n\r\n', '[y/N] n\n');

  /** What a hostile producer controls in a record: its body, key, an attribute, its group, the text its failure quotes; and a forged queue ARN. */
  const hostileRecord = fc.record({
    note: storableHostileText({ minLength: 1 }),
    rawBody: fc.boolean(),
    key: storableHostileText({ minLength: 1, maxLength: 8 }),
    attributeName: storableHostileText({ minLength: 1, maxLength: 6 }),
    attributeValue: storableHostileText({ minLength: 1, maxLength: 10 }),
    group: storableHostileText({ maxLength: 6 }),
    queue: storableHostileText({ maxLength: 8 }),
  });
  type Hostile = typeof hostileRecord extends fc.Arbitrary<infer T> ? T : never;

  /** A consumer of its own that parks what `apply` refuses. */
  function parkingConsumer(name: string, options: Pick<InboxOptions<unknown>, 'apply' | 'parse'>) {
    const consumer = `${name}-${++run}`;
    const handler = inbox<unknown>({
      consumer,
      database: db.target,
      logger: recordingLogger(),
      metrics: recordingMetrics(),
      onPermanentError: 'park',
      ...options,
    });
    return { consumer, handler };
  }

  /** Parks each record with a PermanentError that quotes its note (or a ParseError, for a body that is not JSON). */
  async function parkHostile(hostile: readonly Hostile[]) {
    const { consumer, handler } = parkingConsumer('cli-hostile', {
      apply: async (_, message) => {
        throw new PermanentError(`note rejected: ${String((message.body as { note?: unknown } | null)?.note)}`);
      },
    });
    const records = hostile.map((h): SQSRecord => {
      const record = sqsRecord({ body: h.rawBody ? h.note : { note: h.note }, key: h.key });
      return {
        ...record,
        attributes: { ...record.attributes, MessageGroupId: h.group },
        messageAttributes: { ...record.messageAttributes, [h.attributeName]: { dataType: 'String', stringValue: h.attributeValue } },
        eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${h.queue}`,
      };
    });
    expect((await handler({ Records: records }, lambdaContext())).batchItemFailures).toEqual([]);
    const stored = await parkedMessages(handler).list({ limit: 1000 });
    expect(stored).toHaveLength(hostile.length);
    return { consumer, stored };
  }

  it("prints a record's escape sequences as visible escapes: show, list, and the prompt before a discard", async () => {
    const { consumer, handler } = parkingConsumer('cli-escapes', {
      // The body is text, not JSON: parse takes it as it is.
      parse: (body) => body,
      apply: async () => {
        throw new PermanentError('warehouse \x1b]0;owned\x07\x1b[2J\rstatus  discarded \u202eevil\u009b31m');
      },
    });
    const record = {
      ...sqsRecord({ body: 'plain \x1b[31mred\u2066 text', key: 'key-\u202e' }),
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:orders\u200f',
    };
    await handler({ Records: [record] }, lambdaContext());
    const [parked] = await parkedMessages(handler).list();
    const error = 'PermanentError: warehouse \\x1b]0;owned\\x07\\x1b[2J\\rstatus  discarded \\u202eevil\\x9b31m';

    const show = await cliRun(['parked', 'show', String(parked!.id), '--consumer', consumer], env);
    expect(show.stdout).toContain(`\nkey           key-\\u202e\n`);
    expect(show.stdout).toContain(`\nerror         ${error}\n`);
    expect(show.stdout).toContain(`\nsource        arn:aws:sqs:us-east-1:000000000000:orders\\u200f\n`);
    expect(show.stdout).toContain('\nbody\n  plain \\x1b[31mred\\u2066 text\n');
    expectPrintable(show);

    const list = await cliRun(['parked', 'list', '--consumer', consumer], env);
    expect(list.stdout.split('\n')[1]).toMatch(/ key-\\u202e +PermanentError: warehouse \\x1b]0;owned\\x07\\x1b\[2J\\rstatus\.\.\.$/);
    expectPrintable(list);

    const json = await cliRun(['parked', 'show', String(parked!.id), '--consumer', consumer, '--json'], env);
    expect(json.stdout).toContain('"errorMessage":"warehouse \\u001b]0;owned\\u0007\\u001b[2J\\rstatus  discarded \\u202eevil\\u009b31m"');
    expect(JSON.parse(json.stdout).message.errorMessage).toBe(parked!.errorMessage);
    expectPrintable(json);

    if (existsSync('/usr/bin/script')) {
      const prompt = await cliOnTerminal(['parked', 'redrive', String(parked!.id), '--consumer', consumer], { ...env, ...DUMB }, 'n');
      expect(prompt.output).toContain(
        `\n${String(parked!.id).padEnd(2)}  parked  PermanentError: warehouse \\x1b]0;owned\\x07\\x1b[...  arn:aws:sqs:us-east-1:000000000000:orders\\u200f\n`,
      );
      expect(rawControls(onTerminal(prompt.raw), { lineBreaks: true })).toEqual([]);
    }
  }, 60_000);

  it('prints nothing of theirs a terminal acts on, over generated hostile records: list, show, their --json (which reads back to the stored values), the prompts, redrive and misuse', async () => {
    const hostile = fc.sample(hostileRecord, propertyParameters(6));
    const { consumer, stored } = await parkHostile(hostile);
    const ids = stored.map((message) => String(message.id));

    for (const args of [['list'], ['list', '--all']]) {
      const printed = await cliRun(['parked', ...args, '--consumer', consumer], env);
      expect(printed.code).toBe(0);
      expectPrintable(printed);
      const json = await cliRun(['parked', ...args, '--consumer', consumer, '--json'], env);
      expectPrintable(json);
      expect(JSON.parse(json.stdout)).toEqual({ consumer, messages: asPrinted(stored) });
    }
    for (const message of stored) {
      const printed = await cliRun(['parked', 'show', String(message.id), '--consumer', consumer], env);
      expect(printed.code).toBe(0);
      expectPrintable(printed);
      const json = await cliRun(['parked', 'show', String(message.id), '--consumer', consumer, '--json'], env);
      expectPrintable(json);
      expect(JSON.parse(json.stdout)).toEqual({ consumer, message: asPrinted(message) });
    }
    if (existsSync('/usr/bin/script')) {
      for (const subcommand of ['discard', 'redrive']) {
        const prompt = await cliOnTerminal(['parked', subcommand, ...ids, '--consumer', consumer], { ...env, ...DUMB }, 'n');
        expect(prompt.code).toBe(1);
        expect(rawControls(onTerminal(prompt.raw), { lineBreaks: true }), JSON.stringify(prompt.raw)).toEqual([]);
      }
    }
    // Their queue ARNs are quoted by the refusals, or name queues this SQS does not have.
    const redriven = await cliRun(['parked', 'redrive', ...ids, '--consumer', consumer, '--yes', '--sqs-endpoint', f.sqs.endpoint], env);
    expect(redriven.code).toBe(1);
    expectPrintable(redriven);
    // Misuse quotes what it was given; a consumer that has none of these ids is named.
    const misuse = await cliRun(['parked', 'redrive', ids[0]!, '--consumer', consumer, '--yes', '--queue-url', `q${hostile[0]!.note}`], env);
    expect(misuse.code).toBe(2);
    expect(misuse.stderr).toMatch(/^sqs-inbox parked: --queue-url "q.*" is not a queue URL/);
    expectPrintable(misuse);
    const nobody = await cliRun(['parked', 'show', ids[0]!, '--consumer', `x${hostile[0]!.note}`], env);
    expect(nobody.code).toBe(1);
    expectPrintable(nobody);
    // Some twenty runs of the CLI, each loading the AWS SDK.
  }, 180_000);
});

/** A value as the CLI's JSON prints it: a payload's bytes as base64. */
function asPrinted(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_, field: unknown) => (field instanceof Uint8Array ? Buffer.from(field).toString('base64') : field)));
}
