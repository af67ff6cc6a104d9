import type { Operation } from '../local/data-api/stats.js';
import type { DynamoDbOperation } from './dynamodb.js';

/** One operation's latency in the model: the figure, and where it comes from (bench/README.md cites each). */
export interface ModelledLatency {
  readonly ms: number;
  /** `published`: a measured figure from a named source; `assumed`: none is published, the README says why this one. */
  readonly basis: 'published' | 'assumed';
  /** Short source, for the report's notes. */
  readonly source: string;
}

/**
 * The bench's latency model: what one call costs from a warm Lambda in the database's region, per
 * operation, as AWS and published measurements give it (bench/README.md, "The latency model", has the
 * citations and the reasoning for each assumed figure). The model shape injects these at the local
 * servers, by operation, before each call runs.
 */
export const LATENCY_MODEL: {
  readonly dataApi: Readonly<Record<Operation, ModelledLatency>>;
  readonly dynamodb: Readonly<Record<DynamoDbOperation, ModelledLatency>>;
  /** Not injected at the Data API: RDS Proxy's figure is section 0b's (bench/transports.ts), at the wire proxy; DSQL's comes with its issue. */
  readonly elsewhere: Readonly<Record<string, ModelledLatency>>;
} = {
  dataApi: {
    ExecuteStatement: {
      ms: 100,
      basis: 'published',
      source: 'Kazulkin, Data API for Aurora Serverless v2 part 5: warm p50 104.68 ms for a Lambda doing one ExecuteStatement (Java 21, 1024 MB)',
    },
    BatchExecuteStatement: { ms: 100, basis: 'assumed', source: 'as ExecuteStatement: one HTTPS call the service runs against the database' },
    BeginTransaction: { ms: 100, basis: 'assumed', source: 'not published separately; as ExecuteStatement (one HTTPS call, one round trip to the database)' },
    CommitTransaction: { ms: 100, basis: 'assumed', source: 'not published separately; as ExecuteStatement' },
    RollbackTransaction: { ms: 100, basis: 'assumed', source: 'not published separately; as ExecuteStatement' },
  },
  dynamodb: {
    PutItem: {
      ms: 6,
      basis: 'published',
      source: 'AWS: single-digit ms average for GetItem and PutItem; Kazulkin: warm p50 5.77 ms for a Lambda doing one GetItem',
    },
    UpdateItem: { ms: 6, basis: 'published', source: 'AWS: single-digit ms for atomic item operations' },
    GetItem: { ms: 6, basis: 'published', source: 'Kazulkin: warm p50 5.77 ms for a Lambda doing one GetItem (Java 21, 1024 MB)' },
    DeleteItem: { ms: 6, basis: 'published', source: 'AWS: single-digit ms for atomic item operations' },
  },
  elsewhere: {
    'query over RDS Proxy (warm connection)': {
      ms: 3,
      basis: 'assumed',
      source: 'no per-query figure found; one in-region PostgreSQL round trip plus the proxy hop',
    },
    'Aurora DSQL statement (warm connection)': {
      ms: 5,
      basis: 'assumed',
      source: 'no per-statement figure found; AWS describes single-digit ms reads and writes in a region',
    },
    'Aurora DSQL commit': { ms: 10, basis: 'assumed', source: 'no figure found; a commit synchronises the journal across AZs (one extra round trip)' },
    'cold Lambda (init, SDK client, first call)': {
      ms: 3150,
      basis: 'published',
      source: 'Kazulkin part 5: cold p50 3154 ms for the whole invocation, Data API and DynamoDB alike (Java, no SnapStart)',
    },
    'Aurora Serverless v2 resume from auto-pause': {
      ms: 15000,
      basis: 'published',
      source: 'AWS auto-pause docs: about 15 s (DatabaseResumingException meanwhile)',
    },
  },
};

/** The model's Data API latencies, by operation, as the local Data API's latency faults take them. */
export function dataApiLatencies(): Record<Operation, number> {
  return Object.fromEntries(Object.entries(LATENCY_MODEL.dataApi).map(([operation, latency]) => [operation, latency.ms])) as Record<Operation, number>;
}

/** The model's DynamoDB latencies, by operation. */
export function dynamoDbLatencies(): Record<DynamoDbOperation, number> {
  return Object.fromEntries(Object.entries(LATENCY_MODEL.dynamodb).map(([operation, latency]) => [operation, latency.ms])) as Record<DynamoDbOperation, number>;
}

/** Milliseconds the calls take at the model's latencies, one after another. */
export function modelledMs(calls: {
  readonly dataApi: Partial<Record<Operation, number>>;
  readonly dynamodb: Partial<Record<DynamoDbOperation, number>>;
}): number {
  let total = 0;
  for (const [operation, count] of Object.entries(calls.dataApi)) total += (count ?? 0) * LATENCY_MODEL.dataApi[operation as Operation].ms;
  for (const [operation, count] of Object.entries(calls.dynamodb)) total += (count ?? 0) * LATENCY_MODEL.dynamodb[operation as DynamoDbOperation].ms;
  return total;
}
