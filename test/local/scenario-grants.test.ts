import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inbox } from '../../lambda/inbox/index.js';
import { runScenario, startLocal } from '../../local/index.js';
import type { LocalStack, ScenarioConsumer, ScenarioEnvironment, ScenarioRunOptions, ScenarioTransport } from '../../local/index.js';

// runScenario({ databaseGrants }): the handler under test runs as the consumer's own database role, made by
// the deployed role's code with the stack's grants, so a grant the stack forgot fails before the deploy.
let local: LocalStack;
beforeAll(async () => {
  local = await startLocal({ dataApi: { transactionIdleTimeoutMs: 2000 } });
});
afterAll(async () => local?.close());

type Reservation = { reservationId: string; sku: string };

const reservations: Omit<ScenarioConsumer, 'handler'> = {
  setup: [
    'CREATE TABLE public.stock (sku text PRIMARY KEY, available int NOT NULL)',
    'CREATE TABLE public.reservations (reservation_id text PRIMARY KEY, sku text NOT NULL, seq bigint GENERATED ALWAYS AS IDENTITY)',
    "INSERT INTO public.stock VALUES ('sku-1', 1000), ('sku-2', 1000)",
  ],
  message: (i) => ({ key: `res-${i}`, body: { reservationId: `res-${i}`, sku: `sku-${(i % 2) + 1}` }, groupId: `order-${i % 4}` }),
  effects: 'SELECT reservation_id AS key, count(*), min(seq) AS seq FROM public.reservations GROUP BY 1',
};

const handler = ({ database }: ScenarioEnvironment) =>
  inbox<Reservation>({
    consumer: 'reservations',
    database,
    apply: async (tx, { body }) => {
      await tx.execute('INSERT INTO public.reservations (reservation_id, sku) VALUES (:id, :sku)', { id: body.reservationId, sku: body.sku });
      await tx.execute('UPDATE public.stock SET available = available - 1 WHERE sku = :sku', { sku: body.sku });
    },
  });

const GRANTS: ScenarioRunOptions['databaseGrants'] = [
  { table: 'public.reservations', privileges: ['INSERT'] },
  { table: 'public.stock', privileges: ['SELECT', 'UPDATE'] },
];

const quick = {
  ...reservations,
  handler,
  messages: 12,
  faults: [],
  visibilityTimeoutSeconds: 1,
  // The stack's consumerName, as the construct sets it: the role is scoped to it.
  env: { INBOX_CONSUMER: 'reservations', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT' },
} as const;

/** The roles a run made that are still in the cluster. */
async function scenarioRoles(): Promise<string[]> {
  const client = new pg.Client({ connectionString: local.postgres.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ rolname: string }>("SELECT rolname FROM pg_roles WHERE rolname LIKE 'inbox_scenario_%'");
    return rows.map((row) => row.rolname);
  } finally {
    await client.end();
  }
}

describe.each<ScenarioTransport>(['data-api', 'postgres'])('runScenario with databaseGrants on %s', (transport) => {
  it("runs the handler as the consumer's role: with the stack's grants it applies every message once, and the role is gone after", async () => {
    let user: string | undefined;
    const report = await runScenario(local, {
      ...quick,
      transport,
      databaseGrants: GRANTS,
      handler: async (environment) => {
        const { rows } = await environment.session.execute('SELECT current_user AS name');
        user = rows[0]?.name as string;
        return handler(environment);
      },
    });
    expect(report.problems).toEqual([]);
    expect(report.applied).toBe(12);
    expect(user).toMatch(/^inbox_scenario_[0-9a-f]{16}$/);
    expect(report.problems).toEqual([]);
    expect(await scenarioRoles()).toEqual([]);
  }, 120_000);

  it('fails an UPDATE granted without the SELECT its WHERE needs, first in the problems, naming the role, the statement and the grant', async () => {
    const report = await runScenario(local, {
      ...quick,
      transport,
      databaseGrants: [
        { table: 'public.reservations', privileges: ['INSERT'] },
        { table: 'public.stock', privileges: ['UPDATE'] },
      ],
    });
    expect(report.applied).toBe(0);
    expect(report.problems[0]).toMatch(
      /^the consumer's role inbox_scenario_[0-9a-f]{16} was refused: permission denied for table stock, for UPDATE public\.stock SET available = available - 1 WHERE sku = .*Fix: add \{ table: 'public\.stock', privileges: \['SELECT', 'UPDATE'\] \} to the consumer's databaseGrants/,
    );
    expect(await scenarioRoles()).toEqual([]);
  }, 120_000);

  it("fails a handler that claims under another name than the stack's consumerName, as row-level security does on AWS", async () => {
    const report = await runScenario(local, {
      ...quick,
      transport,
      databaseGrants: GRANTS,
      handler: ({ database }) => inbox<Reservation>({ consumer: 'reservations-v2', database, apply: async () => {} }),
    });
    expect(report.applied).toBe(0);
    expect(report.problems[0]).toMatch(
      /^the consumer's role inbox_scenario_[0-9a-f]{16} acts for consumer 'reservations' \(INBOX_CONSUMER, the construct's consumerName\), and was refused a claim under another name: .*row-level security/,
    );
  }, 120_000);

  it('fails a table the grants leave out, naming its INSERT', async () => {
    const report = await runScenario(local, { ...quick, transport, databaseGrants: [{ table: 'public.stock', privileges: ['SELECT', 'UPDATE'] }] });
    expect(report.problems[0]).toMatch(
      /^the consumer's role \w+ was refused: permission denied for table reservations, for INSERT INTO public\.reservations .*Fix: add \{ table: 'public\.reservations', privileges: \['INSERT'\] \}/,
    );
  }, 120_000);
});

it("refuses a grant on a table the setup does not create, as the deployed role's custom resource would", async () => {
  await expect(runScenario(local, { ...quick, databaseGrants: [{ table: 'public.reservatons', privileges: ['INSERT'] }, GRANTS![1]!] })).rejects.toThrow(
    /^runScenario: databaseGrants: .*reservatons/,
  );
  expect(await scenarioRoles()).toEqual([]);
}, 60_000);

it('refuses databaseGrants on the DSQL profile, which connects as admin, with the fix', async () => {
  await expect(runScenario(local, { ...quick, transport: 'dsql', databaseGrants: GRANTS })).rejects.toThrow(
    "runScenario: databaseGrants runs the handlers as the consumer's role on transport 'data-api' or 'postgres'",
  );
}, 60_000);
