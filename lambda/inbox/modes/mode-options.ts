import type { SqlParams } from '../transport/values.js';
import { InboxConfigError } from '../errors.js';
import { described, refuseUnknownKeys } from '../handler/option-checks.js';
import type { ConsumerOptions, GatedStatement, InboxMessage, ResolvedMode } from '../handler/options.js';

/** The keys of `statement` and `statementBatch` as objects. */
export const STATEMENT_OPTIONS: Readonly<Record<'sql' | 'params', true>> = { sql: true, params: true };

/** The four ways to write a consumer; exactly one is given. */
const MODES = ['apply', 'statement', 'applyBatch', 'statementBatch'] as const;

const MODE_HELP =
  '`apply: async (tx, message) => { ... }` (a transaction per record), `statement` (one gated statement per record), ' +
  '`applyBatch: async (tx, messages) => { ... }` (one transaction per batch) or `statementBatch` (one gated statement per batch)';

/** The mode the options name, validated: exactly one of apply, statement, applyBatch, statementBatch. */
export function resolveMode<Body, Raw>(options: ConsumerOptions<Body, Raw>): ResolvedMode<Body, Raw> {
  const given = MODES.filter((mode) => options[mode] !== undefined && options[mode] !== null);
  if (given.length === 0) throw new InboxConfigError('apply', `give ${MODE_HELP}`);
  if (given.length > 1) {
    throw new InboxConfigError(given[1]!, `give only one of apply, statement, applyBatch and statementBatch; got ${given.join(' and ')}`);
  }
  switch (given[0]!) {
    case 'apply':
      if (typeof options.apply !== 'function') {
        throw new InboxConfigError('apply', `must be an async function (tx, message) => void; got ${described(options.apply)}`);
      }
      return { kind: 'transaction', apply: options.apply };
    case 'applyBatch':
      if (typeof options.applyBatch !== 'function') {
        throw new InboxConfigError('applyBatch', `must be an async function (tx, messages) => void; got ${described(options.applyBatch)}`);
      }
      return { kind: 'batch-transaction', applyBatch: options.applyBatch };
    case 'statementBatch':
      return batchStatement(options.statementBatch);
    case 'statement':
      return statement(options.statement);
  }
}

function statement<Body, Raw>(given: unknown): ResolvedMode<Body, Raw> {
  if (typeof given === 'function') return { kind: 'statement', statement: given as (message: InboxMessage<Body, Raw>) => GatedStatement };
  if (!given || typeof given !== 'object' || Array.isArray(given)) {
    throw new InboxConfigError('statement', `must be (message) => ({ sql, params }) or { sql, params: (message) => params }; got ${described(given)}`);
  }
  refuseUnknownKeys(given, STATEMENT_OPTIONS, 'statement');
  const { sql, params } = given as { sql: string; params: unknown };
  if (typeof params !== 'function') {
    throw new InboxConfigError(
      'statement.params',
      `must be a function (message) => ({ name: value, ... }) giving the statement's parameters; got ${described(params)}`,
    );
  }
  return { kind: 'statement', statement: (message) => ({ sql, params: params(message) as SqlParams }), constantSql: sql };
}

function batchStatement<Body, Raw>(given: unknown): ResolvedMode<Body, Raw> {
  if (!given || typeof given !== 'object' || Array.isArray(given)) {
    throw new InboxConfigError(
      'statementBatch',
      `must be { sql, params?: (messages) => params }, e.g. { sql: "INSERT INTO shipments (order_id) SELECT body->>'orderId' FROM claimed" }; got ${described(given)}`,
    );
  }
  refuseUnknownKeys(given, STATEMENT_OPTIONS, 'statementBatch');
  const { sql, params } = given as { sql: unknown; params: unknown };
  if (params !== undefined && typeof params !== 'function') {
    throw new InboxConfigError('statementBatch.params', `must be a function (messages) => ({ name: value, ... }); got ${described(params)}`);
  }
  if (typeof sql !== 'string') {
    throw new InboxConfigError('statementBatch.sql', `must be a string; got ${described(sql)}`);
  }
  const values = (params ?? (() => ({}))) as (messages: readonly InboxMessage<Body, Raw>[]) => SqlParams;
  return { kind: 'batch-statement', sql, params: values };
}
