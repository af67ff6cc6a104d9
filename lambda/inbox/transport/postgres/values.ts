import { HintedValue } from '../values.js';
import type { SqlParams, SqlValue } from '../values.js';
import type { Row } from '../results.js';
import { scanSql } from '../sql-scanner.js';

/** A statement ready for node-postgres: `$n` placeholders and their values. */
export interface PositionalSql {
  readonly text: string;
  readonly values: unknown[];
}

/**
 * The PostgreSQL type a Data API type hint binds (and a `Date` binds TIMESTAMP, a plain object JSON, as on
 * the Data API), written as a cast on the placeholder so that both transports give a value the same type.
 */
const HINT_CASTS = { DATE: 'date', TIME: 'time', TIMESTAMP: 'timestamp', DECIMAL: 'numeric', JSON: 'json', UUID: 'uuid' } as const;

/**
 * Rewrites `:name` parameters as `$n`, exactly where the Data API reads a parameter (never in a string,
 * quoted identifier, comment, dollar-quoted body or `::cast`); a `:name` without a value is left for
 * PostgreSQL to judge, and a value the SQL does not name is ignored, as on the Data API.
 */
export function toPositional(sql: string, params: SqlParams): PositionalSql {
  const values: unknown[] = [];
  const numbers = new Map<string, string>();
  const text = scanSql(sql)
    .pieces.map((piece) => {
      if (!('name' in piece) || !Object.hasOwn(params, piece.name)) return piece.text;
      let placeholder = numbers.get(piece.name);
      if (placeholder === undefined) {
        const [value, cast] = toPostgres(piece.name, params[piece.name]);
        values.push(value);
        placeholder = `$${values.length}${cast ? `::${cast}` : ''}`;
        numbers.set(piece.name, placeholder);
      }
      return placeholder;
    })
    .join('');
  return { text, values };
}

function toPostgres(name: string, value: SqlValue | undefined): [unknown, string | undefined] {
  if (value === null || value === undefined) return [null, undefined];
  if (value instanceof HintedValue) return [value.text, HINT_CASTS[value.typeHint]];
  if (typeof value === 'bigint') return [value.toString(), 'int8'];
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`parameter "${name}" is ${value}; it cannot be bound. Pass null or a finite number.`);
    // As the Data API binds them: a safe integer as a long (int8), anything else as a double.
    return [value, Number.isSafeInteger(value) ? 'int8' : 'float8'];
  }
  if (typeof value === 'boolean') return [value, 'bool'];
  if (value instanceof Uint8Array) return [Buffer.from(value.buffer, value.byteOffset, value.byteLength), 'bytea'];
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new TypeError(`parameter "${name}" is an invalid Date`);
    return [value.toISOString().replace('T', ' ').replace('Z', ''), 'timestamp'];
  }
  if (typeof value === 'string') return [value, undefined];
  if (typeof value === 'object') return [JSON.stringify(value), 'json'];
  throw new TypeError(`parameter "${name}" has type ${typeof value}, which cannot be bound`);
}

/** Type OIDs the rows are converted from; anything else stays text, as the Data API returns it. */
const OID = { bool: 16, bytea: 17, int8: 20, int2: 21, int4: 23, json: 114, float4: 700, float8: 701, timestamp: 1114, timestamptz: 1184, jsonb: 3802 };

/** A field of a result, as node-postgres describes it. */
export interface FieldDescription {
  readonly name: string;
  readonly dataTypeID: number;
}

/**
 * Rows as the Data API session returns them, from rows read as text: int8 as a number (a bigint beyond
 * 2^53), timestamps as `Date` (a `timestamp` read as UTC), JSON parsed, bytea as bytes, numeric and
 * everything else as text.
 */
export function toRows(fields: readonly FieldDescription[], rows: readonly (readonly (string | null)[])[]): Row[] {
  return rows.map((values) => {
    const row: Row = {};
    fields.forEach((field, index) => {
      const text = values[index];
      row[field.name] = text === null || text === undefined ? null : fromText(text, field.dataTypeID);
    });
    return row;
  });
}

function fromText(text: string, oid: number): unknown {
  switch (oid) {
    case OID.bool:
      return text === 't';
    case OID.int2:
    case OID.int4:
    case OID.int8: {
      const big = BigInt(text);
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    case OID.float4:
    case OID.float8:
      return Number(text);
    case OID.bytea:
      return new Uint8Array(Buffer.from(text.slice(2), 'hex'));
    case OID.json:
    case OID.jsonb:
      return JSON.parse(text);
    case OID.timestamp:
      return new Date(`${text.replace(' ', 'T')}Z`);
    case OID.timestamptz:
      // `2026-12-01 21:00:00.5+00` or `+05:30`: ISO wants the offset's minutes.
      return new Date(text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));
    default:
      return text;
  }
}

/** Reads every value as text, so that {@link toRows} alone decides the types. */
export const TEXT_PARSERS = { getTypeParser: () => (text: string) => text };
