import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionControlError } from '../../lambda/inbox/orm/index.js';
import { scanSql, transactionControlIn } from '../../lambda/inbox/transport/sql-scanner.js';
import { refuseTransactionControl } from '../../lambda/inbox/transport/transaction-control.js';
import { freshDatabase } from '../support/database.js';
import { propertyParameters } from '../support/seed.js';

// The one SQL scanner (lambda/inbox/transport/sql-scanner.ts) that every transport, the claim, the local Data
// API and the constructs read SQL with. Where it finds transaction control decides what the transports refuse,
// so it is checked against PostgreSQL itself: a text that ends PostgreSQL's transaction must be refused.

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: await freshDatabase('sql_scanner') });
  await client.connect();
  client.on('notice', () => {}); // BEGIN inside a transaction block, COMMIT outside one: warnings, not failures
  await client.query('CREATE TABLE public.scan_t (x int, begin int)');
});
afterAll(async () => client.end());

/**
 * Whether PostgreSQL, given `text` inside an open transaction by the simple query protocol (which runs every
 * statement of a text that parses), ended that transaction: its connection left idle, or in another transaction.
 */
async function endsTheTransaction(text: string): Promise<boolean> {
  await client.query('BEGIN');
  const [{ xid }] = (await client.query('SELECT pg_current_xact_id()::text AS xid')).rows;
  await client.query(text).catch(() => {});
  // node-postgres settles a failed query at its error, before the server's ReadyForQuery: an empty query,
  // which no transaction state refuses, waits for it.
  await client.query('');
  const status = client.getTransactionStatus();
  if (status === 'I') return true;
  const other = status === 'T' && (await client.query('SELECT pg_current_xact_id()::text AS xid')).rows[0].xid !== xid;
  await client.query('ROLLBACK');
  return other;
}

/** Whether PostgreSQL runs `text` alone by the extended protocol (one statement, valid), in a transaction rolled back after. */
async function runsAsOneStatement(text: string): Promise<boolean> {
  await client.query('BEGIN');
  try {
    await client.query({ text, queryMode: 'extended' } as never);
    return true;
  } catch {
    return false;
  } finally {
    await client.query('ROLLBACK');
  }
}

describe('transaction control in SQL text', () => {
  it.each([
    ['BEGIN', 'BEGIN'],
    ['  begin isolation level serializable', 'BEGIN'],
    ['start transaction read only', 'START TRANSACTION'],
    ['/* drizzle */ COMMIT', 'COMMIT'],
    ['commit/**/work', 'COMMIT'],
    ["-- end it\ncommit prepared 'x'", 'COMMIT PREPARED'],
    ['END', 'END'],
    ['abort', 'ABORT'],
    ['rollback', 'ROLLBACK'],
    ["ROLLBACK PREPARED 'x'", 'ROLLBACK PREPARED'],
    ["prepare transaction 'x'", 'PREPARE TRANSACTION'],
    ['savepoint sp1', 'SAVEPOINT'],
    ['rollback to savepoint sp1', 'ROLLBACK TO'],
    ['ROLLBACK TRANSACTION TO sp1', 'ROLLBACK TO'],
    ['rollback work to sp1', 'ROLLBACK TO'],
    ['release savepoint sp1', 'RELEASE'],
    ['select 1; commit', 'COMMIT'],
    ['SELECT 1;\vCOMMIT', 'COMMIT'],
    // A standard string ends at its second quote: the backslash escapes nothing.
    ["SELECT '\\'; COMMIT; --'", 'COMMIT'],
    // A line comment ends at a carriage return.
    ['SELECT 1; -- c\rCOMMIT', 'COMMIT'],
    // `a$$` is a word (an identifier may hold `$`), not the start of a dollar quote.
    ['SELECT 1 AS a$$; ROLLBACK; SELECT 2 AS b$$', 'ROLLBACK'],
    ['SELECT 1 /* /* */ COMMIT */; COMMIT', 'COMMIT'],
    ['CREATE FUNCTION public.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END; COMMIT', 'COMMIT'],
    // A label named case opens no CASE: the function ends at its END, and what follows is a statement.
    ['CREATE FUNCTION public.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1 AS case; END; END', 'END'],
    ['CREATE FUNCTION public.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1 case; END; COMMIT; END', 'COMMIT'],
  ])('refuses %j (%s)', (sql, refused) => {
    expect(transactionControlIn(sql)).toBe(refused);
    expect(() => refuseTransactionControl(sql)).toThrow(expect.objectContaining({ name: 'TransactionControlError', refused }));
  });

  it.each([
    "insert into notes values ('commit; begin')",
    'update orders set end_date = now();',
    'select beginning from t',
    'SELECT begin FROM public.scan_t',
    'prepare ship as select 1',
    'PREPARE transaction AS SELECT 1',
    "SELECT E'\\'; COMMIT; --'",
    'SELECT $$; COMMIT; $$',
    'SELECT $t$ $$; COMMIT; $$ $t$',
    'SELECT 1 AS "a; COMMIT"',
    'SELECT 1 -- ; COMMIT\n',
    'SELECT 1 /* ; COMMIT */',
    'SELECT 1 -- x\rROLLBACK',
    'CREATE FUNCTION public.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END',
    'CREATE OR REPLACE PROCEDURE public.p() LANGUAGE sql BEGIN ATOMIC INSERT INTO public.scan_t VALUES (1); UPDATE public.scan_t SET x = CASE WHEN x > 0 THEN 1 ELSE 2 END; END',
    'CREATE FUNCTION public.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT begin FROM public.scan_t; SELECT 1 AS case; END',
  ])('lets %j through', (sql) => {
    expect(transactionControlIn(sql)).toBeUndefined();
    expect(() => refuseTransactionControl(sql)).not.toThrow();
  });

  it('refuses with the error that names the fix', () => {
    const refused = (() => {
      try {
        refuseTransactionControl('ROLLBACK');
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(TransactionControlError);
    expect((refused as Error).message).toBe(
      "ROLLBACK refused inside the inbox's transaction: the inbox commits the claim and your writes together when apply returns, and rolls both back when it throws. " +
        'Fix: leave BEGIN, COMMIT, ROLLBACK and SAVEPOINT out of the SQL, and drop db.transaction() inside apply: write through tx (or the ORM bound to it), ' +
        'and the inbox commits for you; to undo the effect, throw from apply.',
    );
    expect(() => refuseTransactionControl(undefined)).not.toThrow();
  });

  it('agrees with PostgreSQL on every example: each it refuses for COMMIT, ROLLBACK, END or ABORT ends the transaction there, each it lets through does not', async () => {
    expect(await endsTheTransaction("SELECT '\\'; COMMIT; --'")).toBe(true);
    expect(await endsTheTransaction('SELECT 1; -- c\rCOMMIT')).toBe(true);
    expect(await endsTheTransaction('SELECT 1 AS a$$; ROLLBACK; SELECT 2 AS b$$')).toBe(true);
    expect(await endsTheTransaction('CREATE FUNCTION public.f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1 AS case; END; END')).toBe(true);
    expect(await endsTheTransaction("SELECT E'\\'; COMMIT; --'")).toBe(false);
    expect(await endsTheTransaction('SELECT 1 -- x\rROLLBACK')).toBe(false);
    expect(await endsTheTransaction('PREPARE transaction AS SELECT 1')).toBe(false);
  });
});

/** Words with each ASCII letter's case chosen by the generator. */
const anyCase = (word: string) =>
  fc.array(fc.boolean(), { minLength: word.length, maxLength: word.length }).map((upper) => [...word].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(''));
/** What may stand between two words: PostgreSQL's white space and comments, of every kind. */
const gap = fc
  .array(fc.constantFrom(' ', '\t', '\n', '\r', '\f', '\v', '/* c */', '/* /* nested */ ; */', '-- c; COMMIT\n', '-- c\r', '--\n'), {
    minLength: 1,
    maxLength: 4,
  })
  .map((parts) => parts.join(''));
const optionalGap = fc.oneof(fc.constant(''), gap);

/** Transaction-control statements PostgreSQL runs inside an open transaction, and whether they end it. */
const CONTROL_STATEMENTS = [
  { words: ['commit'], refused: 'COMMIT', ends: true },
  { words: ['commit', 'work'], refused: 'COMMIT', ends: true },
  { words: ['commit', 'and', 'no', 'chain'], refused: 'COMMIT', ends: true },
  { words: ['end'], refused: 'END', ends: true },
  { words: ['end', 'transaction'], refused: 'END', ends: true },
  { words: ['abort'], refused: 'ABORT', ends: true },
  { words: ['rollback'], refused: 'ROLLBACK', ends: true },
  { words: ['rollback', 'transaction'], refused: 'ROLLBACK', ends: true },
  { words: ['begin'], refused: 'BEGIN', ends: false },
  { words: ['start', 'transaction'], refused: 'START TRANSACTION', ends: false },
  { words: ['savepoint', 'sp1'], refused: 'SAVEPOINT', ends: false },
] as const;

const decoratedControl = fc.constantFrom(...CONTROL_STATEMENTS).chain((statement) =>
  fc
    .record({
      words: fc.tuple(...statement.words.map(anyCase)),
      gaps: fc.array(gap, { minLength: statement.words.length, maxLength: statement.words.length }),
      lead: optionalGap,
      before: fc.constantFrom('', 'SELECT 1;', "SELECT ';' AS x;", 'SELECT $$;$$;', 'SELECT 1 AS "a;b";', 'SELECT 2 -- x\n;'),
      after: fc.constantFrom('', ';', '; ', ';-- done', ' /* done */'),
    })
    .map(({ words, gaps, lead, before, after }) => ({
      ...statement,
      text: `${before}${lead}${words.map((word, i) => (i === 0 ? word : `${gaps[i]}${word}`)).join('')}${after}`,
    })),
);

describe('transaction control in SQL text, generated (fast-check, seeded)', () => {
  it('refuses every transaction-control statement whatever its case, white space, comments and the statement before it', async () => {
    await fc.assert(
      fc.asyncProperty(decoratedControl, async ({ text, refused, ends }) => {
        expect(transactionControlIn(text)).toBe(refused);
        // The decorations are PostgreSQL's own syntax: it runs the statement, and ends its transaction when the statement does.
        expect(await endsTheTransaction(text)).toBe(ends);
      }),
      propertyParameters(150),
    );
  });

  /** A literal holding `content`, quoted as PostgreSQL takes it: PostgreSQL reads the content back unchanged. */
  const literal = fc
    .record({
      content: fc.array(fc.constantFrom('a', ';', ' ', "'", '"', '\\', '$', '$$', '--', '/*', '*/', '\n', '\r', 'COMMIT', 'END', 'begin', 'é'), {
        maxLength: 12,
      }),
      form: fc.constantFrom('standard', 'escape', 'dollar', 'tagged dollar', 'identifier', 'line comment', 'block comment'),
    })
    .map(({ content, form }): string => {
      const text = content.join('');
      switch (form) {
        case 'standard':
          return `SELECT '${text.replaceAll("'", "''")}' AS v`;
        case 'escape':
          return `SELECT E'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}' AS v`;
        case 'dollar':
          return text.includes('$') ? `SELECT $q$${text}$q$ AS v` : `SELECT $$${text}$$ AS v`;
        case 'tagged dollar':
          return `SELECT $tag_1$${text.replaceAll('$tag_1$', '')}$tag_1$ AS v`;
        case 'identifier':
          return `SELECT 1 AS "${(text || 'x').replaceAll('"', '""')}"`;
        case 'line comment':
          return `SELECT 1 AS v -- ${text.replace(/[\n\r]/g, ' ')}\n`;
        default:
          return `SELECT 1 AS v /* ${text.replaceAll('/*', '/ *').replaceAll('*/', '* /')} */`;
      }
    });

  it('lets through a statement whose transaction-control words stand only in literals, identifiers and comments, and finds it one statement', async () => {
    await fc.assert(
      fc.asyncProperty(literal, async (text) => {
        expect(transactionControlIn(text)).toBeUndefined();
        expect(scanSql(text).statements).toHaveLength(1);
        expect(await runsAsOneStatement(text)).toBe(true);
        expect(await endsTheTransaction(text)).toBe(false);
      }),
      propertyParameters(150),
    );
  });

  /** Pieces of SQL that open or close literals, comments, blocks and statements, to be put together at random. */
  const FRAGMENTS = [
    'SELECT 1',
    "SELECT 'x'",
    'SELECT $$;$$',
    'SELECT 1 AS a$$',
    'SELECT 2 AS b$$',
    'SELECT begin FROM public.scan_t',
    'SELECT 1 AS case',
    'CASE WHEN true THEN 1 END',
    'CREATE OR REPLACE FUNCTION public.scan_f() RETURNS int LANGUAGE sql BEGIN ATOMIC',
    'END',
    'COMMIT',
    'ROLLBACK',
    'ABORT',
    'end work',
    "PREPARE TRANSACTION 'p'",
    ';',
    ';',
    ';',
    "'",
    "E'",
    "\\'",
    '"',
    '$$',
    '$t$',
    '--',
    '-- c\n',
    '-- c\r',
    '/*',
    '*/',
    '\n',
    '\r',
    '\v',
    ' ',
    '\u00a0',
    '(',
    ')',
    'E',
    '$1',
  ];

  it('refuses every text, however its pieces fall together, that PostgreSQL lets end its transaction', async () => {
    let ended = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 10 }), fc.constantFrom('', ' '), async (pieces, glue) => {
        const text = pieces.join(glue);
        if (await endsTheTransaction(text)) {
          ended++;
          expect(transactionControlIn(text), text).toBeDefined();
        }
      }),
      propertyParameters(1500),
    );
    // The generator reaches PostgreSQL's transaction often enough for the property to mean something.
    expect(ended).toBeGreaterThan(50);
  });
});

describe('statements of a script: BEGIN ATOMIC bodies', () => {
  /** A CASE expression nested `depth` deep, with literals and comments that hold `;` and END. */
  const caseExpression = (depth: number, decorated: boolean): string =>
    depth === 0
      ? decorated
        ? "(SELECT 1 /* ; END; */ WHERE ';END' <> $$; END$$)"
        : '1'
      : `CASE WHEN x > ${depth} THEN ${caseExpression(depth - 1, decorated)} ELSE ${depth} END`;

  const script = fc.array(
    fc.oneof(
      fc
        .record({
          depth: fc.integer({ min: 0, max: 3 }),
          decorated: fc.boolean(),
          body: fc.integer({ min: 1, max: 3 }),
          name: fc.integer({ min: 0, max: 9999 }),
        })
        .map(
          ({ depth, decorated, body, name }) =>
            `CREATE OR REPLACE FUNCTION public.atomic_${name}(x int) RETURNS int LANGUAGE sql\nBEGIN ATOMIC\n${Array.from(
              { length: body },
              (_, i) => `  SELECT ${caseExpression(depth, decorated)} AS v${i};\n`,
            ).join('')}END`,
        ),
      fc.constantFrom('SELECT 1', 'UPDATE public.scan_t SET x = 1 WHERE begin = 2', 'SELECT 1 AS "end;"'),
    ),
    { minLength: 1, maxLength: 5 },
  );

  it('finds each function whole and each statement alone, as PostgreSQL runs them (fast-check, seeded)', async () => {
    await fc.assert(
      // A comment between two statements goes with the second, as psql keeps it.
      fc.asyncProperty(
        script,
        fc.constantFrom(['\n', ''], [' -- next\n', '-- next\n'], ['\r\n/* next */ ', '/* next */ ']),
        async (statements, [separator, lead]) => {
          const scanned = scanSql(`${statements.join(`;${separator}`)};\n`).statements.map((statement) => statement.text);
          expect(scanned).toEqual(statements.map((statement, index) => (index === 0 ? statement : `${lead}${statement}`)));
          expect(transactionControlIn(statements.join(`;${separator}`))).toBeUndefined();
          for (const statement of scanned) expect(await runsAsOneStatement(statement), statement).toBe(true);
        },
      ),
      propertyParameters(60),
    );
  });

  it('counts BEGIN ATOMIC blocks inside one as psql does, and a CASE only inside one', () => {
    const nested = 'CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; BEGIN ATOMIC SELECT 2; END; END';
    expect(scanSql(`${nested}; SELECT 3`).statements.map((statement) => statement.text)).toEqual([nested, 'SELECT 3']);
    expect(scanSql('SELECT CASE WHEN true THEN 1 END; END').statements).toHaveLength(2);
    expect(scanSql('CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql; END').statements).toHaveLength(2);
    expect(scanSql('CREATE FUNCTION begin() RETURNS int LANGUAGE sql RETURN 1; SELECT 2').statements).toHaveLength(2);
    expect(
      scanSql('CREATE FUNCTION f(a int DEFAULT (CASE WHEN true THEN 1 END)) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT a; END; SELECT 2').statements,
    ).toHaveLength(2);
  });

  it('tells the words a statement starts with, past its comments', () => {
    const sql = '/* a */ -- b\n  WITH /* c */ RECURSIVE x AS (SELECT 1) SELECT * FROM x; Rollback To sp';
    const [first, second] = scanSql(sql).statements;
    expect(first!.parts[0]!.words).toEqual([
      { word: 'with', end: sql.indexOf(' /* c */') },
      { word: 'recursive', end: sql.indexOf(' x AS') },
      { word: 'x', end: sql.indexOf(' AS') },
      { word: 'as', end: sql.indexOf(' (SELECT') },
    ]);
    expect(second!.parts[0]!.words.map(({ word }) => word)).toEqual(['rollback', 'to', 'sp']);
    expect(scanSql('SELECT 1;;').endsWithSemicolon).toBe(true);
    expect(scanSql(';SELECT 1').endsWithSemicolon).toBe(false);
    expect(scanSql(';SELECT 1').multipleStatements).toBe(false);
    expect([...scanSql('SELECT Claimed, \'claimed2\', "claimed3" -- claimed4').words]).toEqual(['select', 'claimed']);
  });
});

describe("a statement's code: what rules that look for words match", () => {
  it('blanks the inside of literals, quoted identifiers and dollar bodies, and comments, character for character', () => {
    const sql = "/* lead */ SELECT 'a;b', E'c\\'d', \"x y\", $t$ TRUNCATE $t$ -- TRUNCATE\nFROM t; SELECT 'it''s'";
    const [first, second] = scanSql(sql).statements;
    expect(first!.text).toBe("/* lead */ SELECT 'a;b', E'c\\'d', \"x y\", $t$ TRUNCATE $t$ -- TRUNCATE\nFROM t");
    expect(first!.code).toBe("           SELECT '   ', E'    ', \"   \", $t$          $t$            \nFROM t");
    expect(second!.code).toBe("SELECT '     '");
    for (const { text, code } of scanSql(sql).statements) expect(code).toHaveLength(text.length);
  });

  it('blanks to the end an unterminated literal or comment', () => {
    expect(scanSql("SELECT 'open").statements[0]!.code).toBe("SELECT '    ");
    expect(scanSql('SELECT 1 /* open').statements[0]!.code).toBe('SELECT 1        ');
  });
});
