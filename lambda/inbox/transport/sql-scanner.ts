/**
 * PostgreSQL's lexical structure, read by the one scanner every reader of SQL text uses: the transports
 * (named parameters, transaction control), the claim (a statement's first words), the local Data API and
 * the constructs' migration files (statements). It imports nothing, so the constructs may import it.
 *
 * It reads text as PostgreSQL's lexer does (with `standard_conforming_strings` on, the default since 9.1):
 * string literals (`'...'` with `''`, `E'...'` with backslash escapes too, `U&'...'`), quoted identifiers
 * (`"..."`), comments (`--` to the end of the line, which `\n` or `\r` ends, and `/* ... *\/`, which nest),
 * dollar-quoted bodies (`$tag$ ... $tag$`, not `$1`), white space (space, tab, `\n`, `\r`, `\f`, `\v`: any
 * other character, non-ASCII white space included, belongs to a word), and unquoted words, whose case
 * PostgreSQL folds (ASCII letters only).
 */

/** What the scanner found in a text. */
export interface ScannedSql {
  /** The SQL split into literal text and `:name` references, in order. */
  readonly pieces: readonly SqlPiece[];
  /**
   * The statements, split at top-level semicolons as psql splits a script: the semicolons inside a
   * `BEGIN ATOMIC ... END` body (CREATE FUNCTION or PROCEDURE) end none. Pieces that hold only white space
   * and comments are not statements.
   */
  readonly statements: readonly ScannedStatement[];
  /** Every unquoted word of the text outside literals and comments, lower-case. */
  readonly words: ReadonlySet<string>;
  /** True when the text holds more than one statement. */
  readonly multipleStatements: boolean;
  /** True when the text's one statement is followed by a top-level `;` (then only white space, comments and more `;`). */
  readonly endsWithSemicolon: boolean;
}

export type SqlPiece = { readonly text: string } | { readonly name: string; readonly text: string };

/** One statement of a text. */
export interface ScannedStatement {
  /** Its text, without the `;` that ends it and the white space around it; comments before it stay. */
  readonly text: string;
  /**
   * Its text with the inside of every string literal, quoted identifier and dollar-quoted body, and every
   * comment, turned to spaces (the quotes stay), character for character: what a rule that looks for words
   * matches, so that no word inside a literal or comment is taken for a keyword.
   */
  readonly code: string;
  /**
   * The statement cut at each top-level `;` inside it (only a `BEGIN ATOMIC` body holds one), each with its
   * first words: the first part's are the statement's own (`['rollback', 'to', 'savepoint']`).
   */
  readonly parts: readonly StatementPart[];
}

/** A part of a statement: its first words, up to the first token that is not an unquoted word (at most four). */
export interface StatementPart {
  readonly words: readonly LeadingWord[];
}

/** A leading word: lower-case, and where it ends in the scanned text. */
export interface LeadingWord {
  readonly word: string;
  readonly end: number;
}

/** How many leading words a part keeps: enough for `CREATE OR REPLACE FUNCTION` and `CREATE UNIQUE INDEX CONCURRENTLY`. */
const LEADING_WORDS = 4;

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
const isWordStart = (c: string | undefined) => c !== undefined && /[A-Za-z_\u0080-\uffff]/.test(c);
const isWordChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_$\u0080-\uffff]/.test(c);
const isNameChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);
/** PostgreSQL folds the case of unquoted words for ASCII letters only. */
const folded = (word: string) => word.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

/**
 * Scans SQL text: `:name` references (never inside a literal, quoted identifier, comment or dollar-quoted
 * body, nor the second colon of a `::type` cast), the statements, and their leading words.
 */
export function scanSql(sql: string): ScannedSql {
  const pieces: SqlPiece[] = [];
  const statements: ScannedStatement[] = [];
  const words = new Set<string>();
  let textStart = 0;
  let i = 0;
  // The statement being read: where its text starts, whether it holds a token (or only comments), its parts.
  let statementFrom = 0;
  let tokens = false;
  let parts: { words: LeadingWord[]; open: boolean }[] = [{ words: [], open: true }];
  // psql's rule for a routine body, made stricter: in CREATE [OR REPLACE] FUNCTION or PROCEDURE, outside
  // parentheses, BEGIN ATOMIC opens a block (BEGIN alone may be a column), a CASE inside one opens a CASE, and
  // END closes the innermost; a `;` inside a block ends no statement, and no CASE spans it. A word after AS is
  // a label (`SELECT 1 AS case`), not a keyword.
  let parens = 0;
  let blocks = 0;
  let cases = 0;
  let afterBegin = false;
  let afterAs = false;
  let semicolonLast = false;

  // The text as `code` shows it: the spans of literals and comments that `blank` turned to spaces.
  const blanked: [number, number][] = [];
  const blank = (from: number, to: number) => {
    if (from < to) blanked.push([from, to]);
  };
  const part = () => parts[parts.length - 1]!;
  const endStatement = (end: number) => {
    if (tokens) {
      const [from, to] = trimmedSpan(sql, statementFrom, end);
      statements.push({ text: sql.slice(from, to), code: codeOf(sql, from, to, blanked), parts: parts.map(({ words }) => ({ words })) });
    }
    statementFrom = end + 1;
    tokens = false;
    parts = [{ words: [], open: true }];
    parens = 0;
    blocks = 0;
    cases = 0;
    afterBegin = false;
    afterAs = false;
  };
  /** A token other than a word: the current part's leading words end. */
  const token = () => {
    tokens = true;
    part().open = false;
    afterBegin = false;
    afterAs = false;
    semicolonLast = false;
  };

  while (i < sql.length) {
    const c = sql[i] as string;
    const next = sql[i + 1];
    if (isSpace(c)) {
      i++;
    } else if (c === '-' && next === '-') {
      const start = i;
      while (i < sql.length && sql[i] !== '\n' && sql[i] !== '\r') i++;
      blank(start, i);
    } else if (c === '/' && next === '*') {
      const start = i;
      i = endOfBlockComment(sql, i);
      blank(start, i);
    } else if (c === "'") {
      token();
      const start = i;
      // E'...' strings honour backslash escapes; standard ones only double a quote.
      i = endOfQuoted(sql, i, "'", (sql[i - 1] === 'E' || sql[i - 1] === 'e') && !isWordChar(sql[i - 2]));
      blank(start + 1, closedAt(sql, i, "'"));
    } else if (c === '"') {
      token();
      const start = i;
      i = endOfQuoted(sql, i, '"', false);
      blank(start + 1, closedAt(sql, i, '"'));
    } else if (c === '$' && !isWordChar(sql[i - 1]) && dollarTag(sql, i) !== undefined) {
      token();
      const tag = dollarTag(sql, i)!;
      const end = sql.indexOf(tag, i + tag.length);
      blank(i + tag.length, end < 0 ? sql.length : end);
      i = end < 0 ? sql.length : end + tag.length;
    } else if (isWordStart(c)) {
      const start = i;
      while (isWordChar(sql[i])) i++;
      const word = folded(sql.slice(start, i));
      words.add(word);
      tokens = true;
      const current = part();
      if (current.open && current.words.length < LEADING_WORDS) current.words.push({ word, end: i });
      else current.open = false;
      blockWord(word);
      semicolonLast = false;
    } else if (c === ';') {
      if (blocks > 0) {
        token();
        cases = 0;
        parts.push({ words: [], open: true });
      } else {
        endStatement(i);
        semicolonLast = statements.length > 0;
      }
      i++;
    } else {
      token();
      if (c === '(') parens++;
      else if (c === ')') parens = Math.max(0, parens - 1);
      if (c === ':' && next === ':') {
        i += 2;
      } else if (c === ':' && isNameChar(next)) {
        let j = i + 1;
        while (isNameChar(sql[j])) j++;
        if (textStart < i) pieces.push({ text: sql.slice(textStart, i) });
        pieces.push({ name: sql.slice(i + 1, j), text: sql.slice(i, j) });
        textStart = j;
        i = j;
      } else {
        i++;
      }
    }
  }
  endStatement(sql.length);
  if (textStart < sql.length) pieces.push({ text: sql.slice(textStart) });
  return { pieces, statements, words, multipleStatements: statements.length > 1, endsWithSemicolon: statements.length === 1 && semicolonLast };

  function blockWord(word: string): void {
    const opensBlock = afterBegin && word === 'atomic';
    const label = afterAs;
    afterBegin = false;
    afterAs = word === 'as';
    if (label || parens > 0 || !definesRoutine(parts[0]!.words)) return;
    if (opensBlock) blocks++;
    else if (word === 'case' && blocks > 0) cases++;
    else if (word === 'end' && cases > 0) cases--;
    else if (word === 'end' && blocks > 0) blocks--;
    else if (word === 'begin') afterBegin = true;
  }
}

/** CREATE [OR REPLACE] FUNCTION or PROCEDURE: a statement whose body may be `BEGIN ATOMIC ... END`. */
function definesRoutine(leading: readonly LeadingWord[]): boolean {
  const [create, second, third, fourth] = leading.map(({ word }) => word);
  const routine = (word: string | undefined) => word === 'function' || word === 'procedure';
  return create === 'create' && (routine(second) || (second === 'or' && third === 'replace' && routine(fourth)));
}

/** `$tag$` (the tag empty or a word that does not start with a digit) at `i`; `$1` is not one. */
function dollarTag(sql: string, i: number): string | undefined {
  return /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 200))?.[0];
}

/** Past the closing quote; a doubled quote is an escaped one, and so is a backslashed one in an `E'...'` string. */
function endOfQuoted(sql: string, i: number, quote: string, backslashEscapes: boolean): number {
  let j = i + 1;
  while (j < sql.length) {
    if (backslashEscapes && sql[j] === '\\') j += 2;
    else if (sql[j] === quote && sql[j + 1] === quote) j += 2;
    else if (sql[j] === quote) return j + 1;
    else j++;
  }
  return sql.length;
}

/** Past a block comment; PostgreSQL's nest. */
function endOfBlockComment(sql: string, i: number): number {
  let depth = 0;
  let j = i;
  while (j < sql.length) {
    if (sql[j] === '/' && sql[j + 1] === '*') {
      depth++;
      j += 2;
    } else if (sql[j] === '*' && sql[j + 1] === '/') {
      depth--;
      j += 2;
      if (depth === 0) return j;
    } else {
      j++;
    }
  }
  return sql.length;
}

/** Where the inside of a quoted token that ends at `end` ends: before its closing quote, if it has one. */
function closedAt(sql: string, end: number, quote: string): number {
  return end <= sql.length && sql[end - 1] === quote ? end - 1 : end;
}

/** `from`..`to` without PostgreSQL's white space at either end. */
function trimmedSpan(sql: string, from: number, to: number): [number, number] {
  let start = from;
  let end = to;
  while (start < end && isSpace(sql[start])) start++;
  while (end > start && isSpace(sql[end - 1])) end--;
  return [start, end];
}

/** The text `from`..`to` with every blanked span in it turned to spaces (a line break stays one, so lines still count). */
function codeOf(sql: string, from: number, to: number, blanked: readonly [number, number][]): string {
  let code = '';
  let at = from;
  for (const [start, end] of blanked) {
    if (end <= from || start >= to) continue;
    const a = Math.max(start, from);
    const b = Math.min(end, to);
    code += sql.slice(at, a) + sql.slice(a, b).replace(/[^\n\r]/g, ' ');
    at = b;
  }
  return code + sql.slice(at, to);
}

/**
 * The transaction-control statement a part's leading words make, as its words in capitals (`ROLLBACK TO`),
 * or undefined: BEGIN, START TRANSACTION, COMMIT, END, ABORT, ROLLBACK (TO, PREPARED), SAVEPOINT, RELEASE,
 * PREPARE TRANSACTION, COMMIT PREPARED. (`PREPARE name AS ...` prepares a statement; it controls nothing.)
 */
export function transactionControl(leading: readonly LeadingWord[]): string | undefined {
  const [first, second, third] = leading.map(({ word }) => word);
  switch (first) {
    case 'begin':
    case 'end':
    case 'abort':
    case 'savepoint':
    case 'release':
      return first.toUpperCase();
    case 'commit':
      return second === 'prepared' ? 'COMMIT PREPARED' : 'COMMIT';
    case 'rollback':
      if (second === 'prepared') return 'ROLLBACK PREPARED';
      return second === 'to' || ((second === 'work' || second === 'transaction') && third === 'to') ? 'ROLLBACK TO' : 'ROLLBACK';
    case 'start':
      return second === 'transaction' ? 'START TRANSACTION' : undefined;
    case 'prepare':
      return second === 'transaction' && third !== 'as' ? 'PREPARE TRANSACTION' : undefined;
    default:
      return undefined;
  }
}

/**
 * The first transaction-control statement in the text, or undefined: in any statement, and in any part of a
 * `BEGIN ATOMIC` body but the END that closes it (a naive split at every `;` would take that END for one).
 * A text of several statements is judged statement by statement: the simple query protocol runs them all.
 */
export function transactionControlIn(sql: string): string | undefined {
  for (const statement of scanSql(sql).statements) {
    for (const [index, { words }] of statement.parts.entries()) {
      const control = transactionControl(words);
      if (control !== undefined && !(index > 0 && control === 'END')) return control;
    }
  }
  return undefined;
}
