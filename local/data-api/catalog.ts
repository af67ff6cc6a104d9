import type pg from 'pg';

/** What the result mapping needs to know about a PostgreSQL type. */
export interface PgType {
  readonly oid: number;
  /** pg_type.typname, e.g. "int4", "_int4" for int4[], or an enum's name. */
  readonly name: string;
  /** pg_type.typcategory: "A" array, "S" string, "N" numeric, ... */
  readonly category: string;
  /** The element type of an array type, else 0. */
  readonly element: number;
}

/**
 * The pg_type rows of one database, loaded once and reloaded when a result carries an OID it has not
 * seen (an enum or a domain created after the load). Result columns of a domain type arrive with the
 * base type's OID, so only the base types matter.
 */
export class TypeCatalog {
  private types = new Map<number, PgType>();
  private loading: Promise<void> | undefined;

  constructor(
    /**
     * Runs the catalog's query. Not on the database's pool: a call inside a transaction can need the
     * catalog while the transaction holds the pool's last connection, and would wait for itself.
     */
    private readonly query: (sql: string) => Promise<pg.QueryResult<{ oid: string; typname: string; typcategory: string; typelem: string }>>,
  ) {}

  /** The types of the given OIDs; an OID PostgreSQL does not know maps to a plain text type. */
  async resolve(oids: readonly number[]): Promise<PgType[]> {
    if (oids.some((oid) => !this.types.has(oid))) await this.reload();
    return oids.map((oid) => this.get(oid));
  }

  /** A type already loaded (elements of a resolved array type are loaded with it). */
  get(oid: number): PgType {
    return this.types.get(oid) ?? { oid, name: 'unknown', category: 'X', element: 0 };
  }

  private async reload(): Promise<void> {
    this.loading ??= this.query('SELECT oid, typname, typcategory, typelem FROM pg_catalog.pg_type')
      .then(({ rows }) => {
        const types = new Map<number, PgType>();
        for (const row of rows) {
          types.set(Number(row.oid), { oid: Number(row.oid), name: row.typname, category: row.typcategory, element: Number(row.typelem) });
        }
        this.types = types;
      })
      .finally(() => {
        this.loading = undefined;
      });
    await this.loading;
  }
}
