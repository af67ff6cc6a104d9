import type { SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from '../../../lambda/inbox/index.js';
import { TRANSPORT, inboxFixture, sqsRecord } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';

// Lambda Managed Instances: one process runs up to 64 invocations per vCPU at once, all through ONE handler
// instance. Here 32 interleave under the local Data API's faults (lost commit answers, 5xx, statements held
// past the call timeout), each with its own request id and its own deadline, with the duplicate filter on and
// the default logger and metrics writing to stdout. Each answer must list exactly its own failures, each log
// line and metric must carry its own invocation's request id, and each message must apply once.

const INVOCATIONS = 32;
const RECORDS = 6;
/** Every few invocations, one whose clock is already inside the deadline's margin: it starts nothing. */
const SHORT_OF_TIME = (invocation: number) => invocation % 8 === 5;
const MARGIN_MS = 1_000;
const EFFECT_SQL = 'INSERT INTO public.mi_effects (token, invocation) VALUES (:token, :invocation)';
const isEffect = (sql: string) => sql.includes('public.mi_effects');

/** mulberry32: the faults' choices, from a fixed seed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let db: InboxFixture;
const ENV = ['POWERTOOLS_LOG_LEVEL', 'POWERTOOLS_METRICS_DISABLED'] as const;
const saved = Object.fromEntries(ENV.map((key) => [key, process.env[key]]));
beforeAll(async () => {
  // Transactions whose client gave up (a lost answer, a timeout) end after a second, not AWS's 3 minutes, so the
  // redeliveries find the server's transaction places free again.
  db = await inboxFixture('managed_instances', { transactionIdleTimeoutMs: 1_000 });
  await db.query('CREATE TABLE public.mi_effects (id bigserial PRIMARY KEY, token text NOT NULL, invocation int NOT NULL)');
});
afterEach(() => {
  db.server.faults.clear();
  for (const key of ENV) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});
afterAll(async () => db.close());

/**
 * Every JSON line written while `run` runs: the EMF metrics' on stdout, the default logger's warnings on stderr
 * (where Powertools' Logger writes them).
 */
async function writtenLines<T>(run: () => Promise<T>): Promise<{ result: T; lines: Record<string, unknown>[] }> {
  const written: string[] = [];
  const streams = [process.stdout, process.stderr] as const;
  const originals = streams.map((stream) => stream.write.bind(stream));
  for (const stream of streams) {
    stream.write = ((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    }) as typeof stream.write;
  }
  try {
    const result = await run();
    return { result, lines: parsed(written) };
  } finally {
    streams.forEach((stream, index) => {
      stream.write = originals[index]!;
    });
  }
}

const parsed = (written: readonly string[]) =>
  written
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

interface Invocation {
  readonly requestId: string;
  readonly records: readonly SQSRecord[];
  readonly poison: ReadonlySet<string>;
}

/** Invocation i's event: standard or FIFO (two groups), with a poison body now and then. */
function event(i: number, round: string): Invocation {
  const fifo = i % 2 === 1;
  const poison = new Set<string>();
  const records = Array.from({ length: RECORDS }, (_, r) => {
    const token = `${round}-${i}-${r}`;
    const bad = (i + r) % 7 === 3;
    const record = sqsRecord({
      messageId: token,
      body: bad ? `{"token": "${token}", "cut short` : { token, invocation: i },
      ...(fifo ? { groupId: `g-${i}-${r % 2}` } : {}),
    });
    if (bad) poison.add(token);
    return record;
  });
  return { requestId: `request-${round}-${i}`, records, poison };
}

describe(`on ${TRANSPORT}: ${INVOCATIONS} interleaved invocations of one handler, as Lambda Managed Instances run them`, () => {
  it('answers each with exactly its own failures, writes each log line and metric with its own request id, and applies each message once', async () => {
    // Arrange: the default logger at WARN and the EMF metrics on, read at the handler's cold start and publish.
    process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const handler = inbox<{ token: string; invocation: number }>({
      consumer: 'managed-instances',
      database: db.target,
      duplicateFilter: 'always',
      callTimeoutMs: 2_000,
      deadlineMarginMs: MARGIN_MS,
      resumeDelaysMs: [5, 10],
      apply: async (tx, { body }) => {
        await tx.execute(EFFECT_SQL, { token: body.token, invocation: body.invocation });
      },
    });
    const random = seeded(35);
    db.server.faults.dropResponse({ operation: 'CommitTransaction', count: Number.POSITIVE_INFINITY, select: () => random() < 0.1 });
    db.server.faults.serverError({ operation: 'ExecuteStatement', status: 503, count: Number.POSITIVE_INFINITY, select: () => random() < 0.05 });
    db.server.faults.slowStatement({ ms: 2_500, match: isEffect, count: 4 });
    const invocations = Array.from({ length: INVOCATIONS }, (_, i) => event(i, 'first'));
    const byRecord = new Map(invocations.flatMap((invocation) => invocation.records.map((record) => [record.messageId, invocation] as const)));

    // Act: all at once, each with its own clock, one handler instance.
    const { result: answers, lines } = await writtenLines(() =>
      Promise.all(
        invocations.map((invocation, i) => {
          const deadline = performance.now() + (SHORT_OF_TIME(i) ? MARGIN_MS / 2 : 60_000 + i * 1_000);
          return handler(
            { Records: [...invocation.records] },
            { awsRequestId: invocation.requestId, getRemainingTimeInMillis: () => deadline - performance.now() },
          );
        }),
      ),
    );
    db.server.faults.clear();

    // Assess: each answer names only records of its own event; its poison records, and all of them when its
    // clock was short, are among them; a record it reports done has its effect committed.
    const committed = new Map(
      (await db.query('SELECT token, count(*)::int AS n FROM public.mi_effects GROUP BY token')).map((row) => [String(row.token), Number(row.n)]),
    );
    const problems: string[] = [];
    for (const [i, invocation] of invocations.entries()) {
      const failed = new Set(answers[i]!.batchItemFailures.map((failure) => failure.itemIdentifier));
      for (const id of failed) if (byRecord.get(id) !== invocation) problems.push(`${invocation.requestId} reports ${id}, a record of another event`);
      for (const record of invocation.records) {
        const id = record.messageId;
        if (invocation.poison.has(id) && !failed.has(id)) problems.push(`${invocation.requestId} reports the poison ${id} done`);
        if (SHORT_OF_TIME(i) && !failed.has(id)) problems.push(`${invocation.requestId}, out of time, reports ${id} done`);
        if (!failed.has(id) && !invocation.poison.has(id) && committed.get(id) !== 1) {
          problems.push(`${invocation.requestId} reports ${id} done with ${committed.get(id) ?? 0} effects`);
        }
      }
    }
    expect(problems).toEqual([]);

    // Each invocation published one EMF record, with its own request id and its own counts.
    const emf = lines.filter((line) => '_aws' in line);
    expect(emf.map((line) => line.function_request_id).sort()).toEqual(invocations.map((invocation) => invocation.requestId).sort());
    for (const [i, invocation] of invocations.entries()) {
      const record = emf.find((line) => line.function_request_id === invocation.requestId)!;
      const failures = answers[i]!.batchItemFailures.length;
      const reported = Number(record.Failures) + Number(record.ShortCircuited) + Number(record.DeferredByDeadline);
      expect({ requestId: invocation.requestId, reported, done: Number(record.Processed) + Number(record.Duplicates) }).toEqual({
        requestId: invocation.requestId,
        reported: failures,
        done: RECORDS - failures,
      });
      // Out of time, it started nothing: its records deferred (on FIFO, each group's first; the rest behind it).
      if (SHORT_OF_TIME(i)) expect([record.Processed, record.DeferredByDeadline]).toEqual([0, i % 2 === 1 ? 2 : RECORDS]);
    }

    // Each log line carries the request id of the invocation that wrote it; a record's line, its event's.
    const logs = lines.filter((line) => !('_aws' in line));
    const poisonLogged = new Set<string>();
    for (const line of logs) {
      const requestId = line.function_request_id;
      expect(
        invocations.some((invocation) => invocation.requestId === requestId),
        JSON.stringify(line),
      ).toBe(true);
      if (typeof line.messageId === 'string') {
        expect({ line: line.message, messageId: line.messageId, requestId }).toEqual({
          line: line.message,
          messageId: line.messageId,
          requestId: byRecord.get(line.messageId)!.requestId,
        });
        if ((line.error as { name?: string } | undefined)?.name === 'ParseError') poisonLogged.add(line.messageId);
      }
    }
    const poisonRan = invocations.flatMap((invocation, i) => (SHORT_OF_TIME(i) ? [] : [...invocation.poison]));
    // A poison record short-circuited behind a failure of its FIFO group is not logged; every other is, once.
    for (const id of poisonLogged) expect(poisonRan).toContain(id);
    expect(poisonLogged.size).toBeGreaterThan(0);

    // Redelivered without faults, the poison left out (in the dead-letter queue, its FIFO group free again),
    // until nothing fails: every well-formed message applied exactly once, a poison one never.
    const isPoison = (record: SQSRecord) => byRecord.get(record.messageId)!.poison.has(record.messageId);
    let pending = invocations.flatMap((invocation, i) => {
      const failed = new Set(answers[i]!.batchItemFailures.map((failure) => failure.itemIdentifier));
      return invocation.records.filter((record) => failed.has(record.messageId) && !isPoison(record));
    });
    for (let round = 2; round <= 4 && pending.length > 0; round++) {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const again = pending.map((record) => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(round) } }));
      const answer = await handler({ Records: again }, { awsRequestId: `redelivery-${round}`, getRemainingTimeInMillis: () => 60_000 });
      const failed = new Set(answer.batchItemFailures.map((failure) => failure.itemIdentifier));
      pending = again.filter((record) => failed.has(record.messageId));
    }
    expect(pending).toEqual([]);
    const applied = await db.query('SELECT token, count(*)::int AS n FROM public.mi_effects GROUP BY token');
    const counts = new Map(applied.map((row) => [String(row.token), Number(row.n)]));
    const wrong = invocations.flatMap((invocation) =>
      invocation.records.flatMap((record) => {
        const expected = invocation.poison.has(record.messageId) ? 0 : 1;
        const n = counts.get(record.messageId) ?? 0;
        return n === expected ? [] : [`${record.messageId}: ${n} effects, expected ${expected}`];
      }),
    );
    expect(wrong).toEqual([]);
  }, 120_000);

  it('writes the request id on each EMF record of an invocation, the ones flushed at 100 values included', async () => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const handler = inbox<{ token: string }>({
      consumer: 'managed-instances-large',
      database: db.target,
      apply: async (tx, { body }) => {
        await tx.execute(EFFECT_SQL, { token: body.token, invocation: -1 });
      },
    });
    const records = Array.from({ length: 120 }, (_, r) => sqsRecord({ messageId: `large-${r}`, body: { token: `large-${r}` } }));

    const { lines } = await writtenLines(() => handler({ Records: records }, { awsRequestId: 'request-large', getRemainingTimeInMillis: () => 60_000 }));

    // 120 record latencies: a record of the first 100, then the rest with the counts.
    const emf = lines.filter((line) => '_aws' in line);
    expect(emf.map((line) => [line.function_request_id, (line.RecordLatency as number[]).length])).toEqual([
      ['request-large', 100],
      ['request-large', 20],
    ]);

    // The next invocation, without a Lambda context, has no request id: the last one's is not kept.
    const next = await writtenLines(() => handler({ Records: [sqsRecord({ messageId: 'large-next', body: { token: 'large-next' } })] }));
    expect(next.lines.filter((line) => '_aws' in line).map((line) => 'function_request_id' in line)).toEqual([false]);
  });

  // DSQL's conflicts are counted while an invocation runs, in a process shared by the others: each must be
  // published with the invocation whose transaction conflicted. The invocations that make no write (a poison
  // record each, refused before any call) publish while the others conflict, and must carry none of theirs.
  it.runIf(TRANSPORT === 'dsql')('publishes each DSQL conflict with the invocation whose transaction met it', async () => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const conflicts = db.dsql!.proxy.conflicts;
    const [injectedBefore, rateBefore, randomBefore] = [conflicts.injected, conflicts.rate, conflicts.random];
    conflicts.random = seeded(36);
    conflicts.rate = 0.4;
    const handler = inbox<{ token: string; invocation: number }>({
      consumer: 'managed-instances-conflicts',
      database: db.target,
      apply: async (tx, { body }) => {
        await tx.execute(EFFECT_SQL, { token: body.token, invocation: body.invocation });
      },
    });
    const busy = Array.from({ length: 8 }, (_, i) =>
      Array.from({ length: RECORDS }, (_, r) => sqsRecord({ messageId: `conflict-${i}-${r}`, body: { token: `conflict-${i}-${r}`, invocation: i } })),
    );
    const context = (requestId: string) => ({ awsRequestId: requestId, getRemainingTimeInMillis: () => 60_000 });

    const { lines } = await writtenLines(async () => {
      const running: Promise<unknown>[] = busy.map((records, i) => handler({ Records: records }, context(`busy-${i}`)));
      for (let i = 0; i < 8; i++) {
        await new Promise((resolve) => setTimeout(resolve, 40));
        running.push(handler({ Records: [sqsRecord({ messageId: `idle-${i}`, body: '{"cut short' })] }, context(`idle-${i}`)));
      }
      return Promise.all(running);
    });
    Object.assign(conflicts, { rate: rateBefore, random: randomBefore });

    const emf = lines.filter((line) => '_aws' in line);
    // A metric with several values is an array in the EMF line, one value per conflict.
    const total = (value: unknown) => [value ?? []].flat().reduce((sum: number, one) => sum + Number(one), 0);
    const counted = (line: Record<string, unknown>) => total(line.ConflictRetries) + total(line.ConflictsExhausted);
    expect(emf.filter((line) => String(line.function_request_id).startsWith('idle-')).map((line) => [line.function_request_id, counted(line)])).toEqual(
      Array.from({ length: 8 }, (_, i) => [`idle-${i}`, 0]),
    );
    expect(emf.reduce((sum, line) => sum + counted(line), 0)).toBe(conflicts.injected - injectedBefore);
    expect(conflicts.injected - injectedBefore).toBeGreaterThan(0);
  });
});
