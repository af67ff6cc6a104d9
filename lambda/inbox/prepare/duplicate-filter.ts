import { knownClaimsSql, sameHash } from '../sql/claim.js';
import type { InboxSession } from '../transport/session.js';
import type { DuplicateFilter, ResolvedMode } from '../handler/options.js';
import type { PreparedRecord } from './prepare.js';
import { CLAIM_ROW_BYTES, fittingRuns } from '../transport/limits.js';
import type { InboxTables } from '../sql/schema.js';

/**
 * Whether to look the batch's keys up before any transaction. A lookup costs one call; it pays when the
 * batch likely holds duplicates, which is when it holds a redelivery: a record delivered before
 * (SQS counts deliveries), or, for a source that counts nothing (the streams: `recent` given), a key this
 * handler instance met recently, since Lambda mostly retries a stream batch in the same warm instance. A batch statement
 * settles duplicates in its one call anyway.
 */
export function filterPays(
  setting: DuplicateFilter,
  mode: ResolvedMode<unknown>['kind'],
  records: readonly PreparedRecord<unknown>[],
  recent: RecentKeys | undefined,
): boolean {
  if (setting !== 'auto') return setting === 'always';
  if (mode === 'batch-statement') return false;
  return records.some((prepared) => prepared.record.attempt > 1 || (recent !== undefined && prepared.key !== null && recent.has(prepared.key)));
}

/** The keys a handler instance met in its last invocations, bounded: a hint of redelivery, never a decision. */
export class RecentKeys {
  private keys = new Set<string>();
  private older = new Set<string>();

  constructor(private readonly limit = 10_000) {}

  has(key: string): boolean {
    return this.keys.has(key) || this.older.has(key);
  }

  /** Remembers the batch's keys; past the limit the older half is forgotten. */
  remember(records: readonly PreparedRecord<unknown>[]): void {
    for (const { key } of records) {
      if (key === null) continue;
      if (this.keys.size >= this.limit / 2) {
        this.older = this.keys;
        this.keys = new Set();
      }
      this.keys.add(key);
    }
  }
}

/**
 * One autocommit lookup of which keys are claimed already: each such record is marked a known duplicate
 * (same body hash, or a claim stored without one) or a known collision. A record claimed after the lookup
 * is still caught by its own claim, so correctness never depends on this.
 */
export async function markKnownClaims(
  session: InboxSession,
  tables: InboxTables,
  consumer: string,
  records: readonly PreparedRecord<unknown>[],
): Promise<void> {
  // prepare() keeps an error on every record whose key could not be chosen: the others all have a key.
  // Without candidates there are no keys, so no run and no call.
  const candidates = records.filter((prepared) => prepared.error === undefined);
  const keys = [...new Set(candidates.map((prepared) => prepared.key!))];
  const sql = knownClaimsSql(tables);
  const params = (run: readonly string[]) => ({ inbox_consumer: consumer, inbox_keys: [...run] });
  const stored = new Map<string, Uint8Array | null>();
  // One lookup, or one per run of keys when they, or the rows that return them, would not fit in one of the
  // transport's calls (10,000 keys of 512 bytes over the Data API).
  const fits = (run: readonly string[]) =>
    session.limits.fits(
      sql,
      params(run),
      run.reduce((bytes, key) => bytes + Buffer.byteLength(key, 'utf8') + CLAIM_ROW_BYTES, 0),
    );
  for (const run of fittingRuns(keys, fits)) {
    const { rows } = await session.executeIdempotent(sql, params(run));
    for (const row of rows) stored.set(row.message_key as string, (row.existing_sha256 as Uint8Array | null | undefined) ?? null);
  }
  for (const prepared of candidates) {
    if (!stored.has(prepared.key!)) continue;
    const hash = stored.get(prepared.key!)!;
    prepared.known = hash === null || sameHash(hash, prepared.sha256) ? 'duplicate' : { collidesWith: hash };
  }
}
