import type { FieldDef } from 'pg';
import type { PgType } from './catalog.js';
import { badRequest, unsupportedResult } from './errors.js';
import { compactJson, stringifyJson } from './json.js';

/**
 * PostgreSQL results as the v2 Data API returns them (shared/reference/data-api.md §2.2 to §2.5).
 * Rows arrive as PostgreSQL's own text (every pg type parser is disabled), so nothing is lost on the way:
 * int8 keeps its digits, timestamps their microseconds, numeric its scale.
 */

export interface ResultOptions {
  readonly decimalReturnType: 'STRING' | 'DOUBLE_OR_LONG';
  readonly longReturnType: 'LONG' | 'STRING';
  readonly formatRecordsAs: 'NONE' | 'JSON';
  readonly includeResultMetadata: boolean;
}

/** A statement's outcome as the pg driver reports it (rowMode "array", text values). */
export interface RawResult {
  readonly command: string;
  readonly rowCount: number | null;
  readonly fields: readonly FieldDef[];
  readonly rows: ReadonlyArray<ReadonlyArray<string | null>>;
}

/** A Field union member; `longValue` as bigint so the JSON writer sends every digit. */
type Field =
  | { isNull: true }
  | { longValue: bigint }
  | { doubleValue: number }
  | { stringValue: string }
  | { booleanValue: boolean }
  | { blobValue: string }
  | { arrayValue: ArrayValue };
type ArrayValue =
  | { longValues: Array<bigint | null> }
  | { doubleValues: Array<number | null> }
  | { stringValues: Array<string | null> }
  | { booleanValues: Array<boolean | null> };

/** A decoded scalar: what it is, and its value. */
type Scalar =
  | { kind: 'long'; value: bigint }
  | { kind: 'double'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'blob'; value: string };

/** The v2 Data API refuses these (§2.2); a `::text` cast is the workaround. */
const UNSUPPORTED = new Set(['money', 'point', 'line', 'lseg', 'box', 'path', 'polygon', 'circle']);

/** java.sql.Types codes, as the PostgreSQL JDBC driver reports them; anything else is OTHER (1111). */
const JDBC_TYPES: Record<string, number> = {
  bool: -7,
  int2: 5,
  int4: 4,
  int8: -5,
  oid: -5,
  float4: 7,
  float8: 8,
  numeric: 2,
  bpchar: 1,
  varchar: 12,
  text: 12,
  name: 12,
  bytea: -2,
  date: 91,
  time: 92,
  timetz: 92,
  timestamp: 93,
  timestamptz: 93,
};
const PRECISION: Record<string, number> = {
  bool: 1,
  int2: 5,
  int4: 10,
  int8: 19,
  oid: 10,
  float4: 8,
  float8: 17,
  date: 13,
  time: 15,
  timetz: 21,
  timestamp: 29,
  timestamptz: 35,
  uuid: 36,
  text: 2147483647,
};
const SIGNED = new Set(['int2', 'int4', 'int8', 'float4', 'float8', 'numeric']);
const CASE_SENSITIVE = new Set(['text', 'varchar', 'bpchar', 'name', 'char', 'json', 'jsonb', 'xml']);

/**
 * Builds the ExecuteStatement response body for one statement.
 * @param types the resolved type of each field, in order
 * @param elementType resolves an array's element OID
 */
export function executeResponse(
  result: RawResult,
  types: readonly PgType[],
  elementType: (oid: number) => PgType,
  options: ResultOptions,
): Record<string, unknown> {
  // SELECT reports the rows it returned as its row count; the Data API reports 0 rows updated (§2.5).
  const numberOfRecordsUpdated = result.command === 'SELECT' ? 0 : (result.rowCount ?? 0);
  if (result.fields.length === 0) return { numberOfRecordsUpdated, generatedFields: [] };
  types.forEach((type) => {
    const base = type.category === 'A' ? elementType(type.element) : type;
    if (UNSUPPORTED.has(base.name)) throw unsupportedResult(`The result contains the unsupported data type ${base.name}.`);
  });
  const decode = (text: string | null, index: number): Scalar | Array<Scalar | null> | null => {
    const type = types[index] as PgType;
    if (text === null) return null;
    if (type.category === 'A') {
      const element = elementType(type.element);
      if (element.name === 'bytea') throw unsupportedResult('The result contains the unsupported data type bytea[].');
      return parseArray(text, type.name).map((item) => (item === null ? null : scalar(item, element, options)));
    }
    return scalar(text, type, options);
  };
  if (options.formatRecordsAs === 'JSON') {
    const labels = result.fields.map((field) => field.name);
    const duplicate = labels.find((label, index) => labels.indexOf(label) !== index);
    if (duplicate !== undefined) {
      throw badRequest(`The result has two columns named "${duplicate}", which formatRecordsAs JSON cannot key a row by. Give each column a distinct alias.`);
    }
    // fromEntries defines own properties: assigning a column named "__proto__" would drop it.
    const rows = result.rows.map((row) =>
      Object.fromEntries(
        row.map((text, index) => {
          const value = decode(text, index);
          return [labels[index] as string, Array.isArray(value) ? value.map((item) => item?.value ?? null) : (value?.value ?? null)];
        }),
      ),
    );
    return { formattedRecords: stringifyJson(rows), numberOfRecordsUpdated };
  }
  const records = result.rows.map((row) =>
    row.map((text, index): Field => {
      const value = decode(text, index);
      if (value === null) return { isNull: true };
      if (Array.isArray(value)) return { arrayValue: arrayValue(value, elementType((types[index] as PgType).element), options) };
      return field(value);
    }),
  );
  const response: Record<string, unknown> = { records, numberOfRecordsUpdated };
  if (options.includeResultMetadata) {
    response.columnMetadata = result.fields.map((definition, index) => columnMetadata(definition, types[index] as PgType, elementType));
  }
  return response;
}

/** One scalar from PostgreSQL's text output, per the type table of §2.2. */
function scalar(text: string, type: PgType, options: ResultOptions): Scalar {
  switch (type.name) {
    case 'int2':
    case 'int4':
    case 'int8':
      return options.longReturnType === 'STRING' ? { kind: 'string', value: text } : { kind: 'long', value: BigInt(text) };
    case 'float4':
    case 'float8':
      return { kind: 'double', value: Number(text) };
    case 'numeric':
      if (options.decimalReturnType === 'STRING') return { kind: 'string', value: text };
      return /^-?\d+$/.test(text) ? { kind: 'long', value: BigInt(text) } : { kind: 'double', value: Number(text) };
    case 'bool':
      return { kind: 'boolean', value: text === 't' };
    case 'bytea':
      return { kind: 'blob', value: Buffer.from(text.slice(2), 'hex').toString('base64') };
    case 'json':
    case 'jsonb':
      return { kind: 'string', value: compactJson(text) };
    case 'timestamptz':
      return { kind: 'string', value: timestampInUtc(text) };
    case 'timetz':
      return { kind: 'string', value: timeInUtc(text) };
    default:
      return { kind: 'string', value: text };
  }
}

function field(value: Scalar): Field {
  switch (value.kind) {
    case 'long':
      return { longValue: value.value };
    case 'double':
      return { doubleValue: value.value };
    case 'boolean':
      return { booleanValue: value.value };
    case 'blob':
      return { blobValue: value.value };
    case 'string':
      return { stringValue: value.value };
  }
}

function arrayValue(items: Array<Scalar | null>, element: PgType, options: ResultOptions): ArrayValue {
  // The member follows the element type, so an empty or all-NULL array still gets the right one.
  const kind = items.find((item) => item !== null)?.kind ?? scalar(sampleText(element.name), element, options).kind;
  switch (kind) {
    case 'long':
      return { longValues: items.map((item) => (item?.value as bigint | undefined) ?? null) };
    case 'double':
      return { doubleValues: items.map((item) => (item?.value as number | undefined) ?? null) };
    case 'boolean':
      return { booleanValues: items.map((item) => (item?.value as boolean | undefined) ?? null) };
    default:
      return { stringValues: items.map((item) => (item === null ? null : String(item.value))) };
  }
}

/** A text of the element type, only to learn which ArrayValue member an empty array uses. */
function sampleText(typeName: string): string {
  if (typeName === 'bool') return 't';
  if (typeName === 'numeric') return '0.5';
  if (typeName === 'bytea') return '\\x';
  return '0';
}

/**
 * Parses PostgreSQL's text form of an array: `{1,NULL,"a b","x\"y"}`, optionally prefixed by bounds
 * (`[0:2]={...}`). A nested `{` means a multidimensional array, which v2 refuses.
 */
function parseArray(text: string, typeName: string): Array<string | null> {
  const body = text.startsWith('[') ? text.slice(text.indexOf('=') + 1) : text;
  if (body.startsWith('{{')) {
    throw unsupportedResult(`The result contains a multidimensional array (${typeName.replace(/^_/, '')}[][]), which the Data API does not support.`);
  }
  const items: Array<string | null> = [];
  let i = 1;
  if (body[i] === '}') return items;
  while (i < body.length) {
    if (body[i] === '"') {
      let value = '';
      i++;
      while (body[i] !== '"') {
        if (body[i] === '\\') i++;
        value += body[i];
        i++;
      }
      items.push(value);
      i++;
    } else {
      let end = i;
      while (body[end] !== ',' && body[end] !== '}') end++;
      const value = body.slice(i, end);
      items.push(value === 'NULL' ? null : value);
      i = end;
    }
    i++; // the ',' or the closing '}'
  }
  return items;
}

/**
 * timestamptz in UTC without an offset, as v2 returns it. The server's sessions run in UTC, but a
 * caller's `SET TIME ZONE` must not change what the Data API returns, so any offset is applied here.
 */
function timestampInUtc(text: string): string {
  const match = /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)?([+-]\d\d(?::\d\d){0,2})$/.exec(text);
  if (!match) return text.replace(/\+00(?= BC$)/, '');
  const [, year, month, day, hour, minute, second, fraction = '', zone = ''] = match;
  const offset = offsetSeconds(zone);
  if (offset === 0) return text.slice(0, text.length - zone.length);
  const date = new Date(0);
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  date.setUTCHours(Number(hour), Number(minute), Number(second) - offset);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}${fraction}`;
}

/** `+05:30` -> 19800; `-08` -> -28800. */
function offsetSeconds(zone: string): number {
  const [hours = '0', minutes = '0', seconds = '0'] = zone.slice(1).split(':');
  return (zone.startsWith('-') ? -1 : 1) * (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds));
}

/** timetz in UTC without an offset: `15:30:00-08` is `23:30:00` (§2.2). */
function timeInUtc(text: string): string {
  const match = /^(\d\d):(\d\d):(\d\d)(\.\d+)?([+-]\d\d(?::\d\d){0,2})$/.exec(text);
  if (!match) return text;
  const [, hour, minute, second, fraction = '', zone = ''] = match;
  const seconds = (((Number(hour) * 3600 + Number(minute) * 60 + Number(second) - offsetSeconds(zone)) % 86400) + 86400) % 86400;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor(seconds / 60) % 60)}:${pad(seconds % 60)}${fraction}`;
}

/** ColumnMetadata (§2.3): JDBC type codes, PostgreSQL type names, and what the row description tells. */
function columnMetadata(definition: FieldDef, type: PgType, elementType: (oid: number) => PgType): Record<string, unknown> {
  const element = type.category === 'A' ? elementType(type.element) : undefined;
  const modifier = definition.dataTypeModifier;
  let precision = PRECISION[type.name] ?? (type.category === 'S' ? 2147483647 : 0);
  let scale = 0;
  if (type.name === 'numeric' && modifier >= 4) {
    precision = ((modifier - 4) >> 16) & 0xffff;
    scale = (modifier - 4) & 0xffff;
  } else if ((type.name === 'varchar' || type.name === 'bpchar') && modifier >= 4) {
    precision = modifier - 4;
  }
  return {
    name: definition.name,
    label: definition.name,
    type: element ? 2003 : (JDBC_TYPES[type.name] ?? 1111),
    typeName: type.name,
    schemaName: '',
    tableName: '',
    isAutoIncrement: false,
    isSigned: SIGNED.has(type.name),
    isCurrency: false,
    isCaseSensitive: CASE_SENSITIVE.has(type.name),
    // java.sql.ResultSetMetaData.columnNullableUnknown: the row description does not say.
    nullable: 2,
    precision,
    scale,
    arrayBaseColumnType: element ? (JDBC_TYPES[element.name] ?? 1111) : 0,
  };
}
