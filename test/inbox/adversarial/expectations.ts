import type { Built, LambdaSource } from './lambda-sources.js';

// The oracle: what may become of each record, from what it carries and the documented rules (the key is
// chosen first; a record without its body fails for that; then the body is parsed; a claimed key with another
// body is a collision; then the effect runs). It never asks the handler.

/** The four ways to write a consumer. */
export type Mode = 'apply' | 'statement' | 'applyBatch' | 'statementBatch';

/** What the consumer does with a permanent failure. */
export type Policy = 'retry' | 'park';

/**
 * What may become of a record: applied (when `canApply`), or refused for good with one of `causes` (the
 * PermanentError subclass's name). Both when the rules allow either (bytes that are not UTF-8 may be
 * decoded, or refused). `blocked`: an earlier record of its lane fails for good under `retry`, so the
 * mapping holds this one back: it may end neither applied nor refused, but must never be acknowledged.
 */
export interface Expected {
  readonly canApply: boolean;
  readonly causes: ReadonlySet<string>;
  readonly blocked: 'no' | 'maybe' | 'yes';
}

/** The case around the records: what the oracle needs besides the records. */
export interface CaseContext {
  readonly source: LambdaSource;
  readonly mode: Mode;
  readonly policy: Policy;
  readonly producerKeys: boolean;
  readonly stopBatch: boolean;
}

/**
 * The expectation of every record of the generations, in delivery order. A record's key claimed by an
 * earlier message with another body makes it a collision; a claim is made by a record applied, or parked
 * (a record parked with a key claims it in the same statement).
 */
export function expectations(generations: readonly (readonly Built[])[], context: CaseContext): Map<Built, Expected> {
  const result = new Map<Built, Expected>();
  /** Per key, the message that claimed it, and whether it surely did. */
  const claims = new Map<string, { token: string; certain: boolean }>();
  for (const generation of generations) {
    // The claims of a generation are made in an order its lanes decide: the next generation meets them.
    const made = new Map<string, { token: string; certain: boolean }>();
    const blockedLanes = new Map<string, 'maybe' | 'yes'>();
    for (const record of generation) {
      const lane = context.stopBatch ? 'batch' : record.lane;
      const blocked: Expected['blocked'] = context.source.ordered && context.policy === 'retry' ? (blockedLanes.get(lane) ?? 'no') : 'no';
      const key = context.source.keyOf(record, context.producerKeys);
      const own = alone(record, context);
      const claim = 'ok' in key ? claims.get(key.ok) : undefined;
      const clash = claim === undefined || claim.token === record.token ? undefined : collided(own, context);
      const verdict = clash === undefined ? own : claim!.certain ? clash : either(own, clash);
      const expected: Expected = { ...verdict, blocked };
      result.set(record, expected);
      if ('ok' in key && !made.has(key.ok) && claimsKey(expected, context.policy, 'maybe')) {
        made.set(key.ok, { token: record.token, certain: claimsKey(expected, context.policy, 'surely') });
      }
      if (!expected.canApply) blockedLanes.set(lane, 'yes');
      else if (expected.causes.size > 0 && blockedLanes.get(lane) !== 'yes') blockedLanes.set(lane, 'maybe');
    }
    for (const [key, claim] of made) if (!claims.has(key)) claims.set(key, claim);
  }
  return result;
}

/**
 * A different message under a claimed key. The claim comes before the effect, so a record that parses is
 * refused as a collision. One refused before its claim (its body, its parse) is refused for that under
 * `retry`; under `park`, its parking claims, finds the key taken, and parks it as the collision. In the
 * statement modes the statement's parameters are computed before the statement claims: their refusal comes
 * first, unless the duplicate filter found the collision before anything ran.
 */
function collided(own: Verdict, { policy, mode }: CaseContext): Verdict {
  const statementModes = mode === 'statement' || mode === 'statementBatch';
  const causes = [...own.causes].flatMap((cause) => {
    if (policy === 'park') return ['KeyCollisionError'];
    if (cause === 'RejectedOrder') return statementModes ? [cause, 'KeyCollisionError'] : ['KeyCollisionError'];
    return [cause];
  });
  return { canApply: false, causes: new Set([...causes, ...(own.canApply ? ['KeyCollisionError'] : [])]) };
}

const either = (a: Verdict, b: Verdict): Verdict => ({ canApply: a.canApply || b.canApply, causes: new Set([...a.causes, ...b.causes]) });

/** Whether the record claims its key: applied, or parked with the claim (a collision is parked without it). */
function claimsKey(expected: Expected, policy: Policy, how: 'surely' | 'maybe'): boolean {
  const parksWithClaim = policy === 'park' && [...expected.causes].some((cause) => cause !== 'KeyCollisionError');
  if (how === 'maybe') return expected.blocked !== 'yes' && (expected.canApply || parksWithClaim);
  const onlyParks = policy === 'park' && !expected.canApply && !expected.causes.has('KeyCollisionError');
  return expected.blocked === 'no' && ((expected.canApply && expected.causes.size === 0) || onlyParks);
}

type Verdict = Omit<Expected, 'blocked'>;

/** A record's expectation by itself: its key, its body, its parse, its effect. */
function alone(record: Built, { source, producerKeys }: CaseContext): Verdict {
  const key = source.keyOf(record, producerKeys);
  const bodyError = source.bodyError(record);
  // A record without its body fails for that, even when a key read from the body failed first.
  if (bodyError) return refused(bodyError);
  if ('error' in key) return refused(key.error);
  const parses = source.parses(record);
  if (parses === 'no') return refused('ParseError');
  const effect = record.plan.effect === 'permanent' ? 'RejectedOrder' : undefined;
  if (parses === 'either') return { canApply: effect === undefined, causes: new Set(['ParseError', ...(effect ? [effect] : [])]) };
  return effect ? refused(effect) : { canApply: true, causes: new Set() };
}

const refused = (cause: string): Verdict => ({ canApply: false, causes: new Set([cause]) });
