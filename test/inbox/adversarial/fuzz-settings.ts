// How long the adversarial suite runs. `npm test` runs each property a few times with a fixed seed, so a
// failure there reproduces as it is; `npm run fuzz` (scripts/fuzz.mjs) runs them many times with a random
// seed it prints, and `npm run fuzz -- --seed <n>` runs that seed again.

/** The seed every property of the suite starts from: INBOX_FUZZ_SEED, else a fixed one. */
export const FUZZ_SEED = process.env.INBOX_FUZZ_SEED === undefined ? 20_261_204 : Number(process.env.INBOX_FUZZ_SEED);

/** How many times each property runs: INBOX_FUZZ_RUNS, else what fits `npm test` (`quick`). */
export function fuzzRuns(quick: number): number {
  const given = process.env.INBOX_FUZZ_RUNS;
  return given === undefined ? quick : Number(given);
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
