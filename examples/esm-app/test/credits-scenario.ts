// test/credits-scenario.ts: the credits ledger as the testbed drives it, shared by the tests below
import type { ScenarioSession } from 'sqs-inbox/local';
import { CREDITS_TABLES } from '../src/credits.js';

export const credits = {
  setup: CREDITS_TABLES,
  // groupId: the FIFO group, or the stream's lane (partition key); each account's credits stay in order.
  message: (i: number) => ({
    key: `credit-${i}`,
    body: { creditId: `credit-${i}`, account: `account-${i % 5}`, amountCents: 100 + i },
    groupId: `account-${i % 5}`,
  }),
  effects: 'SELECT credit_id AS key, count(*), min(id) AS seq FROM public.credits GROUP BY 1',
  // More than key counts: every balance is the sum of its account's credits.
  verify: async (session: ScenarioSession) => {
    const { rows } = await session.execute(`SELECT a.account FROM public.accounts a
      JOIN (SELECT account, sum(amount_cents) AS total FROM public.credits GROUP BY 1) c USING (account) WHERE a.balance_cents <> c.total`);
    return rows.map((row) => `${String(row['account'])}: balance is not the sum of its credits`);
  },
  env: { INBOX_CONSUMER: 'credits', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
};
