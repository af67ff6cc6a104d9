import { describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import type { InboxOptions } from '../../lambda/inbox/index.js';
import { FAULT_RATES, FAULTS, runScenario } from '../../local/index.js';
import type { ScenarioConsumer, ScenarioEnvironment } from '../../local/index.js';
import { localStackPerFile } from '../support/local-stack.js';

// The testbed cannot pass silently: faults that never struck are problems, the seed decides the faults
// the same way run after run, and a verify hook judges more than key counts.

interface Credit {
  readonly creditId: string;
  readonly account: string;
  readonly amountCents: number;
}

const ACCOUNTS = 5;
const UNITS = { message: 'messages', delivery: 'first deliveries', 'commit-point': 'the calls at the commit point', run: 'runs' } as const;
const credit = (i: number): Credit => ({ creditId: `credit-${i}`, account: `account-${i % ACCOUNTS}`, amountCents: 100 + i });

/** A ledger of credits and each account's balance; the ledger has no key on credit_id, so a double effect is a second row. */
const ledger: Omit<ScenarioConsumer, 'handler'> = {
  setup: [
    'CREATE TABLE public.credits (id bigserial PRIMARY KEY, credit_id text NOT NULL, account text NOT NULL, amount_cents int NOT NULL)',
    'CREATE TABLE public.accounts (account text PRIMARY KEY, balance_cents bigint NOT NULL)',
  ],
  message: (i) => ({ key: credit(i).creditId, body: credit(i), groupId: credit(i).account }),
  effects: 'SELECT credit_id AS key, count(*), min(id) AS seq FROM public.credits GROUP BY 1',
};

const CREDIT = 'INSERT INTO public.credits (credit_id, account, amount_cents) VALUES (:id, :account, :amount)';
const BALANCE = `INSERT INTO public.accounts (account, balance_cents) VALUES (:account, :amount)
  ON CONFLICT (account) DO UPDATE SET balance_cents = public.accounts.balance_cents + EXCLUDED.balance_cents`;
const params = (body: Credit) => ({ id: body.creditId, account: body.account, amount: body.amountCents });

/** The right way: the credit and the balance in the inbox's transaction. */
const inTransaction = ({ database }: ScenarioEnvironment) =>
  inbox<Credit>({
    consumer: 'credits',
    database,
    onPermanentError: 'park',
    apply: async (tx, { body }) => {
      await tx.execute(CREDIT, params(body));
      await tx.execute(BALANCE, params(body));
    },
  });

/** The bug: the effect written through the session, autocommit, outside the claim's transaction. */
const outsideTransaction = ({ database, session }: ScenarioEnvironment) =>
  inbox<Credit>({
    consumer: 'credits',
    database,
    onPermanentError: 'park',
    apply: (async (_tx, { body }) => {
      await session.execute(CREDIT, params(body));
      await session.execute(BALANCE, params(body));
    }) satisfies NonNullable<InboxOptions<Credit>['apply']>,
  });

/** Each account's balance must be the sum of the credits it was sent, the poison ones (parked) left out. */
function balances(messages: number, parkedKeys: () => ReadonlySet<string>) {
  return async (session: ScenarioEnvironment['session']) => {
    const expected = new Map<string, number>();
    for (let i = 0; i < messages; i++) {
      if (parkedKeys().has(credit(i).creditId)) continue;
      expected.set(credit(i).account, (expected.get(credit(i).account) ?? 0) + credit(i).amountCents);
    }
    const { rows } = await session.execute('SELECT account, balance_cents::int AS balance FROM public.accounts ORDER BY account');
    return rows
      .filter((row) => row.balance !== expected.get(String(row.account)))
      .map((row) => `${row.account} has ${row.balance} cents, expected ${expected.get(String(row.account))}`);
  };
}

// One stack for the file, on a database of its own: the runs' own databases live on the shared server.
const stack = localStackPerFile('harness_faults');

describe('a testbed that cannot pass silently', () => {
  it("fails a handler that writes its effect outside the transaction at the README's 300 messages: doubled credits, wrong balances", async () => {
    const parked = new Set<string>();
    const report = await runScenario(stack(), {
      ...ledger,
      handler: outsideTransaction,
      verify: async (session) => {
        const { rows } = await session.execute('SELECT message_key FROM inbox.parked_message');
        for (const row of rows) parked.add(String(row.message_key));
        return balances(300, () => parked)(session);
      },
    });
    expect(report.doubled).toBeGreaterThan(0);
    expect(report.problems).toContainEqual(expect.stringMatching(/^\d+ message\(s\) applied more than once: credit-\d+/));
    expect(report.problems).toContainEqual(expect.stringMatching(/^verify: account-\d has \d+ cents, expected \d+$/));
    expect(report.exactlyOnce).toBe(false);
  }, 180_000);

  it('fails it at 20 messages too, by naming the faults that never struck and how many messages make each likely', async () => {
    const report = await runScenario(stack(), { ...ledger, handler: outsideTransaction, messages: 20 });
    const unfired = report.faultLikelihood.filter((fault) => fault.injected === 0);
    expect(unfired.length).toBeGreaterThan(0);
    for (const { fault, messagesFor99 } of unfired) {
      expect(report.problems).toContainEqual(
        `${fault} was never injected, so this run proved nothing about it (20 messages: at ${FAULT_RATES[fault].rate * 100}% of ${UNITS[FAULT_RATES[fault].per]}, ~${messagesFor99} messages make it 99% likely); raise messages or try another seed, or leave it out of faults`,
      );
    }
    expect(report.exactlyOnce).toBe(false);
    // From the rates: 1 - (1 - rate)^n >= 0.99.
    const likely = Object.fromEntries(report.faultLikelihood.map((fault) => [fault.fault, fault.messagesFor99]));
    expect(likely).toMatchObject({
      'duplicate-sends': 90,
      poison: 305,
      'crash-after-commit': 305,
      'visibility-expiry': 305,
      'server-errors': 305,
      'auto-pause': 1,
    });
    // 152 commits make it 99% likely; about one commit per message: a little more when a commit failed and
    // came again, a little less when a message never committed (poison, dead-lettered).
    expect(likely['crash-in-transaction']).toBeGreaterThan(120);
    expect(likely['crash-in-transaction']).toBeLessThanOrEqual(200);
  }, 60_000);

  it('passes the same handler with its effect in the transaction, balances verified, once every fault struck', async () => {
    const parked = new Set<string>();
    const report = await runScenario(stack(), {
      ...ledger,
      handler: inTransaction,
      messages: 500,
      // The balances count every credit not parked: a well-formed one whose five receives a busy machine used up
      // (the judge excuses those, as the run's load) would be missing from them, so the visibility is roomier.
      visibilityTimeoutSeconds: 5,
      verify: async (session) => {
        const { rows } = await session.execute('SELECT message_key FROM inbox.parked_message');
        for (const row of rows) parked.add(String(row.message_key));
        return balances(500, () => parked)(session);
      },
    });
    expect(report.problems).toEqual([]);
    expect(report.faultLikelihood.map((fault) => fault.fault)).toEqual([...FAULTS]);
    expect(report.faultLikelihood.every((fault) => fault.injected > 0)).toBe(true);
  }, 180_000);

  it('reports what verify found, and what it threw, in problems', async () => {
    const found = await runScenario(stack(), {
      ...ledger,
      handler: inTransaction,
      messages: 10,
      faults: [],
      verify: () => ['account-0 is frozen', 'account-1 is frozen'],
    });
    expect(found.problems).toEqual(['verify: account-0 is frozen', 'verify: account-1 is frozen']);
    const threw = await runScenario(stack(), {
      ...ledger,
      handler: inTransaction,
      messages: 10,
      faults: [],
      verify: async (session) => {
        const { rows } = await session.execute('SELECT count(*)::int AS accounts FROM public.accounts');
        expect(rows[0]?.accounts).toBe(6);
      },
    });
    expect(threw.problems).toEqual([expect.stringMatching(/^verify: expected 5 to be 6/)]);
    expect(threw.exactlyOnce).toBe(false);
    await expect(runScenario(stack(), { ...ledger, handler: inTransaction, messages: 1, verify: 'SELECT 1' as never })).rejects.toThrow(
      'verify must be a function',
    );
  }, 60_000);

  it('decides the same faults for the same seed, run after run', async () => {
    const run = () => runScenario(stack(), { ...ledger, handler: inTransaction, messages: 200, seed: 7 });
    const first = await run();
    const second = await run();
    const third = await run();
    expect(first.problems).toEqual([]);
    expect(second.faultsInjected).toEqual(first.faultsInjected);
    expect(third.faultsInjected).toEqual(first.faultsInjected);
    expect(second.duplicateSends).toBe(first.duplicateSends);
    expect(second.poison).toBe(first.poison);
  }, 180_000);
});
