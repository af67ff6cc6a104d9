import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { TRANSPORT, inboxFixture } from '../../support/inbox.js';
import type { InboxFixture } from '../../support/inbox.js';
import { EFFECTS_DDL, deliver, materialise } from './consumer-run.js';
import type { Mode, Policy } from './expectations.js';
import { fuzzParameters, fuzzTimeout } from './fuzz-settings.js';
import { account, violations } from './invariant.js';
import { LAMBDA_SOURCES } from './lambda-sources.js';
import { casePlan } from './planned-case.js';

// Every source, every mode, with `retry` and `park`, on the transport of the vitest project: hostile
// records delivered to the real handler on the real database, and delivered again as the event source
// mapping would; then the invariant, per message, from the database and the answers (invariant.ts).

let db: InboxFixture;
beforeAll(async () => {
  db = await inboxFixture('adversarial_records');
  await db.query(EFFECTS_DDL);
});
afterAll(async () => db.close());

const MODES: readonly Mode[] = ['apply', 'statement', 'applyBatch', 'statementBatch'];
const POLICIES: readonly Policy[] = ['retry', 'park'];
const RUNS = 4;

let cases = 0;

describe.each(LAMBDA_SOURCES)('$name: hostile records (property-based)', (source) => {
  it.each(MODES)(
    `%s on ${TRANSPORT}: each message is applied once, parked with its cause, or failed as permanent; none is lost; no body is logged`,
    async (mode) => {
      await fc.assert(
        fc.asyncProperty(casePlan(source.rules, source.healthyPayload), async (plan) => {
          for (const policy of POLICIES) {
            const caseId = `${cases++}`;
            const material = materialise(plan, source, mode, policy, caseId);
            const observed = await deliver(db, material, plan, `fz-${caseId}-${policy}`);
            const found = violations(material, observed);
            if (found.length > 0) throw new Error(`${found.join('\n')}\n\n${account(material, observed)}`);
          }
        }),
        fuzzParameters(RUNS),
      );
    },
    fuzzTimeout(RUNS, 4_000),
  );
});
