import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkDsqlSql, DSQL_SQL_RULES } from '../../lambda/inbox/transport/dsql/supported-sql.js';
import { propertyParameters } from '../support/seed.js';

/**
 * DSQL's rules read SQL as PostgreSQL does, through the shared scanner: a keyword inside a string, a quoted
 * identifier or a comment never breaks a rule, and a construct breaks its rule whatever its case, its white
 * space, its comments and the quoting around it. `{name}` marks where an identifier goes.
 */
const CONSTRUCTS: Readonly<Record<string, readonly string[]>> = {
  truncate: ['TRUNCATE', '{name}'],
  trigger: ['CREATE', 'TRIGGER', '{name}', 'AFTER', 'INSERT', 'ON', '{name}', 'FOR', 'EACH', 'ROW', 'EXECUTE', 'FUNCTION', 'f()'],
  'temporary-table': ['CREATE', 'TEMPORARY', 'TABLE', '{name}', '(id int)'],
  'procedural-language': ['DO', '$$ BEGIN NULL; END $$'],
  savepoint: ['SAVEPOINT', '{name}'],
  vacuum: ['VACUUM', '{name}'],
  'alter-system': ['ALTER', 'SYSTEM', 'SET', 'work_mem', '=', '1'],
  'create-database': ['CREATE', 'DATABASE', '{name}'],
  'synchronous-index': ['CREATE', 'UNIQUE', 'INDEX', '{name}', 'ON', '{name}', '(id)'],
  serial: ['CREATE', 'TABLE', '{name}', '(', '{name}', 'BIGSERIAL', 'PRIMARY', 'KEY', ')'],
  'sequence-cache': ['CREATE', 'SEQUENCE', '{name}', 'CACHE', '100'],
  partition: ['CREATE', 'TABLE', '{name}', '(id int)', 'PARTITION', 'BY', 'RANGE', '(id)'],
  'foreign-key-validated': ['ALTER', 'TABLE', '{name}', 'ADD', 'FOREIGN', 'KEY', '(id)', 'REFERENCES', '{name}'],
  'exclusion-constraint': ['CREATE', 'TABLE', '{name}', '(during tstzrange,', 'EXCLUDE', 'USING', 'gist', '(during WITH &&))'],
  'jsonb-column': ['CREATE', 'TABLE', '{name}', '(', '{name}', 'JSONB', ')'],
  'row-level-security': ['ALTER', 'TABLE', '{name}', 'ENABLE', 'ROW', 'LEVEL', 'SECURITY'],
  'skip-locked': ['SELECT', '1', 'FROM', '{name}', 'FOR', 'UPDATE', 'SKIP', 'LOCKED'],
  'advisory-lock': ['SELECT', 'pg_advisory_xact_lock', '(1)'],
  ctid: ['SELECT', 'ctid', 'FROM', '{name}'],
  'data-modifying-cte': ['WITH', '{name}', 'AS', '(', 'INSERT', 'INTO', '{name}', 'VALUES', '(1)', 'RETURNING', 'id', ')', 'SELECT', '1'],
  'isolation-level': ['BEGIN', 'ISOLATION', 'LEVEL', 'SERIALIZABLE'],
};

/** White space and comments PostgreSQL reads as a separator between two tokens. */
const separator = fc.constantFrom(' ', '  ', '\t', '\n', '\r\n', '\f', '\v', ' /* TRUNCATE t; */ ', '/* a /* nested; */ CTID */', ' -- TRUNCATE t;\n');
/** Identifiers, quoted ones with what an ad-hoc lexer would misread: a `;`, a `--`, a doubled quote, a keyword. */
const identifier = fc.constantFrom('t', 'orders', 'public.orders', '"T"', '"a;b"', '"x -- y"', '"say ""hi"""', '"BIGSERIAL"', '"/*"');
/** Statements before the construct whose quoting an ad-hoc lexer gets wrong (a backslash ends no standard string). */
const before = fc.constantFrom('', "SELECT 'a\\'; ", "SELECT E'\\\\'; ", 'SELECT $q$ ; $q$; ', 'SELECT "semi;colon"; ', "SELECT 'it''s'; ");

/** Each letter in upper or lower case, as `flips` says. */
const cased = (text: string, flips: readonly boolean[]) => [...text].map((c, i) => (flips[i % flips.length] ? c.toLowerCase() : c.toUpperCase())).join('');

describe('DSQL rules read SQL through the shared scanner (fast-check, seeded)', () => {
  it('has a construct for every rule', () => {
    expect(Object.keys(CONSTRUCTS).sort()).toEqual(DSQL_SQL_RULES.map((rule) => rule.id).sort());
  });

  it('flags every listed construct whatever its case, spacing, comments, quoting and the statements before it', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(CONSTRUCTS)),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        fc.array(separator, { minLength: 20, maxLength: 20 }),
        fc.array(identifier, { minLength: 4, maxLength: 4 }),
        before,
        (id, flips, separators, names, prefix) => {
          let n = 0;
          // Only words change case: a quoted identifier's case is its own, and it is not what is checked.
          const words = CONSTRUCTS[id]!.map((token) => (token === '{name}' ? names[n++ % names.length]! : cased(token, flips)));
          const sql = prefix + words.map((word, i) => (i === 0 ? word : separators[i % separators.length]! + word)).join('');
          expect(
            checkDsqlSql(sql, true).map((violation) => violation.rule.id),
            sql,
          ).toContain(id);
        },
      ),
      propertyParameters(200),
    );
  });

  it('never flags a construct inside a string, an E string, a dollar-quoted body, a quoted identifier or a comment', () => {
    const wrappers: readonly ((text: string) => string)[] = [
      (text) => `SELECT '${text.replace(/'/g, "''")}' AS x`,
      (text) => `SELECT E'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}' AS x`,
      (text) => `SELECT $body$${text}$body$ AS x`,
      (text) => `SELECT "${text.replace(/"/g, '""')}" FROM t`,
      (text) => `SELECT /* ${text.replace(/\/\*|\*\//g, '')} */ 1`,
      (text) => `SELECT 1 -- ${text.replace(/[\r\n]/g, ' ')}\n`,
      (text) => `COMMENT ON TABLE t IS '${text.replace(/'/g, "''")}'`,
    ];
    fc.assert(
      fc.property(
        fc.subarray(Object.keys(CONSTRUCTS), { minLength: 1 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: wrappers.length - 1 }),
        separator,
        (ids, flips, wrapper, space) => {
          const text = ids.map((id) => cased(CONSTRUCTS[id]!.map((token) => (token === '{name}' ? 't' : token)).join(space), flips)).join('; ');
          const sql = wrappers[wrapper]!(text);
          expect(checkDsqlSql(sql, true), sql).toEqual([]);
        },
      ),
      propertyParameters(200),
    );
  });

  it('names the statement as written, literals and comments kept', () => {
    expect(checkDsqlSql("SELECT 'a\\'; /* why */ CREATE TABLE t (id bigserial, note text DEFAULT 'x')").map(({ statement }) => statement)).toEqual([
      "/* why */ CREATE TABLE t (id bigserial, note text DEFAULT 'x')",
    ]);
  });
});
