// What a statement returns, the same on every transport.

/** A row keyed by column name, each value typed by its column. */
export type Row = Record<string, unknown>;

/** What one statement returned. */
export interface StatementResult {
  /** The rows of a SELECT or of `RETURNING`. */
  readonly rows: Row[];
  /** Rows inserted, updated or deleted. */
  readonly updated: number;
}
