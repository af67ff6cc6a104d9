import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EQUIVALENT_MUTANTS, locate } from '../../tools/mutate/equivalent-mutants.mjs';

/** Stryker 10's mutators, by the names its reports and `// Stryker disable` comments use. */
const MUTATORS = new Set([
  'ArithmeticOperator',
  'ArrayDeclaration',
  'ArrowFunction',
  'AssignmentOperator',
  'BlockStatement',
  'BooleanLiteral',
  'CallExpression',
  'ConditionalExpression',
  'EqualityOperator',
  'LogicalOperator',
  'MethodExpression',
  'ObjectLiteral',
  'OptionalChaining',
  'Regex',
  'StringLiteral',
  'UnaryOperator',
  'UpdateOperator',
]);

/**
 * The `// Stryker disable` comments the code keeps, by file and mutator. The list's ignorer marks a whole syntax
 * node; each of these equivalent mutants shares its node with mutants of another mutator that the tests kill, so
 * only a comment, which names the mutator, can ignore it alone.
 */
const KEPT_COMMENTS = [
  // `records.some(...)`: the call also holds the predicate's ArrowFunction, ConditionalExpression and EqualityOperator mutants.
  'lambda/inbox/handler/consumer.ts MethodExpression',
  // `options.logger && options.metrics`: also its LogicalOperator mutant.
  'lambda/inbox/handler/consumer.ts ConditionalExpression',
  // `!claimed.some(Boolean)`: also its BooleanLiteral and MethodExpression mutants.
  'lambda/inbox/modes/batch-mode-runner.ts ConditionalExpression',
  // `status !== undefined && status >= 400 && status < 500`: also its EqualityOperator mutants.
  'lambda/inbox/transport/data-api/failures.ts ConditionalExpression',
  // `column?.label || column?.name`: also its ConditionalExpression mutant.
  'lambda/inbox/transport/data-api/results.ts LogicalOperator',
  // `field.longValue !== undefined`: also its EqualityOperator mutant.
  'lambda/inbox/transport/data-api/results.ts ConditionalExpression',
];

describe('the equivalent mutants of `npm run mutate` (tools/mutate/equivalent-mutants.mjs)', () => {
  it('finds the code of every entry, once, where the entry says', () => {
    const stale = EQUIVALENT_MUTANTS.flatMap((entry) => {
      if (!existsSync(entry.file)) return [`${entry.file}: the file is gone`];
      const place = locate(readFileSync(entry.file, 'utf8'), entry);
      return 'problem' in place ? [`${entry.file} (${entry.code}): ${place.problem}; update the entry to the code's new text, or drop it`] : [];
    });
    expect(stale).toEqual([]);
  });

  it('names Stryker mutators and a reason for every entry', () => {
    const unknown = EQUIVALENT_MUTANTS.flatMap((entry) => entry.mutators.filter((name) => !MUTATORS.has(name)).map((name) => `${entry.file}: ${name}`));
    expect(unknown).toEqual([]);
    expect(EQUIVALENT_MUTANTS.filter((entry) => entry.mutators.length === 0 || entry.reason.trim().length < 10)).toEqual([]);
  });

  it('keeps equivalent mutants out of the code, but for those only a comment can single out', () => {
    const lines = execFileSync('git', ['grep', '--untracked', '-n', 'Stryker disable', '--', 'lambda', 'lib', 'local'], { encoding: 'utf8' })
      .trim()
      .split('\n');
    const comments = lines.flatMap((line) => {
      const [file, , text] = line.split(':');
      const mutators = /Stryker disable(?: next-line)? ([A-Za-z, ]+)/.exec(text ?? '')?.[1] ?? '';
      return mutators.split(',').map((mutator) => `${file} ${mutator.trim()}`);
    });
    // A new equivalent mutant is an entry of tools/mutate/equivalent-mutants.mjs, not a comment.
    expect(comments.sort()).toEqual([...KEPT_COMMENTS].sort());
  });

  it('has no test of the core that loads the runtime again (vi.resetModules), which would hide its module-level mutants', () => {
    // The mutation run ignores a mutant that only module loading reaches (ignoreStatic). A test that reloads the
    // runtime reaches every such mutant itself, so Stryker runs that one test alone against each of them, and
    // reports survivors a full run of the tests would kill (42 on 3 Dec 2026). Import a fresh copy of one module
    // with a query instead (test/inbox/cold-start.test.ts).
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'test/inbox', 'test/support'], { encoding: 'utf8' })
      .split('\n')
      .filter((file) => file.endsWith('.ts') && existsSync(file));
    expect(files.length).toBeGreaterThan(20);
    expect(files.filter((file) => /\bvi\.(resetModules|doMock)\(/.test(readFileSync(file, 'utf8')))).toEqual([]);
  });
});
