import type { InboxMetrics, MetricUnitName } from './telemetry.js';

/** CloudWatch takes at most 100 values of one metric in one EMF record (Powertools flushes there too). */
const MAX_VALUES = 100;

const TRUTHY = new Set(['1', 'y', 'yes', 't', 'true', 'on']);

/**
 * The metrics writer of every function the package runs: the default of `inbox()`, and the scheduled purge's and
 * outbox sweeper's. Writes the CloudWatch embedded-metric-format line a Powertools
 * `Metrics({ namespace, serviceName })` writes for the same calls (one JSON line per publish, dimensions
 * `service`, and `source` when one is given, values of a metric as an array), and reads the same switches:
 * `POWERTOOLS_METRICS_DISABLED`, else `POWERTOOLS_DEV`, turn it off. About 1 KB instead of Powertools' 13 KB in a
 * bundle; pass a Powertools `Metrics` to `inbox()` for its other features (default dimensions, high resolution,
 * cold start).
 */
export class EmfMetrics implements InboxMetrics {
  private stored = new Map<string, { unit: MetricUnitName; values: number[] }>();
  private metadata: Record<string, string | undefined> = {};

  constructor(
    private readonly namespace: string,
    private readonly service: string,
    /** The `source` dimension (`sqs`, `kinesis`, ...); undefined for a function that reads no event source. */
    private readonly source: string | undefined,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /**
   * Straight to stdout, as Powertools does in Lambda: the global console would prefix the line with a
   * timestamp and request id, and CloudWatch would no longer read it as EMF. With POWERTOOLS_DEV set
   * (and metrics still on), through the global console, as Powertools does there too.
   */
  private write(line: string): void {
    if (truthy(this.env.POWERTOOLS_DEV)) console.log(line);
    else process.stdout.write(`${line}\n`);
  }

  addMetric(name: string, unit: MetricUnitName, value: number): void {
    let metric = this.stored.get(name);
    if (!metric) this.stored.set(name, (metric = { unit, values: [] }));
    metric.values.push(value);
    if (metric.values.length === MAX_VALUES) this.publishStoredMetrics();
  }

  /**
   * Adds a property (not a dimension) to every record published from now on, as Powertools' `addMetadata` does
   * until its next publish. Kept past the publish: the consumer sets the request id before each invocation's
   * metrics (undefined without one, which the JSON line leaves out), and the values flushed at 100 need it too.
   */
  addMetadata(key: string, value: string | undefined): void {
    this.metadata[key] = value;
  }

  publishStoredMetrics(): void {
    const stored = this.stored;
    this.stored = new Map();
    if (stored.size === 0 || this.disabled()) return;
    const record: Record<string, unknown> = {
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          {
            Namespace: this.namespace,
            Dimensions: [this.source === undefined ? ['service'] : ['service', 'source']],
            Metrics: [...stored].map(([name, { unit }]) => ({ Name: name, Unit: unit })),
          },
        ],
      },
      // Before the dimensions, as Powertools spreads it: a dimension of the same name wins.
      ...this.metadata,
      service: this.service,
      ...(this.source === undefined ? {} : { source: this.source }),
    };
    for (const [name, { values }] of stored) record[name] = values.length === 1 ? values[0] : values;
    this.write(JSON.stringify(record));
  }

  private disabled(): boolean {
    return truthy(this.env.POWERTOOLS_METRICS_DISABLED ?? this.env.POWERTOOLS_DEV);
  }
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && TRUTHY.has(value.trim().toLowerCase());
}
