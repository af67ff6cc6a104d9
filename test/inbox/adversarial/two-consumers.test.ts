import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TRANSPORT, inboxFixture } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { EFFECTS_DDL, deliver, materialiseFor } from './consumer-run.js';
import type { MaterialCase } from './consumer-run.js';
import type { Mode, Policy } from './expectations.js';
import { fuzzParameters, fuzzTimeout } from './fuzz-settings.js';
import { account, violations } from './invariant.js';
import { LAMBDA_SOURCES } from './lambda-sources.js';
import { casePlan } from './planned-case.js';

// Two consumers of one database take the same hostile records at the same time (two subscriptions of one
// topic, two functions on one queue's fan-out): each holds the invariant on its own, as if the other were
// not there. Their claims, parked rows and keys never meet.

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('adversarial_two_consumers');
  await db.query(EFFECTS_DDL);
});
afterAll(async () => db.close());

let cases = 0;
const RUNS = 6;

it(
  `on ${TRANSPORT}: two consumers of the same records each apply every message once, or park or fail it, as if alone`,
  async () => {
    const source = fc.constantFrom(...LAMBDA_SOURCES);
    const plan = source.chain((chosen) => fc.tuple(fc.constant(chosen), casePlan(chosen.rules, chosen.healthyPayload)));
    await fc.assert(
      fc.asyncProperty(
        plan,
        fc.constantFrom<Mode>('apply', 'statement', 'applyBatch', 'statementBatch'),
        fc.constantFrom<Policy>('retry', 'park'),
        fc.constantFrom<Policy>('retry', 'park'),
        async ([chosen, planned], mode, first, second) => {
          const caseId = `${cases++}`;
          // The same records, judged per consumer with its own policy.
          const [material, other] = materialiseFor(planned, chosen, mode, [first, second], caseId) as [MaterialCase, MaterialCase];
          const [observedA, observedB] = await Promise.all([
            deliver(db, material, planned, `fz-two-${caseId}-a`),
            deliver(db, other, planned, `fz-two-${caseId}-b`),
          ]);
          const found = [
            ...violations(material, observedA).map((text) => `consumer a: ${text}`),
            ...violations(other, observedB).map((text) => `consumer b: ${text}`),
          ];
          expect(found, `${account(material, observedA)}\n---\n${account(other, observedB)}`).toEqual([]);
        },
      ),
      fuzzParameters(RUNS),
    );
  },
  fuzzTimeout(RUNS, 4_000),
);
