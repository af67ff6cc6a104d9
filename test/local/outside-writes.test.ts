import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { batchClaimSql, claimSql, gatedSql, parkSql } from '../../lambda/inbox/sql/claim.js';
import { purgeBatchSql } from '../../lambda/inbox/sql/purge.js';
import { inboxTables } from '../../lambda/inbox/sql/schema.js';
import { OutsideWrites, isWrite } from '../../local/scenario/outside-writes.js';
import { propertyParameters } from '../support/seed.js';

// The watch on writes outside the inbox's transaction, fed calls as the transports report them: reads and
// the inbox's own statements are never a problem, a write of the handler's is, in autocommit or in a
// transaction of its own that commits while a claimed transaction applies a record.

const RUNS = 100;
const tables = inboxTables();
const CLAIM = claimSql(tables);

/** The inbox's own statements: the claim, the gated statement, parking, the batch claim, the purge. */
const INBOX_STATEMENTS = [
  CLAIM,
  gatedSql(tables, 'INSERT INTO public.t (k) SELECT :id FROM claimed'),
  parkSql(tables),
  batchClaimSql(tables),
  purgeBatchSql(tables),
  `UPDATE ${tables.outbox} SET sent_at = now() WHERE id = :id`,
  `DELETE FROM ${tables.outbox} WHERE sent_at IS NOT NULL`,
];

const table = fc.constantFrom('public.stock', 'accounts', '"Ledger"', 'app.reservations');
const word = (w: string) => fc.constantFrom(w, w.toUpperCase(), w[0]!.toUpperCase() + w.slice(1));
const comment = fc.constantFrom('', '/* note */ ', '-- why\n');

const write = fc
  .tuple(comment, table, fc.integer({ min: 0, max: 3 }), word('insert'), word('update'), word('delete'))
  .map(
    ([lead, t, kind, insert, update, del]) =>
      [
        `${lead}${insert} INTO ${t} (k) VALUES (:k)`,
        `${lead}${update} ${t} SET n = n - 1 WHERE k = 'a; b'`,
        `${lead}${del} FROM ${t} WHERE k = $1`,
        `${lead}WITH gone AS (${del} FROM ${t} RETURNING k) SELECT count(*) FROM gone`,
      ][kind]!,
  );

const read = fc
  .tuple(comment, table, fc.integer({ min: 0, max: 3 }), word('select'))
  .map(
    ([lead, t, kind, select]) =>
      [
        `${lead}${select} n FROM ${t} WHERE note = 'update me; delete'`,
        `${lead}WITH x AS (${select} * FROM ${t}) ${select} count(*) FROM x`,
        `${lead}${select} 'INSERT INTO x' AS text, $$DELETE FROM y$$`,
        `${lead}VALUES (1), (2)`,
      ][kind]!,
  );

const inboxOwn = fc.constantFrom(...INBOX_STATEMENTS);
/** Those that claim no record (a transaction that runs a claim is the inbox's, its writes the record's effect). */
const inboxNotClaiming = fc.constantFrom(...INBOX_STATEMENTS.filter((sql) => !sql.includes('"consumed_message"')));

/** A watch with a claimed transaction open on record `key`, and its clock. */
function applying(key = 'res-1') {
  let now = 1_000;
  const watch = new OutsideWrites(new Set([key]), () => now);
  watch.see({ operation: 'ExecuteStatement', transactionId: 'claim', sql: CLAIM, parameters: [{ name: 'key', value: { stringValue: key } }] });
  return { watch, advance: (ms: number) => (now += ms) };
}

/** The handler's own transaction: its statements, then COMMIT (or ROLLBACK). */
function ownTransaction(watch: OutsideWrites, statements: readonly string[], end: 'CommitTransaction' | 'RollbackTransaction' = 'CommitTransaction') {
  watch.see({ operation: 'BeginTransaction' });
  for (const sql of statements) watch.see({ operation: 'ExecuteStatement', transactionId: 'own', sql });
  watch.see({ operation: end, transactionId: 'own' });
}

describe('OutsideWrites', () => {
  it('never flags reads or the inbox own statements, in autocommit, in a transaction of its own, or in one text', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(read, inboxOwn), { minLength: 1, maxLength: 5 }), (statements) => {
        const { watch } = applying();
        for (const sql of statements) watch.see({ operation: 'ExecuteStatement', sql });
        ownTransaction(watch, statements);
        watch.see({ operation: 'ExecuteStatement', sql: `BEGIN; ${statements.join('; ')}; COMMIT` });
        expect(watch.problems()).toEqual([]);
        for (const sql of statements) expect(sql.includes('"inbox".') || !isWrite(sql)).toBe(true);
      }),
      propertyParameters(RUNS),
    );
  });

  it('always flags a write, named with the record, whatever reads and inbox statements surround it', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(read, inboxNotClaiming)),
        write,
        fc.array(read),
        fc.constantFrom('autocommit', 'own', 'text'),
        (before, w, after, where) => {
          const { watch } = applying('res-7');
          const statements = [...before, w, ...after];
          if (where === 'autocommit') watch.see({ operation: 'ExecuteStatement', sql: statements.join(';\n') });
          else if (where === 'own') ownTransaction(watch, statements);
          else watch.see({ operation: 'ExecuteStatement', sql: `BEGIN; ${statements.join('; ')}; COMMIT` });
          expect(isWrite(w)).toBe(true);
          const problems = watch.problems();
          expect(problems).toHaveLength(1);
          expect(problems[0]).toContain('while record res-7 was being applied (1 time(s))');
          expect(problems[0]).toContain(
            w
              .replace(/^(\/\* note \*\/ |-- why\n)/, '')
              .replace(/\s+/g, ' ')
              .trim()
              .slice(0, 60),
          );
        },
      ),
      propertyParameters(RUNS),
    );
  });

  it("flags nothing the claimed transaction writes, a rolled-back transaction's writes, or a write with no record applying", () => {
    const { watch } = applying();
    watch.see({ operation: 'ExecuteStatement', transactionId: 'claim', sql: 'UPDATE public.stock SET n = n - 1' });
    ownTransaction(watch, ['UPDATE public.stock SET n = n - 1'], 'RollbackTransaction');
    watch.see({ operation: 'ExecuteStatement', sql: 'BEGIN; UPDATE public.stock SET n = 0; ROLLBACK' });
    watch.see({ operation: 'CommitTransaction', transactionId: 'claim' });
    ownTransaction(watch, ['UPDATE public.stock SET n = n - 1']);
    watch.see({ operation: 'ExecuteStatement', sql: 'UPDATE public.stock SET n = 0' });

    expect(watch.problems()).toEqual([]);
  });

  it('takes a claimed transaction silent for 5 s for abandoned, on the clock it is given', () => {
    const { watch, advance } = applying();
    advance(4_999);
    ownTransaction(watch, ['UPDATE public.stock SET n = 1']);
    advance(1);
    ownTransaction(watch, ['UPDATE public.stock SET n = 2']);

    expect(watch.problems()).toEqual([expect.stringContaining('(1 time(s)): UPDATE public.stock SET n = 1.')]);
  });
});
