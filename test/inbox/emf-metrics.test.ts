import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmfMetrics } from '../../lambda/inbox/telemetry/emf-metrics.js';
import type { InboxMetrics } from '../../lambda/inbox/index.js';

// The default metrics must write what Powertools' Metrics writes for the same calls (the alarms and the
// dashboard read these lines), so each case runs both and compares the lines, the timestamp aside.

const ENV = ['POWERTOOLS_METRICS_DISABLED', 'POWERTOOLS_DEV', 'POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_METRICS_NAMESPACE'] as const;
const saved = Object.fromEntries(ENV.map((key) => [key, process.env[key]]));
// vitest.config.ts turns metrics off for the whole suite; each case here starts with every switch unset.
beforeEach(() => {
  for (const key of ENV) delete process.env[key];
});
afterEach(() => {
  for (const key of ENV) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});

/** Every line written to stdout while `run` runs, parsed, without its timestamp. */
function linesOf(run: () => void): unknown[] {
  const written: string[] = [];
  const original = process.stdout.write.bind(process.stdout);
  const log = console.log;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  // With POWERTOOLS_DEV set, Powertools prints through the global console instead of its own.
  console.log = (...parts: unknown[]) => void written.push(`${parts.join(' ')}\n`);
  try {
    run();
  } finally {
    process.stdout.write = original;
    console.log = log;
  }
  return written
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => {
      const record = JSON.parse(line) as { _aws: { Timestamp?: number } };
      expect(record._aws.Timestamp).toBeGreaterThan(Date.now() - 60_000);
      delete record._aws.Timestamp;
      return record;
    });
}

const invocations: [string, (metrics: InboxMetrics) => void][] = [
  [
    'one invocation: counts and latencies',
    (m) => {
      m.addMetric('Processed', 'Count', 3);
      m.addMetric('Failures', 'Count', 0);
      m.addMetric('RecordLatency', 'Milliseconds', 12);
      m.addMetric('RecordLatency', 'Milliseconds', 15);
      m.addMetric('BatchLatency', 'Milliseconds', 30);
      m.publishStoredMetrics();
    },
  ],
  [
    'two invocations, the second empty',
    (m) => {
      m.addMetric('Processed', 'Count', 1);
      m.publishStoredMetrics();
      m.publishStoredMetrics();
    },
  ],
  [
    'a batch of 250 records: a line each 100 latencies, as CloudWatch allows',
    (m) => {
      m.addMetric('Processed', 'Count', 250);
      for (let i = 0; i < 250; i++) m.addMetric('RecordLatency', 'Milliseconds', i);
      m.publishStoredMetrics();
    },
  ],
];

/** Powertools' Metrics as the consumer would configure it: the source as a default dimension. */
function powertools(): Metrics {
  const metrics = new Metrics({ namespace: 'SqsInbox', serviceName: 'order-worker' });
  metrics.setDefaultDimensions({ source: 'sqs' });
  return metrics;
}

describe('EmfMetrics writes what Powertools Metrics writes', () => {
  it.each(invocations)('%s', (_, invoke) => {
    const theirs = linesOf(() => invoke(powertools()));
    const ours = linesOf(() => invoke(new EmfMetrics('SqsInbox', 'order-worker', 'sqs')));
    expect(theirs.length).toBeGreaterThan(0);
    expect(ours).toEqual(theirs);
  });

  it.each([
    ['POWERTOOLS_METRICS_DISABLED', 'true', 0],
    ['POWERTOOLS_METRICS_DISABLED', 'false', 1],
    ['POWERTOOLS_DEV', 'true', 0],
    ['POWERTOOLS_DEV', '1', 0],
  ] as const)('%s=%s: %i lines, as Powertools', (key, value, expected) => {
    process.env[key] = value;
    const invoke = invocations[0]![1];
    const theirs = linesOf(() => invoke(powertools()));
    const ours = linesOf(() => invoke(new EmfMetrics('SqsInbox', 'order-worker', 'sqs')));
    expect(theirs).toHaveLength(expected);
    expect(ours).toEqual(theirs);
  });

  it('POWERTOOLS_METRICS_DISABLED=false wins over POWERTOOLS_DEV=true, as in Powertools', () => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    process.env.POWERTOOLS_DEV = 'true';
    const invoke = invocations[0]![1];
    const theirs = linesOf(() => invoke(powertools()));
    expect(theirs).toHaveLength(1);
    expect(linesOf(() => invoke(new EmfMetrics('SqsInbox', 'order-worker', 'sqs')))).toEqual(theirs);
  });
});

// The scheduled purge and the outbox sweeper write through the same writer, with no `source` dimension: their
// lines must be what Powertools' Metrics({ namespace, serviceName }) writes, which the alarms were built on.
const scheduled: [string, (metrics: InboxMetrics) => void][] = [
  [
    'the purge: rows, more remaining, the oldest row in seconds',
    (m) => {
      m.addMetric('PurgedRows', 'Count', 5000);
      m.addMetric('PurgeMoreRemaining', 'Count', 1);
      m.addMetric('OldestRowAgeSeconds', 'Seconds', 2_592_061);
      m.publishStoredMetrics();
    },
  ],
  [
    'the sweeper: sent, deferred, failures, the oldest unsent in seconds',
    (m) => {
      m.addMetric('OutboxSwept', 'Count', 12);
      m.addMetric('OutboxSweepDeferred', 'Count', 0);
      m.addMetric('OutboxSweepFailures', 'Count', 0);
      m.addMetric('OutboxOldestUnsentAgeSeconds', 'Seconds', 61);
      m.publishStoredMetrics();
    },
  ],
];

describe('EmfMetrics without a source writes what Powertools Metrics writes for a scheduled function', () => {
  it.each(scheduled)('%s', (_, invoke) => {
    const theirs = linesOf(() => invoke(new Metrics({ namespace: 'SqsInbox', serviceName: 'inbox-cleanup-abc123' }) as unknown as InboxMetrics));
    const ours = linesOf(() => invoke(new EmfMetrics('SqsInbox', 'inbox-cleanup-abc123', undefined)));
    expect(theirs).toHaveLength(1);
    expect(ours).toEqual(theirs);
  });
});
