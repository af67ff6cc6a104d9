// `npm run mutate`: StrykerJS on a snapshot of the working tree, not on the working tree itself.
//
// Why a snapshot: Stryker copies the project into a sandbox for its test runners, but its checkers run in
// the project directory. The TypeScript checker keeps one incremental (watch) program over every file its
// tsconfig includes, reads a file from disk the first time the program asks for it, and asks the disk
// directly whether a file exists. A run lasts an hour; when anything under lambda/, local/ or test/ is
// edited, added or moved meanwhile, the checker's program sees half of it. Seen here: a refactor that moved
// a module made TypeScript 5.9 fail an internal assertion ("Debug Failure. False expression.") and end the
// run at ~14%; an import that was broken for a few seconds in local/streams/ made 870 mutants of every file
// that it reaches report CompileError (left out of the score, so the score looked fine while most of the
// files went untested). On a snapshot, checker and test runners see the same files from start to end.
//
// Usage (from the repository root, on Node 22): node tools/mutate/run.mjs [stryker options...]
// The reports (reports/mutation/, and reports/stryker-incremental.json with --incremental) are copied back.
import { spawnSync, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const parent = join(repo, '.stryker-tmp');
mkdirSync(parent, { recursive: true });
const snapshot = mkdtempSync(join(parent, 'snapshot-'));

const cleanUp = () => rmSync(snapshot, { recursive: true, force: true });
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    cleanUp();
    process.exit(130);
  });
}

try {
  // Tracked and untracked files (work in progress is what gets tested), without what .gitignore leaves out.
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repo,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter((file) => file !== '' && existsSync(join(repo, file)) && statSync(join(repo, file)).isFile());
  for (const file of files) {
    mkdirSync(dirname(join(snapshot, file)), { recursive: true });
    cpSync(join(repo, file), join(snapshot, file));
  }
  // The built package (dist/) is copied too: the ORM recipes under test import `sqs-inbox` by name, which
  // resolves through package.json's exports to dist/ (`npm run mutate` builds it first).
  if (existsSync(join(repo, 'dist'))) cpSync(join(repo, 'dist'), join(snapshot, 'dist'), { recursive: true });
  // Dependencies are not copied: they do not change during a run (Stryker's own sandbox links them too).
  for (const modules of ['node_modules', 'tools/mutate/node_modules', 'tools/node22/node_modules']) {
    if (existsSync(join(repo, modules))) symlinkSync(join(repo, modules), join(snapshot, modules), 'dir');
  }
  const incremental = 'reports/stryker-incremental.json';
  if (existsSync(join(repo, incremental))) {
    mkdirSync(join(snapshot, 'reports'), { recursive: true });
    writeFileSync(join(snapshot, incremental), JSON.stringify(withoutSurvivors(JSON.parse(readFileSync(join(repo, incremental), 'utf8')))));
  }
  console.log(`mutate: ${files.length} files copied to ${snapshot}`);

  // The list of equivalent mutants first: an entry that lost its code, or would hide a mutant the tests kill,
  // stops the run here, in seconds, not after an hour.
  const check = spawnSync(process.execPath, [join(snapshot, 'tools/mutate/check-equivalents.mjs')], { cwd: snapshot, stdio: 'inherit' });
  if (check.status !== 0) {
    process.exitCode = 1;
  } else {
    const stryker = join(repo, 'tools/mutate/node_modules/@stryker-mutator/core/bin/stryker.js');
    const run = spawnSync(process.execPath, [stryker, 'run', 'tools/mutate/stryker.config.mjs', ...process.argv.slice(2)], { cwd: snapshot, stdio: 'inherit' });
    if (existsSync(join(snapshot, 'reports'))) cpSync(join(snapshot, 'reports'), join(repo, 'reports'), { recursive: true });
    process.exitCode = run.status ?? 1;
  }
} finally {
  cleanUp();
}

/**
 * The incremental report without its surviving and uncovered mutants, so --incremental tests them again.
 * Stryker reuses a result while the mutated file and the tests that covered it are unchanged, but it does
 * not see the code those tests drive: a survivor of 30 Nov (an ISO timestamp sent with the TIMESTAMP hint)
 * stayed "Survived" after the local Data API learnt to refuse it. A reused kill goes stale only when the
 * code under its test gets more lenient; a reused survivor is the result worth checking again, and there
 * are few of them. A full run (no --incremental) checks everything.
 */
function withoutSurvivors(report) {
  for (const file of Object.values(report.files)) {
    file.mutants = file.mutants.filter((mutant) => mutant.status !== 'Survived' && mutant.status !== 'NoCoverage');
  }
  return report;
}
