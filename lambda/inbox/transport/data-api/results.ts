import type { ColumnMetadata, ExecuteStatementCommandOutput, Field } from '@aws-sdk/client-rds-data';

// The Data API's answers: `Field`s typed by their column metadata, back to plain JavaScript rows.

import type { Row, StatementResult } from '../results.js';

export function toResult(output: ExecuteStatementCommandOutput): StatementResult {
  const columns = output.columnMetadata ?? [];
  const rows = (output.records ?? []).map((record) => {
    const row: Row = {};
    record.forEach((field, index) => {
      const column = columns[index];
      // Stryker disable next-line LogicalOperator: includeResultMetadata is set, so every column has metadata with a non-empty label (PostgreSQL's JDBC driver gives the alias as both label and name)
      row[column?.label || column?.name || `column${index}`] = fromField(field, column);
    });
    return row;
  });
  return { rows, updated: output.numberOfRecordsUpdated ?? 0 };
}

function fromField(field: Field, column: ColumnMetadata | undefined): unknown {
  const type = (column?.typeName ?? '').toLowerCase();
  if (field.isNull) return null;
  if (field.booleanValue !== undefined) return field.booleanValue;
  // Stryker disable next-line ConditionalExpression: with longReturnType STRING the Data API never returns a longValue
  if (field.longValue !== undefined) return field.longValue;
  if (field.doubleValue !== undefined) return field.doubleValue;
  if (field.blobValue !== undefined) return field.blobValue;
  if (field.arrayValue !== undefined) {
    const array = field.arrayValue;
    return array.stringValues ?? array.longValues ?? array.doubleValues ?? array.booleanValues ?? array.arrayValues ?? [];
  }
  if (field.stringValue !== undefined) return fromText(field.stringValue, type);
  return undefined;
}

function fromText(text: string, type: string): unknown {
  switch (type) {
    case 'int2':
    case 'int4':
    case 'serial':
    case 'int8':
    case 'bigserial': {
      // Longs arrive as strings (longReturnType STRING) so that values beyond 2^53 survive as bigint.
      const big = BigInt(text);
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    case 'timestamptz':
    case 'timestamp':
      return new Date(`${text.replace(' ', 'T')}Z`);
    case 'json':
    case 'jsonb':
      return JSON.parse(text);
    default:
      return text;
  }
}
