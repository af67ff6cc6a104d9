import type { InboxTransaction } from '../handler/options.js';
import { channelFor } from '../transport/pass-through.js';
import type { DataApiPassThrough, PassThrough, TransactionChannel, WirePassThrough } from '../transport/pass-through.js';
import { OrmBindingError } from './errors.js';

/** What each binding needs, and the binding that serves the other transport (named in the fix). */
const BINDINGS = {
  'data-api': { name: 'transactionDataApi', other: 'transactionConnection', transport: 'the RDS Data API' },
  postgres: { name: 'transactionConnection', other: 'transactionDataApi', transport: 'the PostgreSQL wire protocol (database: postgres(pool))' },
} as const;

type PassThroughOf<T extends PassThrough['transport']> = T extends 'data-api' ? DataApiPassThrough : WirePassThrough;

/** The transaction's channel and its transport's pass-through, when `tx` is an inbox transaction on `transport`. */
export function channelOf<T extends PassThrough['transport']>(
  tx: InboxTransaction,
  transport: T,
): { readonly channel: TransactionChannel; readonly passThrough: PassThroughOf<T> } {
  const binding = BINDINGS[transport];
  const channel = channelFor(tx);
  if (channel === undefined) {
    throw new OrmBindingError(
      `${binding.name}(tx) needs the tx that apply or applyBatch receives from inbox(), not ${describe(tx)} (a copy or wrapper of tx is not it). ` +
        `Fix: call it inside apply, e.g. apply: async (tx, message) => { const db = drizzle({ ...${binding.name}(tx) }); ... }, ` +
        'with sqs-inbox and sqs-inbox/orm imported the same way (both with import, or both with require).',
    );
  }
  const passThrough = channel.passThrough;
  if (passThrough?.transport !== transport) {
    const actual = passThrough === undefined ? 'a transport without a way in for ORMs' : BINDINGS[passThrough.transport].transport;
    throw new OrmBindingError(
      `${binding.name}(tx) binds an ORM over ${binding.transport}, but this inbox runs on ${actual}. ` +
        (passThrough === undefined ? 'Fix: use tx.execute for this transport.' : `Fix: use ${binding.other}(tx) with this transport's ORM driver.`),
    );
  }
  return { channel, passThrough: passThrough as PassThroughOf<T> };
}

function describe(value: unknown): string {
  if (value === null || typeof value !== 'object') return String(value);
  return `an object with ${Object.keys(value).join(', ') || 'no fields'}`;
}
