// The values a statement binds, the same on every transport: plain JavaScript values, and the markers that
// say which PostgreSQL type a string stands for. Each transport encodes them its own way.

/** A value with an explicit type hint, made by `uuid()`, `decimal()`, `json()`, `date()` and `time()` from `sqs-inbox`. */
export class HintedValue {
  constructor(
    /** The type the value binds as (the Data API's `typeHint`; the wire transport casts to it). */
    readonly typeHint: 'UUID' | 'DECIMAL' | 'JSON' | 'DATE' | 'TIME' | 'TIMESTAMP',
    /** The value as the string the database receives. */
    readonly text: string,
  ) {}
}

/** Binds a string as `uuid` (an untyped string binds as varchar, which a uuid column refuses). */
export const uuid = (value: string) => new HintedValue('UUID', value);
/** Binds a number or numeric string as `numeric` without passing through a float. */
export const decimal = (value: string | number | bigint) => new HintedValue('DECIMAL', String(value));
/** Binds any value as `json` (plain objects and arrays do this by default). */
export const json = (value: unknown) => new HintedValue('JSON', JSON.stringify(value));
/** Binds `YYYY-MM-DD` as `date`. */
export const date = (value: string) => new HintedValue('DATE', value);
/** Binds `HH:MM:SS[.fff]` as `time`. */
export const time = (value: string) => new HintedValue('TIME', value);

/** What `execute` accepts as a parameter value. */
export type SqlValue = string | number | bigint | boolean | null | undefined | Uint8Array | Date | HintedValue | Record<string, unknown> | unknown[];

/** Named parameters: `{ orderId: 'order-417' }` binds `:orderId`. */
export type SqlParams = Readonly<
  Record<string, string | number | bigint | boolean | null | undefined | Uint8Array | Date | HintedValue | Record<string, unknown> | unknown[]>
>;
