/**
 * Every random choice a test makes comes from one seed, so that a failure reproduces: fast-check's
 * properties, the DSQL profile's conflict dice, the demo runs a test starts. The seed is
 * `INBOX_TEST_SEED`, else a fixed one; a failed test prints it (test/support/seed-report.ts), and
 * `INBOX_TEST_SEED=<n> npx vitest run ...` makes the same choices again.
 *
 * `INBOX_TEST_RUNS` scales how many cases each property runs (1, CI's, by default): the inner loop
 * (`npm run test:fast`) lowers it, a long look raises it. The adversarial suite has its own knobs on top
 * (test/inbox/adversarial/fuzz-settings.ts, `npm run fuzz`).
 */

/** The run's seed: `INBOX_TEST_SEED`, else a fixed one. */
export const TEST_SEED = wholeNumber('INBOX_TEST_SEED', 20_261_204);

/** The share of each property's runs this run makes: `INBOX_TEST_RUNS`, else 1 (CI's). */
export const RUNS_FACTOR = positiveNumber('INBOX_TEST_RUNS', 1);

/** How a failure says to make the same choices again. */
export const REPRODUCE = `INBOX_TEST_SEED=${TEST_SEED}${RUNS_FACTOR === 1 ? '' : ` INBOX_TEST_RUNS=${RUNS_FACTOR}`}`;

/** A property's run count: `ci` (CI's, and the default) times {@link RUNS_FACTOR}, at least 1. */
export function propertyRuns(ci: number): number {
  return Math.max(1, Math.round(ci * RUNS_FACTOR));
}

/** The parameters of `fc.assert` (or `fc.sample`) for a property that runs `ci` times in CI. */
export function propertyParameters(ci: number): { seed: number; numRuns: number } {
  return { seed: TEST_SEED, numRuns: propertyRuns(ci) };
}

/**
 * Dice in [0, 1) from the run's seed and a label (mulberry32 over the seed mixed with the label's hash):
 * each label its own sequence, so that one test's draws do not move another's.
 */
export function seededRandom(label: string): () => number {
  let state = TEST_SEED >>> 0;
  for (let index = 0; index < label.length; index++) state = Math.imul(state ^ label.charCodeAt(index), 0x9e3779b1) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), state | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** `length` bytes from the run's seed and a label (see {@link seededRandom}): test data that reproduces. */
export function seededBytes(label: string, length: number): Buffer {
  const dice = seededRandom(label);
  const bytes = Buffer.allocUnsafe(length);
  for (let index = 0; index < length; index++) bytes[index] = Math.floor(dice() * 256);
  return bytes;
}

let uniqueNames = 0;

/**
 * A suffix no other process on this machine makes now (its process id, the time and a count), for names that
 * only have to differ between the test files sharing one PostgreSQL server, such as roles, which are the
 * server's and not a database's. Not dice: nothing a test checks depends on which suffix it gets, and it is
 * lower-case letters and digits, 11 to 15, so that a name fits PostgreSQL's 63 bytes.
 */
export function uniqueSuffix(): string {
  const time = (Date.now() % 36 ** 5).toString(36).padStart(5, '0');
  // Both fixed-width (a Linux pid is below 36^5), so that no two processes' suffixes can run into each other.
  return `${process.pid.toString(36).padStart(5, '0')}${time}${(uniqueNames++).toString(36)}`;
}

function wholeNumber(name: string, fallback: number): number {
  const given = process.env[name];
  if (given === undefined || given === '') return fallback;
  const value = Number(given);
  if (!Number.isSafeInteger(value)) throw new Error(`${name}=${given}: give a whole number (the seed a failed run printed).`);
  return value;
}

function positiveNumber(name: string, fallback: number): number {
  const given = process.env[name];
  if (given === undefined || given === '') return fallback;
  const value = Number(given);
  if (!(value > 0)) throw new Error(`${name}=${given}: give the share of each property's runs to make, above 0 (0.2 for a fifth, 1 for CI's).`);
  return value;
}
