import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATA_API_ONLY_FILES, DATA_API_ONLY_TESTS, SAME_ON_EVERY_TRANSPORT_FILES, TRANSPORT_FREE_FILES } from '../../support/data-api-only.js';
import { ON_EVERY_NODE } from '../../support/node-runtime.js';
import { DSQL_CONFLICT_FILES, NOT_UNDER_CONFLICTS } from '../../support/dsql-conflicts.js';

// The wire project runs every test/inbox file but those test/support/data-api-only.ts lists with a reason.
// These checks keep the lists true, so that nothing is left out of the wire run silently.

const root = join(import.meta.dirname, '../../..');
const testFiles = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith('.test.ts') ? [join(dir, entry.name)] : [],
  );
const source = (file: string) => readFileSync(join(root, file), 'utf8');
/** A file reaches the transport the suites switch on when it builds its database through the fixture. */
const usesTheSwitch = (file: string) => /\binboxFixture\(/.test(source(file));
/** A file that states what a transport answers, or asks which one it runs on, proves something on each. */
const tellsTransportsApart = (file: string) => /\b(?:onTransport|TRANSPORT|CURRENT|UNDER_CONFLICTS|withConflicts|dataApiOnly)\b/.test(source(file));

describe('the wire run leaves out only what is listed, with its reason', () => {
  it('names only files that exist, each with a reason', () => {
    for (const [file, why] of Object.entries({ ...DATA_API_ONLY_FILES, ...TRANSPORT_FREE_FILES, ...SAME_ON_EVERY_TRANSPORT_FILES, ...DATA_API_ONLY_TESTS })) {
      expect(existsSync(join(root, file)), file).toBe(true);
      expect(why, file).toBeTruthy();
    }
  });

  it('leaves out no file that goes through the transport switch but a Data API-only one', () => {
    for (const file of Object.keys(TRANSPORT_FREE_FILES)) expect(usesTheSwitch(file), `${file} uses inboxFixture: it reaches a transport`).toBe(false);
    const onTheWire = testFiles('test/inbox').filter(
      (file) => !(file in DATA_API_ONLY_FILES) && !(file in TRANSPORT_FREE_FILES) && !(file in SAME_ON_EVERY_TRANSPORT_FILES),
    );
    expect(
      onTheWire.filter((file) => !usesTheSwitch(file)),
      'run on the wire, yet never use inboxFixture: list them in TRANSPORT_FREE_FILES',
    ).toEqual([]);
  });

  it('leaves out as the same on every transport only files that reach one and never tell the transports apart', () => {
    for (const file of Object.keys(SAME_ON_EVERY_TRANSPORT_FILES)) {
      expect(usesTheSwitch(file), `${file} never uses inboxFixture: list it in TRANSPORT_FREE_FILES`).toBe(true);
      expect(tellsTransportsApart(file), `${file} states a transport's own answer: it proves something on each, so run it on the wire`).toBe(false);
    }
  });

  it('lists each Data API-only test where it is marked dataApiOnly, and marks none that is not listed', () => {
    for (const [file, names] of Object.entries(DATA_API_ONLY_TESTS)) {
      const calls = [...source(file).matchAll(/dataApiOnly\(\s*'([^']+)',\s*'([^']+)'/g)].map((match) => match[2]);
      for (const name of Object.keys(names)) expect(calls, `${file} > ${name}`).toContain(name);
    }
    const marked = testFiles('test/inbox').flatMap((file) => [...source(file).matchAll(/dataApiOnly\(\s*'([^']+)'/g)].map((match) => [file, match[1]]));
    for (const [file, named] of marked) expect(named, `${file} marks a test of another file`).toBe(file);
  });
});

describe('the dsql-conflicts run holds the core suites, and leaves out only what is listed, with its reason', () => {
  it('names files that exist and go through the transport switch, each with what it proves', () => {
    for (const [file, what] of Object.entries(DSQL_CONFLICT_FILES)) {
      expect(existsSync(join(root, file)), file).toBe(true);
      expect(what, file).toBeTruthy();
      expect(usesTheSwitch(file), `${file} never uses inboxFixture: it would not run on the DSQL profile`).toBe(true);
      expect(
        file in DATA_API_ONLY_FILES || file in TRANSPORT_FREE_FILES || file in SAME_ON_EVERY_TRANSPORT_FILES,
        `${file} is left out of the wire projects`,
      ).toBe(false);
    }
  });

  it('lists each test left out under conflicts where it is marked notUnderConflicts, in a file the run holds', () => {
    for (const [file, names] of Object.entries(NOT_UNDER_CONFLICTS)) {
      expect(file in DSQL_CONFLICT_FILES, `${file} is not run under conflicts at all`).toBe(true);
      const calls = [...source(file).matchAll(/notUnderConflicts\(\s*'([^']+)',\s*'([^']+)'/g)].map((match) => match[2]);
      for (const [name, why] of Object.entries(names)) {
        expect(calls, `${file} > ${name}`).toContain(name);
        expect(why, `${file} > ${name}`).toBeTruthy();
      }
    }
    const marked = testFiles('test/inbox').flatMap((file) => [...source(file).matchAll(/notUnderConflicts\(\s*'([^']+)'/g)].map((match) => [file, match[1]]));
    for (const [file, named] of marked) expect(named, `${file} marks a test of another file`).toBe(file);
  });
});

describe('the Node.js-version runs hold what the Node.js version can change', () => {
  it('names only test files that exist, each with what of Node.js it reaches', () => {
    for (const [file, why] of Object.entries(ON_EVERY_NODE)) {
      expect(existsSync(join(root, file)) && file.endsWith('.test.ts'), file).toBe(true);
      expect(why, file).toBeTruthy();
    }
  });
});
