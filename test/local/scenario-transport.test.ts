import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dataApi, inbox } from '../../lambda/inbox/index.js';
import { sqsOutbox } from '../../lambda/inbox/outbox/index.js';
import { runScenario, startLocal } from '../../local/index.js';
import type { LocalStack, ScenarioConsumer, ScenarioEnvironment, ScenarioTransport } from '../../local/index.js';

// runScenario({ transport }): one user's handler through the same faults over the Data API and over the
// PostgreSQL wire protocol (a node-postgres pool through the testkit's wire proxy), judged on one table;
// and inbox() on the DSQL profile (dsql() through the profile's proxy, conflicts injected at COMMIT).
let local: LocalStack;
beforeAll(async () => {
  local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
});
afterAll(async () => local?.close());

const INSERT = 'INSERT INTO public.payments (payment_id, amount_cents) VALUES (:id, :amount)';

const payments: Omit<ScenarioConsumer, 'handler'> = {
  // No primary key on payment_id: a double effect is a second row, not a failed insert.
  setup: 'CREATE TABLE public.payments (id bigserial PRIMARY KEY, payment_id text NOT NULL, amount_cents int NOT NULL)',
  message: (i) => ({ key: `pay-${i}`, body: { paymentId: `pay-${i}`, amountCents: 100 + i }, groupId: `customer-${i % 20}` }),
  effects: 'SELECT payment_id AS key, count(*), min(id) AS seq FROM public.payments GROUP BY 1',
};

/** The module-level handler, loaded anew for each run (a module loads once per process otherwise). */
async function freshModuleHandler(seen: (pgHost: string | undefined) => void) {
  vi.resetModules();
  seen(process.env.PGHOST);
  return (await import('../fixtures/either-transport/payments-worker.js')).handler;
}

describe('runScenario on either transport', () => {
  it.each<ScenarioTransport>(['data-api', 'postgres'])(
    'runs one handler module on %s through every fault: none doubled, none lost, in order',
    async (transport) => {
      let pgHost: string | undefined = 'not loaded';
      const result = await runScenario(local, { ...payments, handler: () => freshModuleHandler((host) => (pgHost = host)), transport, messages: 320 });

      expect(result.problems).toEqual([]);
      expect(result.extraEffects).toBe(0);
      expect(result.lost).toBe(0);
      expect(result.orderViolations).toBe(0);
      // The module chose its transport from the run's environment: PGHOST (the wire proxy) only on the wire.
      expect(pgHost === undefined).toBe(transport === 'data-api');
      expect(Object.keys(result.faultsInjected).sort()).toEqual([
        'auto-pause',
        'crash-after-commit',
        'crash-in-transaction',
        'drop-commit',
        'duplicate-sends',
        'poison',
        'server-errors',
        'visibility-expiry',
      ]);
    },
    240_000,
  );

  it("hands the factory the wire's database, and sends the handler's calls over the wire", async () => {
    let given: ScenarioEnvironment | undefined;
    let idleInTransaction: unknown;
    const result = await runScenario(local, {
      ...payments,
      handler: async (environment) => {
        given = environment;
        const { rows } = await environment.session.execute("SELECT current_setting('idle_in_transaction_session_timeout') AS timeout");
        idleInTransaction = rows[0]?.timeout;
        return inbox<{ paymentId: string; amountCents: number }>({
          consumer: 'payments-worker',
          database: environment.database,
          apply: async (tx, { body }) => {
            await tx.execute(INSERT, { id: body.paymentId, amount: body.amountCents });
          },
        });
      },
      transport: 'postgres',
      messages: 40,
      faults: ['duplicate-sends', 'drop-commit', 'auto-pause'],
      seed: 3,
    });
    expect(result.problems.filter((problem) => !problem.includes('was never injected'))).toEqual([]);
    expect(result.extraEffects).toBe(0);
    expect(result.lost).toBe(0);
    expect(given?.transport).toBe('postgres');
    expect(given?.database).toHaveProperty('pool');
    expect(given?.env.PGHOST).toBe('127.0.0.1');
    expect(given?.env).not.toHaveProperty('INBOX_RESOURCE_ARN');
    // A transaction a crashed worker left open ends after 2 s, as on the run's Data API.
    expect(idleInTransaction).toBe('2s');
    expect(given?.env.PGOPTIONS).toBe('-c idle_in_transaction_session_timeout=2000');
    // Begin, claim, insert, commit per message at least: counted at the wire proxy.
    expect(result.callsPerMessage).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it("relays an outbox handler's messages on the wire, its sweeper and outbox watch on the wire too", async () => {
    const result = await runScenario(local, {
      ...payments,
      handler: ({ database }) =>
        inbox<{ paymentId: string; amountCents: number }>({
          consumer: 'payments-worker',
          database,
          outbox: sqsOutbox({ client: new SQSClient({}) }),
          apply: async (tx, { body }) => {
            await tx.execute(INSERT, { id: body.paymentId, amount: body.amountCents });
            tx.send({ to: 'receipts', body: { paymentId: body.paymentId }, groupId: 'receipts' });
          },
        }),
      transport: 'postgres',
      destinations: ['receipts'],
      messages: 40,
      faults: ['duplicate-sends', 'drop-commit'],
      seed: 3,
    });
    // Any Data API call during the run (a sweeper or watch left on the Data API) would be a problem here.
    expect(result.problems.filter((problem) => !problem.includes('was never injected'))).toEqual([]);
    const receipted = new Set(result.destinations.receipts!.map((message) => (JSON.parse(message.body) as { paymentId: string }).paymentId));
    expect(receipted.size).toBe(result.applied);
  }, 120_000);

  it('fails a run on the wire whose handler ignores the transport and goes to the Data API', async () => {
    const result = await runScenario(local, {
      ...payments,
      // The run's database over the Data API, whatever the transport.
      handler: ({ env }: ScenarioEnvironment) =>
        inbox({
          consumer: 'payments-worker',
          database: dataApi({ resourceArn: local.dataApi.resourceArn, secretArn: local.dataApi.secretArn, database: env.INBOX_DATABASE }),
          apply: async (tx, message) => {
            const body = message.body as { paymentId: string; amountCents: number };
            await tx.execute(INSERT, { id: body.paymentId, amount: body.amountCents });
          },
        }),
      transport: 'postgres',
      env: { INBOX_DATA_API_ENDPOINT: local.dataApi.endpoint },
      messages: 10,
      faults: [],
    });
    expect(result.exactlyOnce).toBe(false);
    expect(result.problems).toEqual([
      expect.stringContaining("transport 'postgres', but the handlers made no call over the wire: they ignored the transport."),
      expect.stringMatching(/^transport 'postgres', but the handlers made \d+ call\(s\) to the local Data API: they ignored the transport\./),
    ]);
  }, 60_000);

  it("runs inbox() on the DSQL profile through every fault, with DSQL's conflicts at COMMIT retried: none doubled, none lost, in order", async () => {
    let given: ScenarioEnvironment | undefined;
    let attributesType: unknown;
    const result = await runScenario(local, {
      ...payments,
      handler: (environment) => {
        given = environment;
        return inbox<{ paymentId: string; amountCents: number }>({
          consumer: 'payments-worker',
          database: environment.database,
          apply: async (tx, { body }) => {
            await tx.execute(INSERT, { id: body.paymentId, amount: body.amountCents });
          },
        });
      },
      // The inbox's tables in their DSQL form: json, not jsonb, where DSQL has no jsonb column.
      verify: async (session) => {
        const { rows } = await session.execute(
          "SELECT data_type FROM information_schema.columns WHERE table_schema = 'inbox' AND table_name = 'parked_message' AND column_name = 'attributes'",
        );
        attributesType = rows[0]?.data_type;
        return [];
      },
      transport: 'dsql',
      conflictRate: 0.1,
      messages: 200,
      seed: 3,
    });
    expect(result.problems.filter((problem) => !problem.includes('was never injected'))).toEqual([]);
    expect(result.extraEffects).toBe(0);
    expect(result.lost).toBe(0);
    expect(result.orderViolations).toBe(0);
    expect(result.transport).toBe('dsql');
    expect(given?.transport).toBe('dsql');
    expect(given?.database).toHaveProperty('pool');
    expect(attributesType).toBe('json');
    // One COMMIT in ten failed with DSQL's OC000, and the runtime ran those transactions again.
    expect(result.conflicts?.injected).toBeGreaterThan(10);
    expect(result.conflicts?.retried).toBeGreaterThanOrEqual(result.conflicts!.injected * 0.9);
  }, 180_000);

  it('names a statement the DSQL profile refused among the problems', async () => {
    const result = await runScenario(local, {
      ...payments,
      handler: ({ database }) =>
        inbox<{ paymentId: string; amountCents: number }>({
          consumer: 'payments-worker',
          database,
          apply: async (tx, { body }) => {
            // DSQL has no temporary tables.
            await tx.execute('CREATE TEMPORARY TABLE payment_scratch (id text)');
            await tx.execute(INSERT, { id: body.paymentId, amount: body.amountCents });
          },
        }),
      transport: 'dsql',
      conflictRate: 0,
      messages: 3,
      faults: [],
      timeoutMs: 15_000,
    });
    expect(result.exactlyOnce).toBe(false);
    expect(result.conflicts).toEqual({ injected: 0, retried: 0 });
    expect(result.problems).toContainEqual(
      expect.stringMatching(/^the DSQL profile refused a statement DSQL does not support \(temporary-table\): CREATE TEMPORARY TABLE payment_scratch/),
    );
  }, 60_000);

  it('refuses an unknown transport, naming the accepted ones, and a conflict rate off DSQL or out of range', async () => {
    await expect(runScenario(local, { ...payments, handler: () => async () => ({ batchItemFailures: [] }), transport: 'wire' as never })).rejects.toThrow(
      "runScenario: transport must be 'data-api' or 'postgres' or 'dsql'; got \"wire\".",
    );
    await expect(
      runScenario(local, { ...payments, handler: () => async () => ({ batchItemFailures: [] }), transport: 'postgres', conflictRate: 0.1 }),
    ).rejects.toThrow("runScenario: conflictRate is the DSQL profile's: give it with transport: 'dsql', or leave it out; got transport \"postgres\".");
    await expect(
      runScenario(local, { ...payments, handler: () => async () => ({ batchItemFailures: [] }), transport: 'dsql', conflictRate: 5 }),
    ).rejects.toThrow('runScenario: conflictRate must be a share of COMMITs from 0 to 1, e.g. 0.05; got 5.');
  });
});
