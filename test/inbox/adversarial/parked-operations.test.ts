import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxError, PermanentError } from '../../../lambda/inbox/index.js';
import { parkedMessages } from '../../../lambda/inbox/parked/parking.js';
import { redriveParked } from '../../../lambda/inbox/parked/redrive.js';
import { TRANSPORT, inboxFixture, lambdaContext } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { drain, lambdaRecordOf, startSqsFixture } from '../../support/sqs.js';
import type { SqsFixture } from '../../support/sqs.js';
import { EFFECTS_DDL, deliver, handlerOptions, materialise } from './consumer-run.js';
import type { MaterialCase, ParkedRow } from './consumer-run.js';
import type { Mode } from './expectations.js';
import { fuzzParameters, fuzzTimeout } from './fuzz-settings.js';
import { account } from './invariant.js';
import { LAMBDA_SOURCES } from './lambda-sources.js';
import { casePlan } from './planned-case.js';
import type { CasePlan, Effect } from './planned-case.js';

// An operator's decisions on what hostile records left parked: the cause fixed (the effect no longer
// refuses), each parked message replayed (or, from a queue, redriven and delivered again); then the
// original records come again, late. A message applies exactly once whatever the order; a replay of a
// message whose cause stands (its body, a collision) refuses and leaves it parked; a second decision on
// one message is refused.

let db: InboxFixture;
let sqs: SqsFixture;
beforeAll(async () => {
  db = await inboxFixture('adversarial_parked');
  await db.query(EFFECTS_DDL);
  sqs = await startSqsFixture();
});
afterAll(async () => {
  await sqs.close();
  await db.close();
});

const MODES: readonly Mode[] = ['apply', 'statement', 'applyBatch', 'statementBatch'];

/** The case's effects once the cause is fixed: nothing refuses any more, and nothing hiccups. */
const fixed = (material: MaterialCase): MaterialCase => ({ ...material, effects: new Map([...material.effects].map(([token]) => [token, 'ok' as Effect])) });

const effectCounts = async (consumer: string) =>
  new Map(
    (await db.query('SELECT token, count(*)::int AS n FROM public.fuzz_effects WHERE consumer = $1 GROUP BY token', [consumer])).map((row) => [
      row.token as string,
      row.n as number,
    ]),
  );

/**
 * How often a message may apply after the operator's decisions: once; or, parked for want of a usable key,
 * once per record parked (a producer's re-sends of it are records the inbox cannot tell apart without a key,
 * and the operator replays or redrives each).
 */
function timesAllowed(token: string, parked: readonly ParkedRow[]): number {
  const rows = parked.filter((row) => row.token === token);
  return rows.length > 0 && rows.every((row) => row.errorClass === 'KeyError') ? rows.length : 1;
}

const parkedRows = async (consumer: string) =>
  db.query('SELECT id, error_class, replayed_at, redriven_at FROM inbox.parked_message WHERE consumer_name = $1 ORDER BY id', [consumer]);

let cases = 0;
const RUNS = 4;

describe.each(LAMBDA_SOURCES)('$name: parked messages replayed once their cause is fixed (property-based)', (source) => {
  it(
    `on ${TRANSPORT}: a replay applies a message once; one whose cause stands is refused and stays parked; late redeliveries apply nothing more`,
    async () => {
      await fc.assert(
        fc.asyncProperty(casePlan(source.rules, source.healthyPayload), fc.constantFrom(...MODES), async (plan: CasePlan, mode) => {
          const caseId = `${cases++}`;
          const consumer = `fz-parked-${caseId}`;
          const material = materialise(plan, source, mode, 'park', caseId, true);
          const observed = await deliver(db, material, plan, consumer);
          const repaired = fixed(material);
          const handler = source.make(handlerOptions(repaired, plan, consumer, db));
          const before = await effectCounts(consumer);
          const found: string[] = [];
          for (const row of await parkedRows(consumer)) {
            const outcome = await parkedMessages(handler)
              .replay(Number(row.id))
              .catch((error: Error) => error);
            const cause = row.error_class as string;
            if (outcome instanceof Error) {
              // Only a cause the fix did not touch may refuse: the body, the key, the collision.
              if (cause === 'RejectedOrder' || !(outcome instanceof InboxError))
                found.push(`parked ${row.id} (${cause}): the replay threw ${outcome.name}: ${outcome.message}`);
              if (outcome instanceof PermanentError && outcome.name !== cause && cause !== 'KeyError')
                found.push(`parked ${row.id} (${cause}): refused as ${outcome.name}`);
            } else if (outcome !== 'replayed') {
              found.push(`parked ${row.id} (${cause}): the replay answered ${outcome}`);
            } else if ((await parkedMessages(handler).replay(Number(row.id))) !== 'already-replayed') {
              found.push(`parked ${row.id}: replayed twice`);
            }
          }
          // The original records come again, late, to a handler with the fix.
          const late = source.handler(handlerOptions(repaired, plan, consumer, db));
          for (const generation of material.generations) if (generation.length > 0) await late(generation);
          const after = await effectCounts(consumer);
          for (const [token, n] of after) {
            if (n > timesAllowed(token, observed.parked)) found.push(`${token}: applied ${n} times`);
            const parkedAs = observed.parked.filter((row) => row.token === token).map((row) => row.errorClass);
            if (parkedAs.includes('RejectedOrder') && n !== 1) found.push(`${token}: parked for its effect, not applied once after the fix`);
          }
          for (const [token, n] of before) if (after.get(token) !== n) found.push(`${token}: applied again after the replay (${n} -> ${after.get(token)})`);
          expect(found, account(material, observed)).toEqual([]);
        }),
        fuzzParameters(RUNS),
      );
    },
    fuzzTimeout(RUNS, 5_000),
  );
});

describe.each(LAMBDA_SOURCES.filter((source) => source.service === 'sqs'))('$name: parked messages redriven to their queue (property-based)', (source) => {
  let queueUrl: string;
  beforeAll(async () => {
    const name = source.ordered ? 'fuzz-redrive.fifo' : 'fuzz-redrive';
    queueUrl = (await sqs.client.send(new CreateQueueCommand({ QueueName: name, Attributes: source.ordered ? { FifoQueue: 'true' } : {} }))).QueueUrl!;
  });

  it(
    `on ${TRANSPORT}: a message redriven after the fix applies once when delivered, even twice; it can be neither replayed nor redriven again`,
    async () => {
      await fc.assert(
        fc.asyncProperty(casePlan(source.rules, source.healthyPayload), fc.constantFrom(...MODES), async (plan: CasePlan, mode) => {
          const caseId = `${cases++}`;
          const consumer = `fz-redrive-${caseId}`;
          const material = materialise(plan, source, mode, 'park', caseId, true);
          const observed = await deliver(db, material, plan, consumer);
          const repaired = fixed(material);
          const ids = (await parkedRows(consumer)).map((row) => Number(row.id));
          // Past the FIFO deduplication window of the original sends.
          const options = {
            session: db.session,
            consumer,
            client: sqs.client,
            queueUrl,
            now: () => Date.now() + 3_600_000,
          };
          const results = await redriveParked(options, ids);
          const received = await drain(sqs.client, queueUrl);
          const found: string[] = [];
          const redriven = results.filter((result) => result.status === 'redriven');
          for (const result of results) {
            if (result.status === 'failed') found.push(`parked ${result.id}: the redrive failed: ${result.message}`);
            if (result.status === 'redriven' && !result.sent) found.push(`parked ${result.id}: redriven but not sent: ${result.message}`);
          }
          if (received.length !== redriven.length) found.push(`${redriven.length} redriven, ${received.length} on the queue`);
          // Delivered twice, as SQS may: the key the redrive carried makes the second a duplicate.
          const arn = `arn:aws:sqs:us-east-1:123456789012:fuzz-redrive${source.ordered ? '.fifo' : ''}`;
          const records = received.map((message, index) => lambdaRecordOf(message, `redriven-${caseId}-${index}`, arn));
          const handler = source.make(handlerOptions(repaired, plan, consumer, db)) as (
            event: unknown,
            context: unknown,
          ) => Promise<{ batchItemFailures: unknown[] }>;
          for (let round = 0; round < 2; round++) {
            const { batchItemFailures } = await handler({ Records: records }, lambdaContext());
            if (batchItemFailures.length > 0) found.push(`the redriven messages failed: ${JSON.stringify(batchItemFailures)}`);
          }
          // A message parked for its effect applies once the cause is fixed. One parked for want of a usable key
          // comes back with a key (the redrive gives it one): it applies, unless its body fails it too, and then
          // it parks again. One whose body is the cause parks again.
          const after = await effectCounts(consumer);
          const causeOf = new Map(observed.parked.map((row) => [row.token, row.errorClass]));
          const parkedAgain = new Set(
            (await db.query('SELECT sqs_message_id FROM inbox.parked_message WHERE consumer_name = $1', [consumer])).map((row) => row.sqs_message_id),
          );
          for (const record of records) {
            const token = record.messageAttributes['fuzz-token']?.stringValue ?? '';
            const times = after.get(token) ?? 0;
            const cause = causeOf.get(token);
            if (times > timesAllowed(token, observed.parked)) found.push(`${token} (parked as ${cause}): redriven, applied ${times} times`);
            if (cause === 'RejectedOrder' && times === 0) found.push(`${token}: parked for its effect, redriven after the fix, not applied`);
            if (times === 0 && cause !== 'RejectedOrder' && !parkedAgain.has(record.messageId))
              found.push(`${token} (parked as ${cause}): redriven, neither applied nor parked again`);
            if (times > 0 && cause !== 'RejectedOrder' && cause !== 'KeyError')
              found.push(`${token}: redriven with its cause (${cause}) standing, and applied`);
          }
          for (const result of redriven) {
            const again = await parkedMessages(handler).replay(result.id);
            if (again !== 'already-redriven') found.push(`parked ${result.id}: replayed after its redrive (${again})`);
            const [twice] = await redriveParked(options, [result.id]);
            if (twice?.status !== 'already-redriven') found.push(`parked ${result.id}: redriven twice (${twice?.status})`);
          }
          expect(found, account(material, observed)).toEqual([]);
        }),
        fuzzParameters(RUNS),
      );
    },
    fuzzTimeout(RUNS, 5_000),
  );
});
