import { describe, expect, it } from 'vitest';
import { dynamoDbInbox, kafkaInbox, kinesisInbox } from '../../lambda/inbox/index.js';
import type { InboxTransaction } from '../../lambda/inbox/index.js';
import type { ScenarioSession } from '../../local/scenario/consumer.js';
import type { InboxTransport } from '../../lambda/inbox/transport/transport.js';
import { runStreamScenario } from '../../local/index.js';
import type { StreamConsumer } from '../../local/index.js';
import { STREAM_SOURCES } from '../../local/scenario/stream.js';
import type { StreamSourceName } from '../../local/scenario/stream.js';
import { localStackPerFile } from '../support/local-stack.js';
import { streamDemoConsumer } from '../../demo/streams/consumers.js';

// runStreamScenario as a user drives their own kinesisInbox, dynamoDbInbox and kafkaInbox handlers:
// records through the local stream and Lambda's mapping for it, the stream faults, and exactly-once
// judged on the handler's own table.

interface Credit {
  readonly creditId: string;
  readonly account: string;
  readonly amountCents: number;
}

const CREDIT = 'INSERT INTO public.credits (credit_id, account, amount_cents) VALUES (:id, :account, :amount)';

/** Where the effect goes: the inbox's transaction, or (the bug) the session's autocommit, outside it. */
type Writer = (tx: InboxTransaction, session: ScenarioSession) => Pick<InboxTransaction, 'execute'>;
const inTransaction: Writer = (tx) => tx;
const outsideTransaction: Writer = (_tx, session) => ({ execute: (sql, params) => session.execute(sql, params as never) as never });

const credit = async (writer: Pick<InboxTransaction, 'execute'>, body: Credit | undefined) => {
  if (body) await writer.execute(CREDIT, { id: body.creditId, account: body.account, amount: body.amountCents });
};

/** The user's handler for each source, its key where the source has it. */
function handlerFor(source: StreamSourceName, write: Writer) {
  return ({ database, session }: { database: InboxTransport; session: ScenarioSession }) => {
    const common = { consumer: 'credits', database, onPermanentError: 'park' } as const;
    if (source === 'kinesis') return kinesisInbox<Credit>({ ...common, key: { field: 'creditId' }, apply: (tx, { body }) => credit(write(tx, session), body) });
    if (source === 'kafka')
      return kafkaInbox<Credit>({ ...common, key: { header: 'idempotency-key' }, apply: (tx, { body }) => credit(write(tx, session), body) });
    return dynamoDbInbox({
      ...common,
      key: { field: 'newImage.creditId' },
      apply: (tx, { body }) => credit(write(tx, session), body.newImage as unknown as Credit),
    });
  };
}

const credits = (source: StreamSourceName, write: Writer): StreamConsumer => ({
  handler: handlerFor(source, write) as never,
  setup: 'CREATE TABLE public.credits (id bigserial PRIMARY KEY, credit_id text NOT NULL, account text NOT NULL, amount_cents int NOT NULL)',
  message: (i) => ({ key: `credit-${i}`, body: { creditId: `credit-${i}`, account: `account-${i % 5}`, amountCents: 100 + i }, groupId: `account-${i % 5}` }),
  effects: 'SELECT credit_id AS key, count(*), min(id) AS seq FROM public.credits GROUP BY 1',
  partitionKey: 'account',
});

// One stack for the file, on a database of its own: the runs' own databases live on the shared server.
const stack = localStackPerFile('stream_scenario');

describe.each(STREAM_SOURCES)('runStreamScenario with your own %s handler', (source) => {
  it('applies every record exactly once and in lane order through every stream fault, each of which struck', async () => {
    const report = await runStreamScenario(stack(), { source, ...credits(source, inTransaction), messages: 500, seed: 3 });
    expect(report.problems).toEqual([]);
    expect(report.faultLikelihood.every((fault) => fault.injected > 0)).toBe(true);
    expect(report).toMatchObject({ applied: 500, extraEffects: 0, lost: 0, orderViolations: 0, completed: true });
    if (source !== 'dynamodb') expect(report.duplicateSends).toBeGreaterThan(0);
  }, 120_000);

  it('fails the same handler with its effect written outside the transaction, and names the faults a small run never injected', async () => {
    const report = await runStreamScenario(stack(), { source, ...credits(source, outsideTransaction), messages: 500, seed: 3 });
    expect(report.doubled).toBeGreaterThan(0);
    expect(report.problems).toContainEqual(expect.stringMatching(/^\d+ message\(s\) applied more than once: credit-\d+/));

    const small = await runStreamScenario(stack(), { source, ...credits(source, outsideTransaction), messages: 20, seed: 3 });
    expect(small.problems).toContainEqual(
      expect.stringMatching(
        /^[a-z-]+ was never injected, so this run proved nothing about it \(20 messages: at [\d.]+% of [a-z ]+, ~\d+ messages make it 99% likely\)/,
      ),
    );
    expect(small.exactlyOnce).toBe(false);
  }, 120_000);
});

it('sets the SQS endpoint variables for a handler that makes its own SQSClient, and refuses a second run at once', async () => {
  let seen: Record<string, string | undefined> = {};
  const first = runStreamScenario(stack(), {
    source: 'kinesis',
    ...credits('kinesis', inTransaction),
    handler: (environment) => {
      seen = { endpoint: process.env.AWS_ENDPOINT_URL_SQS, region: process.env.AWS_REGION, database: process.env.INBOX_DATABASE };
      return handlerFor('kinesis', inTransaction)(environment) as never;
    },
    messages: 5,
    faults: [],
  });
  await expect(runStreamScenario(stack(), { source: 'kafka', ...streamDemoConsumer('kafka', 'inbox', 5), messages: 5 })).rejects.toThrow(
    'another scenario (runStreamScenario) is running',
  );
  expect((await first).problems).toEqual([]);
  expect(seen).toEqual({ endpoint: stack().sqs.endpoint, region: stack().sqs.region, database: expect.stringMatching(/^stream_kinesis_handler_/) });
  expect(process.env.AWS_ENDPOINT_URL_SQS).toBeUndefined();
}, 60_000);
