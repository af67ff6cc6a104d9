import type { Field, SqlParameter } from '@aws-sdk/client-rds-data';
// The Data API's parameters: plain JavaScript values (and the type-hinted ones) as `SqlParameter`s.
import { HintedValue } from '../values.js';
import type { SqlParams, SqlValue } from '../values.js';

const NAME = /^[A-Za-z0-9_]+$/;

/** Maps plain JS values to Data API parameters. */
export function toSqlParameters(params: SqlParams): SqlParameter[] {
  return Object.entries(params).map(([name, value]) => {
    if (!NAME.test(name)) {
      throw new TypeError(`parameter name "${name}" must match ${NAME}; it is written as :${name} in the SQL`);
    }
    return { name, ...toField(name, value) };
  });
}

function toField(name: string, value: SqlValue): { value: Field; typeHint?: HintedValue['typeHint'] } {
  if (value === null || value === undefined) return { value: { isNull: true } };
  if (value instanceof HintedValue) return { value: { stringValue: value.text }, typeHint: value.typeHint };
  if (typeof value === 'string') return { value: { stringValue: value } };
  if (typeof value === 'boolean') return { value: { booleanValue: value } };
  if (typeof value === 'bigint') {
    // The SDK writes a BigInt longValue as raw JSON digits, keeping precision a number would lose.
    return { value: { longValue: value as unknown as number } };
  }
  if (typeof value === 'number') {
    if (Number.isInteger(value) && Number.isSafeInteger(value)) return { value: { longValue: value } };
    if (!Number.isFinite(value)) {
      throw new TypeError(`parameter "${name}" is ${value}; the Data API cannot bind it. Pass null or a finite number.`);
    }
    return { value: { doubleValue: value } };
  }
  if (value instanceof Uint8Array) return { value: { blobValue: value } };
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new TypeError(`parameter "${name}" is an invalid Date`);
    return { value: { stringValue: value.toISOString().replace('T', ' ').replace('Z', '') }, typeHint: 'TIMESTAMP' };
  }
  if (typeof value === 'object') return { value: { stringValue: JSON.stringify(value) }, typeHint: 'JSON' };
  throw new TypeError(`parameter "${name}" has type ${typeof value}, which the Data API cannot bind`);
}
