import { badRequest, validation } from './errors.js';
import type { JsonValue } from './json.js';
import type { ScannedSql } from '../../lambda/inbox/transport/sql-scanner.js';

export { scanSql } from '../../lambda/inbox/transport/sql-scanner.js';
export type { ScannedSql, SqlPiece } from '../../lambda/inbox/transport/sql-scanner.js';

/**
 * Named parameters, the way the Data API binds them (shared/reference/data-api.md §2.1):
 * `:name` in the SQL (a name may start with a digit: Drizzle sends `:1`, kysely-data-api `:0`), never
 * inside a string literal, E'' string, quoted identifier, comment or dollar-quoted body, and never the
 * second colon of a `::type` cast.
 *
 * Each value is bound with an explicit parameter type in the protocol's Parse message, as the JDBC driver
 * behind the real service does: an untyped stringValue is varchar (so writing it into a uuid column fails
 * exactly as on AWS), a longValue int8, a blobValue bytea, and a typeHint names the type. Types travel in
 * the protocol, not as casts in the SQL text, so column labels (`?column?`) and error positions match.
 */

/** The SqlParameter typeHint values of the service model, with the PostgreSQL type each binds. */
const TYPE_HINT_OIDS = { DATE: 1082, TIME: 1083, TIMESTAMP: 1114, DECIMAL: 1700, JSON: 114, UUID: 2950 } as const;
export type TypeHint = keyof typeof TYPE_HINT_OIDS;

const OID = { unknown: 0, bool: 16, bytea: 17, int8: 20, float8: 701, varchar: 1043 } as const;

/** SQL ready for the pg driver: `$n` placeholders, their values and their protocol type OIDs. */
export interface BoundSql {
  readonly text: string;
  readonly values: unknown[];
  readonly types: number[];
  /** Maps a 1-based character position in `text` (PostgreSQL's error Position) back to the caller's SQL. */
  originalPosition(position: number): number;
}

/**
 * Checks a statement's shape as Aurora Serverless v2 does: one statement only.
 * @throws ValidationException "Multistatements aren't supported."
 */
export function assertSingleStatement(scanned: ScannedSql): void {
  if (scanned.multipleStatements) throw validation("Multistatements aren't supported.");
}

/**
 * Replaces each `:name` that has a parameter by `$n` and converts the parameter values.
 * A `:name` with no parameter of that name is left in the SQL for PostgreSQL to judge: `arr[1:2]` is a
 * slice, not a parameter. Parameters the SQL does not reference are ignored.
 */
export function bindParameters(scanned: ScannedSql, parameters: readonly JsonValue[] | undefined, member = 'parameters'): BoundSql {
  const byName = new Map<string, { value: unknown; type: number }>();
  (parameters ?? []).forEach((parameter, index) => {
    const where = `${member}[${index}]`;
    if (!isObject(parameter)) throw badRequest(`${where} must be an SqlParameter object: {"name": ..., "value": {...}}.`);
    const name = parameter.name;
    if (typeof name !== 'string' || name === '') {
      throw badRequest(`${where}.name is required: give the parameter's name without the colon, e.g. "id" for :id.`);
    }
    if (byName.has(name)) throw badRequest(`${where}: the parameter name "${name}" is given twice; give each name once.`);
    byName.set(name, convertValue(parameter, `${where} ("${name}")`));
  });
  const values: unknown[] = [];
  const types: number[] = [];
  const placeholders = new Map<string, string>();
  // [position in bound text, position in original SQL, length in bound text, length in original] per piece
  const spans: Array<[number, number, number, number]> = [];
  let text = '';
  let original = 0;
  for (const piece of scanned.pieces) {
    let out = piece.text;
    if ('name' in piece) {
      const bound = byName.get(piece.name);
      if (bound) {
        let placeholder = placeholders.get(piece.name);
        if (!placeholder) {
          values.push(bound.value);
          types.push(bound.type);
          placeholder = `$${values.length}`;
          placeholders.set(piece.name, placeholder);
        }
        out = placeholder;
      }
    }
    spans.push([text.length, original, out.length, piece.text.length]);
    text += out;
    original += piece.text.length;
  }
  return {
    text,
    values,
    types,
    originalPosition(position: number) {
      const index = position - 1;
      for (const [boundAt, originalAt, boundLength, originalLength] of spans) {
        if (index < boundAt + boundLength) return originalAt + Math.min(index - boundAt, originalLength - 1) + 1;
      }
      return position - text.length + original;
    },
  };
}

/** What JDBC's Timestamp.valueOf accepts. */
const TIMESTAMP_TEXT = /^\d{4}-\d{1,2}-\d{1,2} \d{1,2}:\d{2}:\d{2}(\.\d{1,9})?$/;

function convertValue(parameter: { [key: string]: JsonValue }, where: string): { value: unknown; type: number } {
  const hint = parameter.typeHint;
  if (hint !== undefined && (typeof hint !== 'string' || !Object.hasOwn(TYPE_HINT_OIDS, hint))) {
    throw badRequest(`${where}.typeHint "${String(hint)}" is not one of ${Object.keys(TYPE_HINT_OIDS).join(', ')}.`);
  }
  const field = parameter.value;
  if (!isObject(field)) throw badRequest(`${where}.value is required: a Field such as {"stringValue": "..."} or {"isNull": true}.`);
  const members = Object.keys(field).filter((key) => field[key] !== null && field[key] !== undefined);
  if (members.length === 0) {
    throw badRequest(`Parameter "${String(parameter.name)}" has value with no field set. Use {"isNull": true} for SQL NULL.`);
  }
  if (members.length > 1) throw badRequest(`${where}.value sets ${members.join(' and ')}; a Field is a union and takes exactly one.`);
  const member = members[0] as string;
  const raw = field[member] as JsonValue;
  const hintOid = hint === undefined ? undefined : TYPE_HINT_OIDS[hint as TypeHint];
  if (hintOid !== undefined && member !== 'stringValue' && member !== 'isNull') {
    throw badRequest(`${where}.typeHint ${String(hint)} applies to a stringValue; send the value as a string, e.g. {"stringValue": "2024-01-02"}.`);
  }
  switch (member) {
    case 'isNull':
      if (raw !== true) throw badRequest(`${where}.value.isNull must be true; for a value, set another Field member instead.`);
      return { value: null, type: hintOid ?? OID.unknown };
    case 'stringValue':
      if (typeof raw !== 'string') throw badRequest(`${where}.value.stringValue must be a string.`);
      // The Data API parses a TIMESTAMP hint as JDBC's Timestamp.valueOf does: "YYYY-MM-DD HH:MM:SS[.FFF]",
      // no "T", no zone (AWS's Data API guide; koxudaxi/local-data-api#85). ISO strings are refused.
      if (hint === 'TIMESTAMP' && !TIMESTAMP_TEXT.test(raw)) {
        throw badRequest('Timestamp format must be yyyy-mm-dd hh:mm:ss[.fffffffff]');
      }
      return { value: raw, type: hintOid ?? OID.varchar };
    case 'longValue':
      if (typeof raw === 'bigint') return { value: raw.toString(), type: OID.int8 };
      if (typeof raw !== 'number' || !Number.isInteger(raw)) throw badRequest(`${where}.value.longValue must be an integer.`);
      return { value: String(raw), type: OID.int8 };
    case 'doubleValue':
      if (typeof raw === 'number' || raw === 'NaN' || raw === 'Infinity' || raw === '-Infinity') return { value: String(raw), type: OID.float8 };
      if (typeof raw === 'bigint') return { value: raw.toString(), type: OID.float8 };
      throw badRequest(`${where}.value.doubleValue must be a number.`);
    case 'booleanValue':
      if (typeof raw !== 'boolean') throw badRequest(`${where}.value.booleanValue must be true or false.`);
      return { value: String(raw), type: OID.bool };
    case 'blobValue':
      if (typeof raw !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(raw)) throw badRequest(`${where}.value.blobValue must be base64.`);
      return { value: Buffer.from(raw, 'base64'), type: OID.bytea };
    case 'arrayValue':
      throw validation(
        `Array parameters are not supported (${where}). Send the array as a string and cast it in SQL, e.g. CAST(:ids AS int[]) with {"stringValue": "{1,2,3}"}.`,
      );
    default:
      throw badRequest(
        `${where}.value has the unknown member "${member}"; a Field takes one of isNull, booleanValue, longValue, doubleValue, stringValue, blobValue.`,
      );
  }
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
