import type { SqlParams } from '../transport/values.js';
import { fittingRuns } from '../transport/limits.js';
import type { StatementResult } from '../transport/results.js';

// Values too large to come back with their rows: the Data API answers at most 1 MiB per call, so a read
// that selects a parked payload or an outbox message near SQS's 1 MiB, or a few hundred KB of them
// together, would fail every time it runs. They are read apart from their rows: several small ones to a
// call, a large one in pieces.

/** Runs one statement: a session's autocommit call, or one inside a transaction. */
export type ReadStatement = (sql: string, params: SqlParams) => Promise<StatementResult>;

/**
 * The most bytes of values one read brings back: the Data API answers at most 1 MiB, and carries bytes as
 * base64 (a third more), so a 1 MiB value takes three reads.
 */
export const PIECE_BYTES = 512 * 1024;

/** A value of a table's rows: the table (with an `id` column), and the bytea expression of its unqualified columns. */
export interface LargeValue {
  readonly table: string;
  readonly bytes: string;
}

/**
 * The value of each row `sizes` names (by id, with the value's length in bytes, which the read of the rows
 * gives), read apart from the rows: several small ones to a call, a large one in pieces of
 * {@link PIECE_BYTES}. Inside a transaction, `read` runs in it, and the values are those of the rows it locked.
 */
export async function readLargeValues(read: ReadStatement, value: LargeValue, sizes: ReadonlyMap<number, number>): Promise<Map<number, Uint8Array>> {
  const pieces = new Map<number, Uint8Array[]>([...sizes.keys()].map((id) => [id, []]));
  const small = [...sizes].filter(([, bytes]) => bytes <= PIECE_BYTES);
  for (const run of fittingRuns(small, (run) => run.reduce((total, [, bytes]) => total + bytes, 0) <= PIECE_BYTES)) {
    const { rows } = await read(`SELECT id, ${value.bytes} AS piece FROM ${value.table} WHERE id = ANY(:ids::bigint[])`, {
      ids: `{${run.map(([id]) => id).join(',')}}`,
    });
    for (const row of rows) pieces.get(Number(row.id))!.push(row.piece as Uint8Array);
  }
  for (const [id, bytes] of [...sizes].filter(([, bytes]) => bytes > PIECE_BYTES)) {
    for (let from = 0; from < bytes; from += PIECE_BYTES) {
      const { rows } = await read(`SELECT substring(${value.bytes} FROM :from::int FOR :count::int) AS piece FROM ${value.table} WHERE id = :id`, {
        id,
        from: from + 1,
        count: PIECE_BYTES,
      });
      pieces.get(id)!.push(rows[0]!.piece as Uint8Array);
    }
  }
  // A plain Uint8Array, never a Buffer, which would write itself into JSON as an object.
  return new Map([...pieces].map(([id, list]) => [id, new Uint8Array(Buffer.concat(list))]));
}
