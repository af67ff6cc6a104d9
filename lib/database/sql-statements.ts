/**
 * Splits a PostgreSQL script into its statements at the semicolons that end them, for the Data API, which
 * runs one statement per call. A semicolon inside a quoted string (`'...'`, `E'...'`), a quoted identifier,
 * a dollar-quoted body (`$$ ... $$`, `$fn$ ... $fn$`) or a comment does not end a statement. Comments stay
 * with the statement they precede; a piece that holds only comments and white space is dropped.
 *
 * @example
 * splitSqlStatements('CREATE TABLE a (id int);\nCREATE TABLE b (id int);') // ['CREATE TABLE a (id int)', 'CREATE TABLE b (id int)']
 */
export function splitSqlStatements(sql: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let code = false; // whether the current piece holds anything but comments and white space
  let i = 0;
  while (i < sql.length) {
    const char = sql[i]!;
    const next = sql[i + 1];
    if (char === '-' && next === '-') {
      i = endOfLine(sql, i);
    } else if (char === '/' && next === '*') {
      i = endOfBlockComment(sql, i);
    } else if (char === ';') {
      if (code) statements.push(sql.slice(start, i).trim());
      start = i + 1;
      code = false;
      i += 1;
    } else {
      if (!/\s/.test(char)) code = true;
      i = endOfToken(sql, i);
    }
  }
  if (code) statements.push(sql.slice(start).trim());
  return statements;
}

/** Past a quoted string, quoted identifier or dollar-quoted body starting at `i`, or past the one character there. */
function endOfToken(sql: string, i: number): number {
  const char = sql[i]!;
  if (char === "'") return endOfQuoted(sql, i, "'", /[eE]/.test(sql[i - 1] ?? '') && !/[\w$]/.test(sql[i - 2] ?? ''));
  if (char === '"') return endOfQuoted(sql, i, '"', false);
  if (char === '$' && !/[\w$]/.test(sql[i - 1] ?? '')) {
    const tag = /^\$(?:[A-Za-z_\u0080-\uffff][\w\u0080-\uffff]*)?\$/.exec(sql.slice(i))?.[0];
    if (tag !== undefined) {
      const end = sql.indexOf(tag, i + tag.length);
      return end === -1 ? sql.length : end + tag.length;
    }
  }
  return i + 1;
}

/** Past the closing quote; a doubled quote is an escaped one, and so is a backslashed one in an `E'...'` string. */
function endOfQuoted(sql: string, i: number, quote: string, backslashEscapes: boolean): number {
  let j = i + 1;
  while (j < sql.length) {
    if (backslashEscapes && sql[j] === '\\') j += 2;
    else if (sql[j] === quote && sql[j + 1] === quote) j += 2;
    else if (sql[j] === quote) return j + 1;
    else j += 1;
  }
  return sql.length;
}

function endOfLine(sql: string, i: number): number {
  const end = sql.indexOf('\n', i);
  return end === -1 ? sql.length : end + 1;
}

/** PostgreSQL's block comments nest. */
function endOfBlockComment(sql: string, i: number): number {
  let depth = 0;
  let j = i;
  while (j < sql.length) {
    if (sql[j] === '/' && sql[j + 1] === '*') {
      depth += 1;
      j += 2;
    } else if (sql[j] === '*' && sql[j + 1] === '/') {
      depth -= 1;
      j += 2;
      if (depth === 0) return j;
    } else {
      j += 1;
    }
  }
  return sql.length;
}
