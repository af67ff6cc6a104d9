import { PermanentError } from '../../../lambda/inbox/index.js';
import type { ConsumerOptions, InboxMessage, InboxTransaction } from '../../../lambda/inbox/index.js';
import type { InboxFixture } from '../../support/inbox.js';
import { TRANSPORT, recordingLogger, recordingMetrics } from '../../support/inbox.js';
import { applyEach } from '../../support/stream-sources.js';
import { expectations } from './expectations.js';
import type { CaseContext, Expected, Mode, Policy } from './expectations.js';
import { EXCLUDED } from './known-defects.js';
import type { DefectScene, LogLine } from './known-defects.js';
import { tokenOf } from './lambda-sources.js';
import type { Answer, Built, LambdaSource } from './lambda-sources.js';
import { producerKey } from './hostile-values.js';
import type { CasePlan, Effect, Entry } from './planned-case.js';

// One case, end to end: the planned generations built as their source delivers them, the known defects
// taken out, each generation delivered to a real handler on the real database and delivered again as its
// event source mapping would (a bounded number of times), and what the database and the answers show.

/** The effects table: one row per application of a message's effect. */
export const EFFECTS_DDL = 'CREATE TABLE public.fuzz_effects (seq bigserial PRIMARY KEY, consumer text NOT NULL, token text NOT NULL)';

/** A business rule's refusal, thrown by the effect: permanent. Its message holds nothing of the body. */
export class RejectedOrder extends PermanentError {
  override name = 'RejectedOrder';
}

/** A passing hiccup, thrown by the effect: the record is retried. */
export class TransientHiccup extends Error {
  override name = 'TransientHiccup';
}

/** One invocation and what it left in the log. */
export interface Delivery {
  readonly generation: number;
  readonly batch: readonly Built[];
  readonly answer: Answer;
  readonly lines: readonly LogLine[];
}

/** A parked row, as the judge reads it. */
export interface ParkedRow {
  readonly token: string | undefined;
  readonly id: string;
  readonly errorClass: string;
}

/** Numbers keys are made of: distinct for the whole run, as two cases may share one consumer. */
let serials = 0;

/** A case after its known defects were taken out: the records to deliver and what may become of each. */
export interface MaterialCase {
  readonly context: CaseContext;
  readonly generations: readonly (readonly Built[])[];
  readonly expected: ReadonlyMap<Built, Expected>;
  /** The known defects that took records out, by reference. */
  readonly excluded: readonly string[];
  /** Per token, what its effect does. */
  readonly effects: ReadonlyMap<string, Effect>;
}

/**
 * Builds the planned generations. A re-send is one only with producer keys (the same key, the same body, a
 * new record); without them it is a message of its own that happens to have the same body. A record reuses
 * the id of a record of the first generation, once.
 */
export function materialise(plan: CasePlan, source: LambdaSource, mode: Mode, policy: Policy, caseId: string, operated = false): MaterialCase {
  return materialiseFor(plan, source, mode, [policy], caseId, operated)[0]!;
}

/**
 * The same records for consumers of several policies, with the known defects of any of them taken out of
 * all. `operated`: an operator reads the parked rows back (list, replay, redrive).
 */
export function materialiseFor(
  plan: CasePlan,
  source: LambdaSource,
  mode: Mode,
  policies: readonly Policy[],
  caseId: string,
  operated = false,
): MaterialCase[] {
  const { producerKeys } = plan.options;
  // `fifo.onFailure` is an option of SQS FIFO queues only.
  const stopBatch = plan.options.stopBatch && source.service === 'sqs' && source.ordered;
  const contexts = policies.map((policy): CaseContext => ({ source, mode, policy, producerKeys, stopBatch }));
  const made: Built[] = [];
  const first: Built[] = [];
  const shared = new Set<Built>();
  const effects = new Map<string, Effect>();
  const make = (entry: Entry, inSecond: boolean): Built => {
    const copy = made.length;
    const of = entry.kind === 'fresh' || made.length === 0 ? undefined : made[entry.of % made.length]!;
    const request = { copy, caseId, entry: entry.kind };
    if (entry.kind === 'resend' && producerKeys) return source.build({ ...request, plan: of!.plan, token: of!.token, key: of!.producerKey });
    const token = `t${caseId}-${copy}`;
    const sharer = entry.kind === 'shares-id' && inSecond && of !== undefined && first.includes(of) && of.id !== undefined && !shared.has(of);
    const planned = entry.kind === 'resend' ? of!.plan : entry.plan;
    effects.set(token, planned.effect);
    const key = producerKeys ? producerKey(planned.key, `${caseId}-${copy}`, serials++) : undefined;
    if (!sharer) return source.build({ ...request, entry: 'fresh', plan: planned, token, key });
    shared.add(of);
    // Its own body, which no other record has: a different message under the same id, not a re-send.
    const payload = planned.payload.kind === 'object' ? { kind: 'object' as const, value: { sharer: token, v: planned.payload.value } } : planned.payload;
    return source.build({ ...request, plan: { ...planned, payload }, token, key, shared: of });
  };
  for (const entry of plan.first) made.push(make(entry, false));
  first.push(...made);
  const second = plan.second.map((entry) => {
    const record = make(entry, true);
    made.push(record);
    return record;
  });
  let generations = [source.order(first), source.order(second)];
  const excluded: string[] = [];
  // Takes out the records a known defect covers (with their message's other copies), until none is left.
  for (;;) {
    const ordered = generations.flat();
    const expected = contexts.map((context) => expectations(generations, context));
    const hit = ordered
      .flatMap((record, index) =>
        contexts.map((context, at) => ({
          record,
          defect: defectOf({ ...context, transport: TRANSPORT, operated }, record, expected[at]!, ordered.slice(0, index)),
        })),
      )
      .find((found) => found.defect !== undefined);
    if (!hit) return contexts.map((context, at) => ({ context, generations, expected: expected[at]!, excluded, effects }));
    excluded.push(hit.defect!.reference);
    generations = generations.map((generation) => generation.filter((record) => record.token !== hit.record.token));
  }
}

function defectOf(
  context: Omit<DefectScene, 'record' | 'expected' | 'earlier'>,
  record: Built,
  expected: ReadonlyMap<Built, Expected>,
  earlier: readonly Built[],
) {
  const scene: DefectScene = {
    ...context,
    record,
    expected: expected.get(record)!,
    earlier: earlier.map((before) => ({ record: before, expected: expected.get(before)! })),
  };
  return EXCLUDED.find((defect) => defect.record?.(scene));
}

/** The consumer options of a mode whose effect records each message's token, and fails as the message's plan says. */
export function modeOptions(mode: Mode, consumer: string, effects: ReadonlyMap<string, Effect>): Partial<ConsumerOptions<any, any>> {
  const failuresLeft = new Map([...effects].map(([token, effect]) => [token, typeof effect === 'object' ? effect.transient : 0]));
  /** What the effect does for this message now: run, refuse for good, or fail this once. */
  const verdict = (token: string): 'run' | 'refuse' | 'hiccup' => {
    if (effects.get(token) === 'permanent') return 'refuse';
    const left = failuresLeft.get(token) ?? 0;
    if (left === 0) return 'run';
    failuresLeft.set(token, left - 1);
    return 'hiccup';
  };
  const effect = async (tx: InboxTransaction, message: InboxMessage<unknown, unknown>) => {
    const token = tokenOf(message.record);
    // The row is written first, so a refusal after it proves that the claim and the effect roll back together.
    await tx.execute('INSERT INTO public.fuzz_effects (consumer, token) VALUES (:consumer, :token)', { consumer, token });
    const now = verdict(token);
    if (now === 'refuse') throw new RejectedOrder('the order was rejected');
    if (now === 'hiccup') throw new TransientHiccup('a passing hiccup');
  };
  const byMode: Record<Mode, Partial<ConsumerOptions<any, any>>> = {
    apply: { apply: effect },
    applyBatch: { applyBatch: applyEach(effect) },
    statement: {
      statement: {
        // A hiccup is a NULL token: PostgreSQL refuses it, so the statement fails as a database error would.
        sql: 'INSERT INTO public.fuzz_effects (consumer, token) SELECT :consumer, CASE WHEN :hiccup THEN NULL ELSE :token END FROM claimed',
        params: (message: InboxMessage<unknown, unknown>) => {
          const token = tokenOf(message.record);
          const now = verdict(token);
          if (now === 'refuse') throw new RejectedOrder('the order was rejected');
          return { consumer, token, hiccup: now === 'hiccup' };
        },
      },
    },
    statementBatch: {
      statementBatch: {
        // The statement never reads `body`: the tokens come by position, from the messages the set holds.
        sql: `INSERT INTO public.fuzz_effects (consumer, token)
              SELECT :consumer, CASE WHEN jsonb_exists(:hiccups::jsonb, (:tokens::jsonb)->>position) THEN NULL ELSE (:tokens::jsonb)->>position END
                FROM claimed ORDER BY position`,
        params: (messages: readonly InboxMessage<unknown, unknown>[]) => {
          const tokens = messages.map((message) => tokenOf(message.record));
          const verdicts = tokens.map(verdict);
          if (verdicts.includes('refuse')) throw new RejectedOrder('an order of the set was rejected');
          return { consumer, tokens, hiccups: tokens.filter((_, index) => verdicts[index] === 'hiccup') };
        },
      },
    },
  };
  return byMode[mode];
}

/** What a case left: every delivery, and the database's effect counts and parked rows. */
export interface Observed {
  readonly deliveries: readonly Delivery[];
  readonly effects: ReadonlyMap<string, number>;
  readonly parked: readonly ParkedRow[];
}

/** The handler options of a case: its consumer, its policy, the options it varies, and its mode's effect. */
export function handlerOptions(material: MaterialCase, plan: CasePlan, consumer: string, db: InboxFixture): ConsumerOptions<any, any> {
  const { source, mode, policy } = material.context;
  const key = source.keyOption(plan.options.producerKeys);
  return {
    consumer,
    database: db.target,
    logger: recordingLogger(),
    metrics: recordingMetrics(),
    onPermanentError: policy === 'park' ? 'park' : 'retry',
    duplicateFilter: plan.options.duplicateFilter,
    concurrency: plan.options.concurrency,
    ...(plan.options.ridingClaim && (mode === 'apply' || mode === 'applyBatch') ? { claim: 'with-first-statement' } : {}),
    ...(source.service === 'sqs' && material.context.stopBatch ? { fifo: { onFailure: 'stop-batch' } } : {}),
    ...(key !== undefined ? { key } : {}),
    ...modeOptions(mode, consumer, material.effects),
  } as ConsumerOptions<any, any>;
}

/** Delivers each generation until its source is done with it, or its deliveries run out. */
export async function deliver(db: InboxFixture, material: MaterialCase, plan: CasePlan, consumer: string): Promise<Observed> {
  const { source } = material.context;
  const options = handlerOptions(material, plan, consumer, db);
  const logger = options.logger as ReturnType<typeof recordingLogger>;
  const invoke = source.handler(options);
  const deliveries: Delivery[] = [];
  for (const [generation, records] of material.generations.entries()) {
    // Each failure takes one delivery to clear; a record that fails for good keeps failing to the end.
    const budget = 2 + records.reduce((sum, record) => sum + (typeof record.plan.effect === 'object' ? record.plan.effect.transient : 0), 0);
    let batch: readonly Built[] = records;
    for (let round = 0; round < budget && batch.length > 0; round++) {
      const seen = logger.lines.length;
      const answer = await invoke(batch);
      deliveries.push({ generation, batch, answer, lines: logger.lines.slice(seen) });
      batch = source.next(batch, answer);
    }
  }
  const effects = new Map<string, number>();
  for (const row of await db.query('SELECT token, count(*)::int AS n FROM public.fuzz_effects WHERE consumer = $1 GROUP BY token', [consumer])) {
    effects.set(row.token, row.n);
  }
  const parked = (await db.query('SELECT sqs_message_id, attributes, payload, error_class FROM inbox.parked_message WHERE consumer_name = $1', [consumer])).map(
    (row): ParkedRow => ({ token: source.tokenOfParked(row as never), id: row.sqs_message_id, errorClass: row.error_class }),
  );
  return { deliveries, effects, parked };
}
