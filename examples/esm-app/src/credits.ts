// src/credits.ts: the credits ledger and account balances, shared by the stream and outbox handlers
import type { InboxTransaction } from 'sqs-inbox';

export interface Credit {
  readonly creditId: string;
  readonly account: string;
  readonly amountCents: number;
}

/** The ledger has no key on credit_id: a double effect is a second row, and a wrong balance. */
export const CREDITS_TABLES = [
  'CREATE TABLE public.credits (id bigserial PRIMARY KEY, credit_id text NOT NULL, account text NOT NULL, amount_cents int NOT NULL)',
  'CREATE TABLE public.accounts (account text PRIMARY KEY, balance_cents bigint NOT NULL)',
];

/** Records the credit and adds it to the account's balance, in the inbox's transaction. */
export async function applyCredit(tx: InboxTransaction, credit: Credit): Promise<void> {
  const params = { id: credit.creditId, account: credit.account, amount: credit.amountCents };
  await tx.execute('INSERT INTO public.credits (credit_id, account, amount_cents) VALUES (:id, :account, :amount)', params);
  await tx.execute(
    `INSERT INTO public.accounts (account, balance_cents) VALUES (:account, :amount)
     ON CONFLICT (account) DO UPDATE SET balance_cents = public.accounts.balance_cents + EXCLUDED.balance_cents`,
    params,
  );
}
