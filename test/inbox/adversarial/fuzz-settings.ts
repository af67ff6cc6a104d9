import { propertyRuns, TEST_SEED } from '../../support/seed.js';

// How long the adversarial suite runs. `npm test` runs each property a few times from the run's seed
// (test/support/seed.ts: a fixed one unless INBOX_TEST_SEED says), so a failure there reproduces;
// `npm run fuzz` (scripts/fuzz.mjs) runs them many times with a random seed it prints, and
// `npm run fuzz -- --seed <n>` runs that seed again.

/** The seed every property of the suite starts from: INBOX_FUZZ_SEED, else the run's. */
export const FUZZ_SEED = process.env.INBOX_FUZZ_SEED === undefined ? TEST_SEED : Number(process.env.INBOX_FUZZ_SEED);

/** How many times each property runs: INBOX_FUZZ_RUNS, else what fits `npm test` (`quick`, scaled by INBOX_TEST_RUNS). */
export function fuzzRuns(quick: number): number {
  const given = process.env.INBOX_FUZZ_RUNS;
  return given === undefined ? propertyRuns(quick) : Number(given);
}

/** The parameters of `fc.assert` for a property of the suite. */
export function fuzzParameters(quick: number) {
  return { seed: FUZZ_SEED, numRuns: fuzzRuns(quick) };
}

/**
 * A property's time limit: a minute in `npm test` (a few runs of real deliveries, on a machine that may be busy),
 * and in proportion to its runs in a long fuzz run.
 */
export function fuzzTimeout(quick: number, perRunMs: number): number {
  return Math.max(60_000, fuzzRuns(quick) * perRunMs);
}
