import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runScenario, startLocal } from '../local/index.js';
import { demoConsumer } from '../demo/consumers.js';
import type { ScenarioResult } from '../local/index.js';
import { SCENARIO_ROWS } from '../demo/run.js';
import { bundleTables, checkInboxFunction, measureBundles } from './bundle.js';
import type { BundleSection } from './bundle.js';
import { CONCURRENCY, POWERTOOLS_REAL, variants } from './consumers.js';
import { capacitySection, purgeCapacityTable } from './capacity.js';
import { crashAfterEffect, crashTable } from './crash.js';
import type { CrashResult } from './crash.js';
import { DYNAMODB_OPERATIONS } from './dynamodb.js';
import { latencyModelShape, latencyModelTable } from './model.js';
import type { Variant } from './consumers.js';
import { benchDatabase } from './database.js';
import type { BenchDatabase } from './database.js';
import { countCalls, dynamoDbSummary, dynamoDbTotal, formatCount, interleave, Invoker, median, percentile, ratio } from './measure.js';
import type { CallCount, Ratio, Shape, ShapeResult } from './measure.js';
import { measurePurge } from './purge.js';
import type { PurgeRun } from './purge.js';
import { freshRecord, freshRecords } from './records.js';
import { toMarkdown, toText } from './report.js';
import type { Table } from './report.js';
import { startBenchServers } from './servers.js';
import { databaseBoundShape, duplicatesShape, fifoShape, standardShape } from './shapes.js';
import { wireTransportTable } from './transports.js';
import type { ShapeSettings } from './shapes.js';

/** The variant every ratio is taken against: the effect alone, no inbox. */
const BARE = 'bare';
/** The per-record and batch modes of inbox(), in summary order. */
const MODES = ['inbox-stmt', 'inbox-batch-stmt', 'inbox-tx', 'inbox-tx-k3', 'inbox-batch-tx'];

/**
 * `npm run bench`: the database side (embedded PostgreSQL and the local Data API servers) runs in a
 * process of its own; this process runs the handlers and times them. It measures every consumer variant
 * side by side on one database: Data API calls per message (exact, counted by the server), throughput in
 * interleaved rounds as a ratio to the bare effect (with latency added per call, and with the database
 * as the bottleneck), FIFO with 1 and 10 groups, the purge at two table sizes, the fault scenario for
 * inbox and naive, and the consumer's bundle against Powertools' (measured first, before anything else
 * loads the machine). Prints the tables and writes bench/results.md.
 *
 * Exits 1 when a record fails (no fault is injected; the cause is printed), a call count is not the
 * designed one, a variant applied the wrong number of effects, a purge plan scans the whole table, the
 * inbox scenario shows a double, lost or out-of-order effect, or the consumer bundle misses its budget.
 * The issue's performance targets are reported met or missed, not failed on: they are ratios on a shared
 * machine.
 */
async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '7' },
      batch: { type: 'string', default: '10' },
      batches: { type: 'string', default: '8' },
      'fifo-batches': { type: 'string', default: '4' },
      'latency-ms': { type: 'string', default: '10' },
      'model-rounds': { type: 'string', default: '3' },
      'model-batches': { type: 'string', default: '3' },
      'db-limit': { type: 'string', default: '4' },
      'db-lambdas': { type: 'string', default: '8' },
      'db-seconds': { type: 'string', default: '1.5' },
      'purge-rows': { type: 'string', default: '1000000' },
      'purge-small-rows': { type: 'string', default: '100000' },
      'skip-purge': { type: 'boolean', default: false },
      'scenario-messages': { type: 'string', default: '1000' },
      seed: { type: 'string', default: '417' },
      'skip-scenario': { type: 'boolean', default: false },
      'skip-wire': { type: 'boolean', default: false },
      'import-rounds': { type: 'string', default: '15' },
      'skip-bundle': { type: 'boolean', default: false },
      'bundle-only': { type: 'boolean', default: false },
      'calls-only': { type: 'boolean', default: false },
      shapes: { type: 'string' },
      'fail-variant': { type: 'string' },
      out: { type: 'string' },
      transport: { type: 'string' },
    },
  });
  // `--transport dsql`: the inbox on the DSQL profile, in its own file (bench/dsql.ts).
  if (values.transport === 'dsql') return (await import('./dsql.js')).runDsqlBench(process.argv.slice(2));
  const rounds = wholeNumber(values.rounds, '--rounds', 1);
  const batchSize = wholeNumber(values.batch, '--batch', 2);
  const batches = wholeNumber(values.batches, '--batches', 1);
  const fifoBatches = wholeNumber(values['fifo-batches'], '--fifo-batches', 1);
  const latencyMs = wholeNumber(values['latency-ms'], '--latency-ms', 0);
  const modelRounds = wholeNumber(values['model-rounds'], '--model-rounds', 1);
  const modelBatches = wholeNumber(values['model-batches'], '--model-batches', 1);
  const dbLimit = wholeNumber(values['db-limit'], '--db-limit', 1);
  const dbLambdas = wholeNumber(values['db-lambdas'], '--db-lambdas', 1);
  const dbSeconds = Number(values['db-seconds']);
  if (!(dbSeconds > 0)) throw new Error(`--db-seconds must be a number of seconds above 0, got "${values['db-seconds']}"`);
  const purgeRows = wholeNumber(values['purge-rows'], '--purge-rows', 1000);
  const purgeSmallRows = wholeNumber(values['purge-small-rows'], '--purge-small-rows', 1000);
  const scenarioMessages = wholeNumber(values['scenario-messages'], '--scenario-messages', 1);
  const seed = wholeNumber(values.seed, '--seed', 0);
  const importRounds = wholeNumber(values['import-rounds'], '--import-rounds', 1);
  const callsOnly = values['calls-only'];
  const bundleOnly = values['bundle-only'];
  if (bundleOnly && values['skip-bundle']) throw new Error('--bundle-only and --skip-bundle exclude each other');
  if (bundleOnly && callsOnly) throw new Error('--bundle-only and --calls-only exclude each other');
  const skipBundle = values['skip-bundle'] || callsOnly;
  const skipPurge = values['skip-purge'] || callsOnly;
  const skipScenario = values['skip-scenario'] || callsOnly;
  const all = variants();
  const failVariant = values['fail-variant'];
  if (failVariant !== undefined && !all.some((variant) => variant.id === failVariant)) {
    throw new Error(`--fail-variant: "${failVariant}" is not a variant (${all.map((variant) => variant.id).join(', ')})`);
  }
  const out = values.out ?? fileURLToPath(new URL('./results.md', import.meta.url));
  const started = Date.now();
  const load = loadavg()[0]!;

  const tables: Table[] = [];
  let modelTable: Table | undefined;
  let wireTable: Table | undefined;
  const problems: string[] = [];
  const ran: string[] = [];
  const skipped: string[] = [];
  // Measured first, while nothing else of the bench runs; printed last.
  let bundles: BundleSection | undefined;
  if (!skipBundle) {
    problems.push(...checkInboxFunction());
    bundles = await measureBundles({ rounds: importRounds, progress });
  }
  if (bundleOnly && bundles) {
    const bundleTablesOnly = bundleTables(bundles, problems);
    process.stdout.write(
      [
        'sqs-inbox benchmarks: the bundle section only (bench/results.md left as it is)',
        `date: ${new Date(started).toISOString()}`,
        `node: ${process.version}, cpus: ${cpus().length} x ${cpus()[0]?.model.trim() ?? 'unknown'}, load average at start: ${load.toFixed(2)}`,
        '',
        ...bundleTablesOnly.flatMap((table) => [toText(table), '']),
        ...(problems.length ? ['PROBLEMS:', ...problems.map((problem) => `  - ${problem}`)] : ['The consumer bundle is within its budget.']),
        '',
      ].join('\n'),
    );
    return problems.length ? 1 : 0;
  }

  const settings: ShapeSettings = { batchSize, batches, latencyMs };
  const targets: Target[] = [];
  progress('starting the server process: embedded PostgreSQL and the local Data API servers...');
  const servers = await startBenchServers();
  let database: BenchDatabase | undefined;
  try {
    const open = await servers.start('open');
    // Room for every transaction the database-bound shape opens (10 per Lambda), so that only the call limit
    // binds: past the server's 48 open transactions a BeginTransaction would wait for a place while it holds
    // one of the few call places, and the open transactions could not run their next calls.
    const limited = await servers.start('limited', {
      maxConcurrentCalls: dbLimit,
      maxOpenTransactions: dbLambdas * CONCURRENCY + 10,
      maxConnectionsPerDatabase: dbLambdas * CONCURRENCY + 30,
    });
    database = await benchDatabase(servers.postgresUrl, open);
    const dynamodb = await servers.startDynamoDb();
    if (failVariant !== undefined) {
      // The failure the exit-code test forces: the database refuses that variant's effect rows.
      await database.session.execute(
        `ALTER TABLE public.bench_effect ADD CONSTRAINT bench_forced_failure CHECK (variant <> '${failVariant.replace(/'/g, "''")}')`,
      );
    }
    const invoker = new Invoker(database, dynamodb.endpoint);

    progress('1 Data API calls per message');
    const calls = new Map<string, CallCount>();
    for (const variant of all) calls.set(variant.id, await countCalls(invoker, open, variant, batchSize, 2, dynamodb));
    tables.push(callsTable(all, calls, batchSize, problems));
    ran.push('call counts');

    const results: ShapeResult[] = [];
    if (!callsOnly && values.shapes !== 'none') {
      progress('2 throughput: warming up every variant (untimed)');
      for (const variant of all) {
        for (const server of [open, limited]) {
          await invoker.invoke(variant, freshRecords(batchSize), server, 'warm-up');
          await invoker.invoke(
            variant,
            Array.from({ length: batchSize }, () => freshRecord({ groupId: `warm-up-${variant.id}` })),
            server,
            'warm-up',
          );
        }
      }
      const fifo: ShapeSettings = { ...settings, batches: fifoBatches };
      // The flat-latency shapes delay DynamoDB's calls as much as the Data API's; the latency model gives each its own.
      const flat = (shape: Shape): Shape => ({
        ...shape,
        before: async () => {
          await shape.before?.();
          await dynamodb.latency(Object.fromEntries(DYNAMODB_OPERATIONS.map((operation) => [operation, latencyMs])));
        },
        after: async () => {
          await shape.after?.();
          await dynamodb.latency({});
        },
      });
      const shapes = [
        latencyModelShape(batchSize, modelBatches, open, dynamodb),
        flat(standardShape(settings, open)),
        flat(duplicatesShape(settings, open)),
        flat(fifoShape(fifo, open, 1)),
        flat(fifoShape(fifo, open, 10)),
        databaseBoundShape(settings, limited, dbLambdas, dbLimit, dbSeconds),
      ];
      const only = values.shapes === 'none' ? [] : values.shapes?.split(',');
      if (only) {
        const unknown = only.filter((key) => !shapes.some((shape) => shape.key === key));
        if (unknown.length) throw new Error(`--shapes: unknown ${unknown.join(', ')}; the shapes are ${shapes.map((shape) => shape.key).join(', ')}`);
        shapes.splice(0, shapes.length, ...shapes.filter((shape) => only.includes(shape.key)));
      }
      for (const [index, shape] of shapes.entries()) {
        const shapeRounds = shape.key === 'model' ? modelRounds : rounds;
        progress(`2 throughput: ${shape.name} (${index + 1}/${shapes.length}), ${shapeRounds} rounds`);
        const result = await interleave(shape, all, {
          rounds: shapeRounds,
          invoker,
          serverCpuMicros: () => servers.cpuMicros(),
          onRound: (round) => progress(`    round ${round + 1}/${shapeRounds}`),
        });
        if (shape.key === 'model') modelTable = latencyModelTable(all, calls, result, batchSize, BARE);
        else results.push(result);
      }
      tables.push(...throughputTables(all, results, rounds));
      if (['fifo-1', 'fifo-10'].every((key) => results.some((result) => result.shape.key === key))) tables.push(fifoTable(all, results));
      ran.push('throughput');
    }
    if (!callsOnly && values.shapes === undefined)
      tables.push(...(await capacitySection(servers, database, invoker, all, [open, limited], { lambdas: dbLambdas, limit: dbLimit, batchSize, progress })));

    if (!values['skip-wire']) {
      // Section 0b: the modes over the PostgreSQL wire protocol, before the effects check counts their rows too.
      const modes = all.filter((variant) => MODES.includes(variant.id));
      const wireOptions = { modes, invoker, dataApiCalls: calls, batchSize, batches: modelBatches, rounds: modelRounds, progress, problems };
      wireTable = await wireTransportTable({
        ...wireOptions,
        postgresUrl: servers.postgresUrl,
        database: database.name,
        timed: !callsOnly && values.shapes !== 'none',
      });
      ran.push('wire transport');
    } else {
      skipped.push('the wire transport (--skip-wire)');
    }

    // The summary goes first in the report; made now, so that its targets come before the purge's.
    const complete = ['standard', 'fifo-1', 'fifo-10', 'database-bound'].every((key) => results.some((result) => result.shape.key === key));
    const summary = complete ? summaryTable(all, calls, results, batchSize, latencyMs, dbLimit, targets) : undefined;

    progress('3 checking every variant applied its effect exactly once per message');
    tables.push(effectsTable(all, invoker, await database.effectsByVariant(), problems));
    ran.push('work check');

    if (!skipPurge) {
      const purgeRuns: PurgeRun[] = [];
      for (const rows of [purgeSmallRows, purgeRows]) {
        progress(`4 purge: ${rows.toLocaleString('en-US')} rows`);
        purgeRuns.push(
          await measurePurge(servers.postgresUrl, open, rows, {
            smallRows: purgeSmallRows,
            largeRows: purgeRows,
            oldShare: 0.2,
            batchSize: 5000,
            previousBatches: 4,
            claimLanes: 2,
            progress,
          }),
        );
      }
      tables.push(purgeTable(purgeRuns, problems, targets), purgeCapacityTable(purgeRuns, 2));
      ran.push('purge');
    } else {
      skipped.push(`the purge (${callsOnly ? '--calls-only' : '--skip-purge'})`);
    }

    if (wireTable) tables.unshift(wireTable);
    if (modelTable) tables.unshift(modelTable);
    if (summary) tables.unshift(summary);
    // Failures are problems whatever else ran: no fault was injected, so each is a bug or a timeout.
    problems.unshift(...counted(invoker.failures));
    if (failVariant !== undefined)
      problems.unshift(`--fail-variant ${failVariant}: the database was told to refuse its effect rows, so its failures below were forced`);
  } finally {
    database?.close();
    await servers.close();
  }

  if (!skipScenario) {
    // The scenario drives faults from inside its own stack (the SQS model, the Data API's fault schedule), so
    // it runs in this process, after the server process is gone. A 2 s idle timeout, as the demo uses: a
    // worker that "crashes" inside a transaction leaves it open, and its claim's row lock must be freed
    // before the redelivery can claim.
    progress('5 fault scenario: starting the local stack in this process');
    const local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
    try {
      const scenarios: ScenarioResult[] = [];
      for (const pattern of ['inbox', 'naive'] as const) {
        progress(`5 fault scenario: ${pattern}, ${scenarioMessages} messages, seed ${seed}`);
        scenarios.push(await runScenario(local, { ...demoConsumer(pattern), messages: scenarioMessages, seed, consumers: 3 }));
      }
      const inboxRun = scenarios[0]!;
      if (!inboxRun.completed || inboxRun.extraEffects > 0 || inboxRun.lost > 0 || inboxRun.orderViolations > 0) {
        problems.push(`the inbox scenario (seed ${seed}) shows a double, lost or out-of-order effect, or did not finish`);
      }
      tables.push(scenarioTable(scenarios));
      progress('5b crash after the effect, before the completion is recorded: every variant with a dedup record');
      const crashes: CrashResult[] = await crashAfterEffect(local, all, { batches: 2, batchSize });
      tables.push(crashTable(crashes, problems));
      ran.push('fault scenario');
    } finally {
      await local.close();
    }
  } else {
    skipped.push(`the fault scenario (${callsOnly ? '--calls-only' : '--skip-scenario'})`);
  }
  if (bundles) {
    tables.push(...bundleTables(bundles, problems));
    ran.push('bundle');
  } else {
    skipped.push(`the consumer bundle (${callsOnly ? '--calls-only' : '--skip-bundle'})`);
  }
  if (targets.length > 0) tables.push(targetsTable(targets));

  const header = [
    `date: ${new Date(started).toISOString()}`,
    `node: ${process.version}, cpus: ${cpus().length} x ${cpus()[0]?.model.trim() ?? 'unknown'}, load average at start: ${load.toFixed(2)}`,
    `command: npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    `rounds: ${rounds} per shape (after one untimed warm-up batch per variant), batches of ${batchSize}, ${CONCURRENCY} records or groups in flight per batch, ` +
      `+${latencyMs} ms per call in the latency shapes, baseline: ${BARE}` +
      (bundles ? `; ${importRounds} cold-import rounds` : ''),
    `wall time: ${((Date.now() - started) / 1000).toFixed(0)} s`,
  ];
  const verdict = problems.length ? ['PROBLEMS:', ...problems.map((problem) => `  - ${problem}`)] : [verdictLine(ran, skipped)];

  process.stdout.write(['sqs-inbox benchmarks', ...header, '', ...tables.flatMap((table) => [toText(table), '']), ...verdict, ''].join('\n'));
  const markdown = [
    '# sqs-inbox benchmark results',
    '',
    'Written by `npm run bench`; overwritten on every run. See bench/README.md for what each number means.',
    '',
    ...header.map((line) => `- ${line}`),
    '',
    ...tables.flatMap((table) => [toMarkdown(table), '']),
    ...(problems.length ? ['**Problems:**', '', ...problems.map((problem) => `- ${problem}`)] : [`**${verdict[0]}**`]),
    '',
  ].join('\n');
  await writeFile(out, markdown);
  if (problems.length)
    process.stderr.write(`[bench] ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n${problems.map((problem) => `  - ${problem}\n`).join('')}`);
  return problems.length ? 1 : 0;
}

/** Identical lines once, with how many times they occurred. */
function counted(lines: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const line of lines) counts.set(line, (counts.get(line) ?? 0) + 1);
  return [...counts].map(([line, count]) => (count === 1 ? line : `${line} (${count} batches)`));
}

/** What a run without problems says: only about the sections it ran. */
function verdictLine(ran: readonly string[], skipped: readonly string[]): string {
  const claims = [
    'no record failed',
    ...(ran.includes('call counts') ? ['every call count matches the design'] : []),
    ...(ran.includes('wire transport') ? ["every mode's round trips over the PostgreSQL wire protocol match its designed calls"] : []),
    ...(ran.includes('work check') ? ['every variant applied exactly its effect per message'] : []),
    ...(ran.includes('purge') ? ['every purge batch was found through the index'] : []),
    ...(ran.includes('fault scenario') ? ['the inbox scenario has no double, lost or out-of-order effect'] : []),
    ...(ran.includes('bundle') ? ['the consumer bundle is within its budget'] : []),
  ];
  const sentence = `${claims.join(', ').replace(/, ([^,]*)$/, ' and $1')}.`;
  return `${sentence[0]!.toUpperCase()}${sentence.slice(1)}${skipped.length ? ` Not run, so nothing is claimed about them: ${skipped.join(', ')}.` : ''}`;
}

/** One of issue 9's targets, and whether this run met it. */
interface Target {
  readonly what: string;
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

function callsTable(all: readonly Variant[], calls: ReadonlyMap<string, CallCount>, batchSize: number, problems: string[]): Table {
  const rows = all.map((variant) => {
    const count = calls.get(variant.id)!;
    const designed = batchSize === 10 ? variant.expectedCalls : undefined;
    const dynamo = { fresh: dynamoDbTotal(count.dynamodb.fresh), duplicate: dynamoDbTotal(count.dynamodb.duplicate) };
    const designedDynamo = variant.expectedDynamoDbCalls ?? { fresh: 0, duplicate: 0 };
    const matches =
      designed === undefined ||
      (near(count.fresh, designed.fresh) &&
        near(count.duplicate, designed.duplicate) &&
        near(dynamo.fresh, designedDynamo.fresh) &&
        near(dynamo.duplicate, designedDynamo.duplicate));
    if (!matches) {
      problems.push(
        `${variant.id}: ${formatCount(count.fresh)} Data API and ${formatCount(dynamo.fresh)} DynamoDB calls per new message, ${formatCount(count.duplicate)} and ` +
          `${formatCount(dynamo.duplicate)} per duplicate; designed for ${designed!.fresh} and ${designedDynamo.fresh}, ${designed!.duplicate} and ${designedDynamo.duplicate}`,
      );
    }
    return [
      variant.id,
      variant.atomic,
      formatCount(count.fresh),
      formatCount(count.duplicate),
      designed === undefined ? 'not checked' : matches ? 'as designed' : `MISMATCH (designed ${designed.fresh}/${designed.duplicate})`,
      count.freshByOperation || 'none',
      count.duplicateByOperation || 'none',
      `${dynamoDbSummary(count.dynamodb.fresh)} / ${dynamoDbSummary(count.dynamodb.duplicate)}`,
    ];
  });
  return {
    title: `1. Data API calls per message (exact, counted by the server), batches of ${batchSize}`,
    headers: ['variant', 'atomic', 'new', 'duplicate', 'check', 'new message: calls', 'duplicate: calls', 'DynamoDB: new / duplicate'],
    rows,
    notes: [
      ...all.map((variant) => `${variant.id}: ${variant.description}.`),
      'atomic: the dedup record and the effect commit together or not at all. naive and powertools-style are NOT atomic: ' +
        'a crash or a lost response after the effect and before the record is written applies the effect again on redelivery ' +
        '(powertools-style: once the INPROGRESS record expires). Section 5 shows what that costs the naive pattern. ' +
        'bare has no dedup record at all: it applies every redelivery again.',
      'powertools-style keeps its idempotency record in the same PostgreSQL over the same Data API, so its calls compare like for like. ' +
        `The real utility (${POWERTOOLS_REAL}) keeps it in DynamoDB: another store, other round trips (counted at the local DynamoDB, last column), ` +
        'and no transaction shared with Aurora. Its duplicate costs one conditional PutItem, which returns the COMPLETED record.',
      "Duplicates: inbox()'s duplicate filter ('auto') looks the batch's keys up in one autocommit call when the batch holds a " +
        'redelivery, and settles the known duplicates without a transaction; the batch statement settles them in its one call.',
      `Counts are the mean over ${batchSize * 2} new messages in 2 batches, then their redeliveries (receive count 2) in the same batches. ` +
        (batchSize === 10 ? 'They are checked against the design.' : 'The design is for batches of 10, so they are not checked.'),
    ],
  };
}

const near = (a: number, b: number) => Math.abs(a - b) < 1e-9;
const times = (value: number) => `${value.toFixed(2)}x`;

function throughputTables(all: readonly Variant[], results: readonly ShapeResult[], rounds: number): Table[] {
  const cell = (result: ShapeResult, id: string) => result.variants.find((variant) => variant.id === id)!;
  const ratios: Table = {
    title: `2. Throughput, as a ratio to bare in the same round (median of ${rounds} rounds); median messages/s in parentheses`,
    headers: ['variant', ...results.map((result) => result.shape.name)],
    rows: all.map((variant) => [
      variant.id,
      ...results.map((result) => `${times(ratio(result, variant.id, BARE).median)} (${Math.round(cell(result, variant.id).median)}/s)`),
    ]),
    notes: [
      ...results.map((result) => `${result.shape.name}: ${result.shape.description}.`),
      'A ratio above 1 is faster than bare; its inverse is the wall time against bare. The variants run one after another within each ' +
        'round, the first rotating each round.',
      'The database side (PostgreSQL and the Data API server) runs in a process of its own, so a variant that makes more calls pays for ' +
        "them in round trips and in database work, not also in the server's CPU inside the process that times it. Both processes still " +
        "share this machine's cores.",
      'The added latency stands in for an AWS round trip (an assumption, not a measurement): it is added at the server before the call ' +
        'runs. In the database-bound shape no latency is added, and the server runs a limited number of calls at once, so the ratios ' +
        'approach the inverse ratio of the database work per message.',
      'Absolute messages/s on this shared machine are not claims about anything; read the ratios, and their spread in 2b.',
    ],
  };
  const spread: Table = {
    title: '2b. Spread of the per-round ratio to bare (min - max): how much the noise moved the ratios above',
    headers: ['variant', ...results.map((result) => result.shape.name)],
    rows: all.map((variant) => [
      variant.id,
      ...results.map((result) => {
        const { min, max } = ratio(result, variant.id, BARE);
        return `${min.toFixed(2)} - ${max.toFixed(2)}`;
      }),
    ]),
  };
  const cpu: Table = {
    title: "2d. CPU per message, median over the rounds: the handlers' process / the Data API server's process, in microseconds",
    headers: ['variant', ...results.map((result) => result.shape.name)],
    rows: all.map((variant) => [
      variant.id,
      ...results.map((result) => {
        const { handler, server } = cell(result, variant.id).cpu;
        return `${Math.round(handler)} / ${Math.round(server)}`;
      }),
    ]),
    notes: [
      'What each message cost in CPU outside PostgreSQL: in the process that runs the handlers (inbox() or the hand-written consumer, ' +
        "and the SDK client), and in the server process (the local Data API's HTTP and result mapping). It explains the loopback part " +
        "of the ratios: on AWS the client's share stays, the server's is the service's.",
    ],
  };
  return [ratios, spread, cpu];
}

/** FIFO with 10 groups against 1 group: the parallelism a FIFO queue's groups buy each variant. */
function fifoTable(all: readonly Variant[], results: readonly ShapeResult[]): Table {
  const one = results.find((result) => result.shape.key === 'fifo-1')!;
  const ten = results.find((result) => result.shape.key === 'fifo-10')!;
  const rate = (result: ShapeResult, id: string) => result.variants.find((variant) => variant.id === id)!.perRound;
  return {
    title: '2c. FIFO: 10 message groups against 1 group, messages/s (median of the per-round ratios)',
    headers: ['variant', '1 group', '10 groups', '10 groups / 1 group', 'min - max'],
    rows: all.map((variant) => {
      const ratios = rate(ten, variant.id).map((value, round) => value / rate(one, variant.id)[round]!);
      return [
        variant.id,
        `${Math.round(median(rate(one, variant.id)))}/s`,
        `${Math.round(median(rate(ten, variant.id)))}/s`,
        times(median(ratios)),
        `${Math.min(...ratios).toFixed(2)} - ${Math.max(...ratios).toFixed(2)}`,
      ];
    }),
    notes: [
      'One group runs its records one at a time, in order; 10 groups run side by side. A batch mode applies the batch in one ' +
        'transaction or statement either way, so it gains little from more groups: it is already fast with one.',
    ],
  };
}

function effectsTable(all: readonly Variant[], invoker: Invoker, effects: ReadonlyMap<string, number>, problems: string[]): Table {
  const rows = all.map((variant) => {
    const applied = (variant.dedup ? invoker.firstDeliveries : invoker.deliveries).get(variant.id) ?? 0;
    const expected = applied * variant.effectStatements;
    const actual = effects.get(variant.id) ?? 0;
    if (actual !== expected) problems.push(`${variant.id}: ${actual} effect rows for ${applied} messages; expected ${expected}`);
    return [
      variant.id,
      variant.dedup ? 'new messages' : 'every delivery',
      String(applied),
      String(expected),
      String(actual),
      actual === expected ? 'ok' : 'WRONG',
    ];
  });
  return {
    title: '3. Work check: effect rows written, against the messages that should apply',
    headers: ['variant', 'applies', 'messages', 'expected rows', 'rows', 'check'],
    rows,
    notes: [
      'Every redelivery applied nothing (bare, which has no dedup, applied each again), and every new message applied its effect ' +
        'exactly once: the timings measured real work.',
    ],
  };
}

function summaryTable(
  all: readonly Variant[],
  calls: ReadonlyMap<string, CallCount>,
  results: readonly ShapeResult[],
  batchSize: number,
  latencyMs: number,
  dbLimit: number,
  targets: Target[],
): Table {
  const shape = (key: string) => results.find((result) => result.shape.key === key)!;
  const standard = shape('standard');
  const bound = shape('database-bound');
  const fifoOne = shape('fifo-1');
  const fifoTen = shape('fifo-10');
  const wall = (id: string): Ratio => {
    const { median: mid, min, max } = ratio(standard, BARE, id);
    return { median: mid, min, max };
  };
  const fifoGain = (id: string) => {
    const one = fifoOne.variants.find((variant) => variant.id === id)!.perRound;
    const ten = fifoTen.variants.find((variant) => variant.id === id)!.perRound;
    return median(ten.map((value, round) => value / one[round]!));
  };
  const target = (what: string, wanted: string, measured: number, met: boolean, format = times) =>
    targets.push({ what, target: wanted, measured: format(measured), met });
  const count = (id: string) => calls.get(id)!;
  target('calls per new message, single statement per record', '1.0', count('inbox-stmt').fresh, near(count('inbox-stmt').fresh, 1), formatCount);
  target(
    'calls per new message, transaction per record, k = 1 / k = 3',
    'k + 3 (4 / 6)',
    count('inbox-tx').fresh,
    near(count('inbox-tx').fresh, 4) && near(count('inbox-tx-k3').fresh, 6),
    (value) => `${formatCount(value)} / ${formatCount(count('inbox-tx-k3').fresh)}`,
  );
  target(
    `calls per new message, batch transaction, batch of ${batchSize}`,
    'at most 0.5',
    count('inbox-batch-tx').fresh,
    count('inbox-batch-tx').fresh <= 0.5,
    formatCount,
  );
  target(
    `calls per new message, batch statement, batch of ${batchSize}`,
    'at most 0.15',
    count('inbox-batch-stmt').fresh,
    count('inbox-batch-stmt').fresh <= 0.15,
    formatCount,
  );
  const worstDuplicate = Math.max(...MODES.map((id) => count(id).duplicate));
  target(`calls per duplicate, every mode, batch of ${batchSize}`, 'at most 0.1', worstDuplicate, worstDuplicate <= 0.1 + 1e-9, formatCount);
  for (const id of ['inbox-stmt', 'inbox-batch-stmt']) {
    const value = wall(id).median;
    target(`wall time against bare, +${latencyMs} ms per call, ${id}`, 'at most 1.25x', value, value <= 1.25);
  }
  for (const id of ['inbox-batch-stmt', 'inbox-batch-tx']) {
    const value = ratio(bound, id, BARE).median;
    target(`throughput against bare, database-bound, ${id}`, 'at least 2x', value, value >= 2);
  }
  const perRecord = ratio(bound, 'inbox-stmt', BARE).median;
  target('throughput against bare, database-bound, inbox-stmt', 'at least 0.8x', perRecord, perRecord >= 0.8);
  for (const id of ['inbox-tx', 'inbox-stmt']) {
    const value = fifoGain(id);
    target(`FIFO, 10 groups against 1 group, ${id}`, 'at least 5x', value, value >= 5);
  }
  const rows = [BARE, ...MODES, 'naive', 'powertools-style', POWERTOOLS_REAL].map((id) => {
    const variant = all.find((candidate) => candidate.id === id)!;
    const against = (baseline: string) => (id === baseline ? '1x' : times(ratio(standard, id, baseline).median));
    return [
      id,
      variant.mode,
      variant.atomic,
      formatCount(count(id).fresh),
      formatCount(count(id).duplicate),
      id === BARE ? '1x' : times(wall(id).median),
      against('naive'),
      against('powertools-style'),
      against(POWERTOOLS_REAL),
      id === BARE ? '1x' : times(ratio(bound, id, BARE).median),
      times(fifoGain(id)),
    ];
  });
  return {
    title: `Summary: Data API calls per message, and every mode against bare, naive, powertools-style and ${POWERTOOLS_REAL} at a flat +${latencyMs} ms per call (section 0 has the cited latency model)`,
    headers: [
      'variant',
      'mode',
      'atomic',
      'calls / new message',
      'calls / duplicate',
      `wall time vs bare (+${latencyMs} ms)`,
      `throughput vs naive (+${latencyMs} ms)`,
      `throughput vs powertools-style (+${latencyMs} ms)`,
      `throughput vs ${POWERTOOLS_REAL} (+${latencyMs} ms)`,
      `throughput vs bare, database-bound (${dbLimit} calls at once)`,
      'FIFO: 10 groups / 1 group',
    ],
    rows,
    notes: [
      `Batches of ${batchSize} from a standard queue, ${CONCURRENCY} in flight; calls counted at the server (section 1); ratios are medians of ` +
        'per-round ratios between variants that ran in the same round (section 2). Wall time below 1.25x and throughput above 1 are good.',
      'bare: the effect alone, no inbox and no dedup (it applies every redelivery again): the floor.',
      `${POWERTOOLS_REAL}: its calls / new message are the Data API's (the effect); it also makes 2 DynamoDB calls per new message and 1 per ` +
        'duplicate (section 1), delayed as much as a Data API call in these flat-latency shapes, and not limited in the database-bound one.',
    ],
  };
}

function purgeTable(runs: readonly PurgeRun[], problems: string[], targets: Target[]): Table {
  const [small, large] = runs;
  if (!small || !large) throw new Error('the purge section needs two table sizes');
  const rate = (part: { deleted: number; seconds: number }) => part.deleted / part.seconds;
  const rows: string[][] = [];
  for (const run of runs) {
    for (const [label, part] of [
      ['purge() now', run.current],
      ['previous statement', run.previous],
    ] as const) {
      const reference = label === 'purge() now' ? small.current : small.previous;
      rows.push([
        run.rows.toLocaleString('en-US'),
        label,
        part.plan,
        part.deleted.toLocaleString('en-US'),
        String(part.batches),
        `${Math.round(rate(part)).toLocaleString('en-US')}/s`,
        times(rate(reference) / rate(part)),
      ]);
    }
    if (/Seq Scan/.test(run.current.plan) || !/Index Scan/.test(run.current.plan)) {
      problems.push(`purge at ${run.rows} rows: the batch statement's plan is "${run.current.plan}", not an index scan`);
    }
  }
  const claimCell = (run: PurgeRun) =>
    `${percentile(run.claims.without, 50).toFixed(1)} / ${percentile(run.claims.without, 99).toFixed(1)} ms without, ` +
    `${percentile(run.claims.during, 50).toFixed(1)} / ${percentile(run.claims.during, 99).toFixed(1)} ms during ` +
    `(${run.claims.without.length} and ${run.claims.during.length} claims, ${run.claims.windows} windows each)`;
  const largeRate = rate(large.current);
  const perRowGrowth = rate(small.current) / largeRate;
  const p99Ratio = percentile(large.claims.during, 99) / percentile(large.claims.without, 99);
  const rowsLabel = large.rows.toLocaleString('en-US');
  targets.push(
    {
      what: `purge rows/s at ${rowsLabel} rows`,
      target: 'at least 50,000/s',
      measured: `${Math.round(largeRate).toLocaleString('en-US')}/s`,
      met: largeRate >= 50_000,
    },
    {
      what: `purge per-row cost at ${rowsLabel} rows against ${small.rows.toLocaleString('en-US')}`,
      target: 'independent of table size (at most 1.5x)',
      measured: times(perRowGrowth),
      met: perRowGrowth <= 1.5,
    },
    { what: `claim p99 during the purge against without, ${rowsLabel} rows`, target: 'at most 2x', measured: times(p99Ratio), met: p99Ratio <= 2 },
  );
  return {
    title: '4. Purge: rows per second at two table sizes, the statement purge() runs now against the previous one, and claims meanwhile',
    headers: ['table rows', 'statement', 'plan', 'rows deleted', 'batches', 'rows/s', 'per-row cost vs the small table'],
    rows,
    notes: [
      `Claim latency p50 / p99, ${rowsLabel} rows: ${claimCell(large)}; p99 during / without: ${times(p99Ratio)}.`,
      'Each table size is a fresh database whose inbox table holds that many claims, processed_at spread evenly over ten days in ' +
        'insertion order, keys in random order, vacuumed and analysed; the oldest 20% are older than the retention. ' +
        `Filled in ${small.fillSeconds.toFixed(0)} s and ${large.fillSeconds.toFixed(0)} s (untimed).`,
      'purge() now: index-driven batches of 5000 (the ctid of the oldest rows from the processed_at index, SKIP LOCKED, each batch ' +
        'starting where the last one ended), over every old row, in slices by retention. Each slice is a window with a purge, followed ' +
        'by a window of the same length without one; two claims (single-statement inbox() handlers on the same table) run side by side ' +
        'throughout, and their latency is counted in the window they started and ended in. rows/s is over the windows with a purge.',
      'previous statement: purge() before issue 9 (DELETE ... USING the same subselect, joined on the key), 4 batches of 5000 in one ' +
        'transaction that is then rolled back, so the rows stay for purge(). PostgreSQL plans its join back to the table as a hash join ' +
        'over a sequential scan of the whole table for every batch, or, on a table too large for that, as a nested loop of one key ' +
        'lookup per row (random index and heap reads): see the plan column.',
      'No latency is added in this section: the cost at the database is what is measured. The plan column lists the join and scan ' +
        'nodes of EXPLAIN for one batch.',
    ],
  };
}

function targetsTable(targets: readonly Target[]): Table {
  return {
    title: 'Issue 9 targets, against this run',
    headers: ['what', 'target', 'measured', 'met'],
    rows: targets.map((target) => [target.what, target.target, target.measured, target.met ? 'yes' : 'NO']),
    notes: ['Ratios on a shared machine move from run to run (see 2b); a target missed here is reported, not failed on.'],
  };
}

function scenarioTable(scenarios: readonly ScenarioResult[]): Table {
  const first = scenarios[0]!;
  return {
    title: `5. Fault scenario (the demo's engine): ${first.messages} orders, FIFO queue, 3 consumers, seed ${first.seed}, every fault`,
    headers: ['', ...scenarios.map((result) => result.pattern)],
    rows: SCENARIO_ROWS.map(([name, value]) => [name, ...scenarios.map(value)]),
    notes: [
      ...scenarios.map(
        (result) =>
          `faults injected (${result.pattern}): ${
            Object.entries(result.faultsInjected)
              .map(([fault, count]) => `${fault} ${count}`)
              .join(', ') || 'none'
          }.`,
      ),
      'Calls per message include every retry and redelivery the faults caused, so they exceed the fault-free counts of section 1.',
      'Same seed, same fault decisions; the two runs still differ in timing, so the faults that hit (and the deliveries) differ a little.',
      "It runs in the bench's own process (its fault schedule drives the local stack from there), after the server process has stopped.",
    ],
  };
}

function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function wholeNumber(text: string | undefined, flag: string, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new Error(`${flag} must be a whole number of at least ${min}, got "${text}"`);
  return value;
}

// Exits explicitly, with the run's code: nothing left running (a pool, a timer) may keep the process up or
// decide its exit code. The server process leaves when its IPC channel closes.
main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`[bench] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
