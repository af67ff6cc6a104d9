import pg from 'pg';
import type { DatabaseTarget } from '../lambda/inbox/transport/data-api/session.js';
import { postgres } from '../lambda/inbox/transport/postgres/index.js';
import type { Operation } from '../local/data-api/stats.js';
import { startWireProxy } from '../local/wire/proxy.js';
import type { WireProxy } from '../local/wire/proxy.js';
import { CONCURRENCY } from './consumers.js';
import type { Variant } from './consumers.js';
import { LATENCY_MODEL, modelledMs } from './latency-model.js';
import { countCalls, formatCount, interleave } from './measure.js';
import type { CallCount, Invoker, Shape } from './measure.js';
import { sequentialCalls } from './model.js';
import { freshRecords } from './records.js';
import type { Table } from './report.js';
import type { RemoteDataApi } from './servers.js';

/** The latency model's figure for one statement over a warm connection through RDS Proxy (bench/README.md, "The latency model"). */
export const WIRE_LATENCY = LATENCY_MODEL.elsewhere['query over RDS Proxy (warm connection)']!;

/** What {@link wireTransportTable} measures. */
export interface WireOptions {
  /** The bench's PostgreSQL server, and the run's database on it (its tables migrated). */
  readonly postgresUrl: string;
  readonly database: string;
  /** inbox()'s modes: their handlers take a wire target as they take a Data API one. */
  readonly modes: readonly Variant[];
  /** The run's invoker: the wire's deliveries count with the Data API's in the effects check. */
  readonly invoker: Invoker;
  /** Section 1's Data API counts, for the model's figure on the Data API beside the wire's. */
  readonly dataApiCalls: ReadonlyMap<string, CallCount>;
  readonly batchSize: number;
  /** Invocations in a row of `batchSize` new records per timed round. */
  readonly batches: number;
  readonly rounds: number;
  /** False: the call counts only (`--calls-only`). */
  readonly timed: boolean;
  readonly progress: (line: string) => void;
  /** Where a mode whose round trips are not its designed calls is reported: the wire must cost what the Data API does. */
  readonly problems: string[];
}

/**
 * The inbox's modes over the PostgreSQL wire protocol: each mode's own handler on `postgres(pool)` (a
 * node-postgres pool per mode, as per Lambda function) through the testkit's wire proxy, which counts
 * every statement as a round trip, by the Data API operation it stands for (BEGIN as BeginTransaction).
 * Per message: round trips for new messages and for redeliveries, the modelled wall time at the model's
 * RDS Proxy figure beside the Data API's, and (timed) the wall time measured with that figure injected at
 * the proxy before every statement.
 */
export async function wireTransportTable(options: WireOptions): Promise<Table> {
  const url = new URL(options.postgresUrl);
  url.pathname = `/${options.database}`;
  const proxy = await startWireProxy(url.toString());
  const pools: pg.Pool[] = [];
  try {
    const server = remote(proxy);
    for (const mode of options.modes) {
      const pool = new pg.Pool({ connectionString: proxy.url, max: CONCURRENCY + 2 });
      // An idle connection the proxy closed when the run ended: the pool drops it.
      pool.on('error', () => {});
      pools.push(pool);
      // The mode's handler for the wire, made now: the invoker asks the variant for the handler of `server.name`.
      // inbox() takes the wire target where the bench's factories type a Data API one.
      mode.handler(server.name, () => postgres(pool) as unknown as DatabaseTarget);
    }
    options.progress('2b the wire transport: round trips per message');
    const calls = new Map<string, CallCount>();
    for (const mode of options.modes) {
      const count = await countCalls(options.invoker, server, mode, options.batchSize, 2);
      calls.set(mode.id, count);
      const { fresh, duplicate } = mode.expectedCalls;
      if (count.fresh !== fresh || count.duplicate !== duplicate) {
        options.problems.push(
          `${mode.id} on the wire: ${formatCount(count.fresh)} round trips per new message and ${formatCount(count.duplicate)} per duplicate, designed ${fresh} and ${duplicate}`,
        );
      }
    }
    let measured: Map<string, number> | undefined;
    if (options.timed) {
      options.progress(`2b the wire transport: ${options.rounds} rounds at ${WIRE_LATENCY.ms} ms per statement`);
      const result = await interleave(wireShape(options, server, proxy), options.modes, {
        rounds: options.rounds,
        invoker: options.invoker,
        serverCpuMicros: async () => 0,
      });
      measured = new Map(result.variants.map((variant) => [variant.id, 1000 / variant.median]));
    }
    return table(options, calls, measured);
  } finally {
    await Promise.all(pools.map((pool) => pool.end().catch(() => {})));
    await proxy.close();
  }
}

/** The wire proxy as the bench's measuring code sees a server: its name, latency and counts. */
function remote(proxy: WireProxy): RemoteDataApi {
  return {
    name: 'wire',
    endpoint: proxy.url,
    resourceArn: '',
    secretArn: '',
    latency: async (ms) => {
      proxy.faults.clear();
      if (typeof ms === 'number') {
        if (ms > 0) proxy.faults.latency({ ms });
        return;
      }
      for (const [operation, delay] of Object.entries(ms)) if (delay) proxy.faults.latency({ ms: delay, operation: operation as Operation });
    },
    stats: async () => ({ ...proxy.stats.calls }),
    resetStats: async () => proxy.stats.reset(),
  };
}

/** One Lambda, `batches` invocations in a row of new records, every statement delayed at the proxy by the RDS Proxy figure. */
function wireShape(options: WireOptions, server: RemoteDataApi, proxy: WireProxy): Shape {
  const name = 'wire transport at the latency model';
  return {
    key: 'wire',
    name,
    description: `one Lambda, ${options.batches} invocations in a row of ${options.batchSize} new records, every statement delayed ${WIRE_LATENCY.ms} ms at the wire proxy`,
    messages: options.batchSize * options.batches,
    server,
    before: () => server.latency(WIRE_LATENCY.ms),
    after: async () => proxy.faults.clear(),
    prepare: async (variant, invoker) => {
      const events = Array.from({ length: options.batches }, () => freshRecords(options.batchSize));
      return async () => {
        for (const records of events) await invoker.invoke(variant, records, server, name);
      };
    },
  };
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;

/** Round trips a record waits for, one after another (the whole batch's for the batch modes). */
function roundTrips(mode: Variant, count: CallCount, batchSize: number): number {
  return Object.values(sequentialCalls(mode, count, batchSize).dataApi).reduce((sum, n) => sum + (n ?? 0), 0);
}

function table(options: WireOptions, calls: ReadonlyMap<string, CallCount>, measured: ReadonlyMap<string, number> | undefined): Table {
  const { batchSize } = options;
  const rows = options.modes.map((mode) => {
    const wire = calls.get(mode.id)!;
    const sequential = roundTrips(mode, wire, batchSize);
    const onWire = (sequential * WIRE_LATENCY.ms) / batchSize;
    const dataApi = options.dataApiCalls.get(mode.id);
    const onDataApi = dataApi ? modelledMs(sequentialCalls(mode, dataApi, batchSize)) / batchSize : undefined;
    return [
      mode.id,
      `${formatCount(wire.fresh)} (${wire.freshByOperation})`,
      formatCount(wire.duplicate),
      `${formatCount(sequential)}${mode.perBatch ? ' per batch' : ''}`,
      ms(onWire),
      measured ? ms(measured.get(mode.id)!) : 'not timed',
      onDataApi === undefined ? '-' : ms(onDataApi),
      onDataApi === undefined || onWire === 0 ? '-' : `${(onDataApi / onWire).toFixed(0)}x`,
    ];
  });
  return {
    title: `0b. The inbox's modes over the PostgreSQL wire protocol (node-postgres), per message (batches of ${batchSize}, ${CONCURRENCY} in flight)`,
    headers: [
      'mode',
      'round trips / new message (by operation)',
      'round trips / duplicate',
      'sequential round trips (a record waits for)',
      `modelled wall time per message (${WIRE_LATENCY.ms} ms a statement)`,
      'measured wall time per message',
      'modelled on the Data API (section 0)',
      'Data API / wire',
    ],
    rows,
    notes: [
      "Each mode's own inbox() handler, given database: postgres(pool) instead of the Data API settings, through the testkit's wire proxy " +
        '(local/wire/proxy.ts), which counts every statement it forwards as one round trip, named as the Data API operation it stands for ' +
        '(Begin: BEGIN with its SET LOCAL statement_timeout, one round trip; Commit: COMMIT; Execute: any other statement).',
      `The model: one statement over a warm connection through RDS Proxy ${WIRE_LATENCY.ms} ms (${WIRE_LATENCY.basis}: ${WIRE_LATENCY.source}; bench/README.md, ` +
        `"The latency model"). Modelled wall time: the sequential round trips at that figure for a batch of ${batchSize} (its records side by side), ` +
        "divided by its messages; on the Data API the same from section 1's counts at the Data API figures.",
      measured
        ? `Measured: one Lambda consuming ${options.batchSize * options.batches} new messages in batches of ${batchSize} per round, ${WIRE_LATENCY.ms} ms injected at ` +
          `the proxy before every statement; median of ${options.rounds} rounds (modes interleaved). It adds this machine's CPU, node-postgres and the proxy to the model.`
        : 'Not timed (--calls-only): the counts and the model only.',
    ],
  };
}
