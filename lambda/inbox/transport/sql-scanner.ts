/**
 * Named parameters as the Data API reads them (shared by the PostgreSQL wire transport, which binds them
 * as `$n`, and by the local Data API): `:name` in the SQL (a name may start with a digit: Drizzle sends
 * `:1`, kysely-data-api `:0`), never inside a string literal, E'' string, quoted identifier, comment or
 * dollar-quoted body, and never the second colon of a `::type` cast.
 */

/** What the scanner found in a statement. */
export interface ScannedSql {
  /** The SQL split into literal text and `:name` references, in order. */
  readonly pieces: readonly SqlPiece[];
  /** True when text other than whitespace and comments follows a top-level `;`. */
  readonly multipleStatements: boolean;
  /** True when the statement ends with a top-level `;` (followed only by whitespace and comments). */
  readonly endsWithSemicolon: boolean;
}

export type SqlPiece = { readonly text: string } | { readonly name: string; readonly text: string };

const isIdentifierChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_$\u0080-\uffff]/.test(c);
const isNameChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);

/**
 * Splits SQL into text and `:name` references, skipping every construct in which a colon is not a
 * parameter, and notes top-level semicolons (multi-statement detection).
 */
export function scanSql(sql: string): ScannedSql {
  const pieces: SqlPiece[] = [];
  let textStart = 0;
  let i = 0;
  let semicolonAt = -1;
  let afterSemicolon = false;
  const skipTo = (end: number) => {
    i = Math.min(end, sql.length);
  };
  while (i < sql.length) {
    const c = sql[i] as string;
    const next = sql[i + 1];
    const startsToken = !/\s/.test(c) && !(c === '-' && next === '-') && !(c === '/' && next === '*');
    if (semicolonAt >= 0 && startsToken && c !== ';') afterSemicolon = true;
    if (c === "'") {
      // E'...' strings honour backslash escapes; standard strings only double a quote.
      const escapes = (sql[i - 1] === 'E' || sql[i - 1] === 'e') && !isIdentifierChar(sql[i - 2]);
      let j = i + 1;
      while (j < sql.length) {
        if (escapes && sql[j] === '\\') j += 2;
        else if (sql[j] === "'" && sql[j + 1] === "'") j += 2;
        else if (sql[j] === "'") break;
        else j++;
      }
      skipTo(j + 1);
    } else if (c === '"') {
      let j = i + 1;
      while (j < sql.length && !(sql[j] === '"' && sql[j + 1] !== '"')) j += sql[j] === '"' ? 2 : 1;
      skipTo(j + 1);
    } else if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      skipTo(end < 0 ? sql.length : end + 1);
    } else if (c === '/' && next === '*') {
      // PostgreSQL block comments nest.
      let depth = 1;
      let j = i + 2;
      while (j < sql.length && depth > 0) {
        if (sql[j] === '/' && sql[j + 1] === '*') depth++, (j += 2);
        else if (sql[j] === '*' && sql[j + 1] === '/') depth--, (j += 2);
        else j++;
      }
      skipTo(j);
    } else if (c === '$' && !isIdentifierChar(sql[i - 1])) {
      // $tag$ ... $tag$ (tag empty or an identifier that does not start with a digit); $1 is not a quote.
      const tag = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 200))?.[0];
      if (tag) {
        const end = sql.indexOf(tag, i + tag.length);
        skipTo(end < 0 ? sql.length : end + tag.length);
      } else i++;
    } else if (c === ':' && next === ':') {
      i += 2;
    } else if (c === ':' && isNameChar(next)) {
      let j = i + 1;
      while (isNameChar(sql[j])) j++;
      if (textStart < i) pieces.push({ text: sql.slice(textStart, i) });
      pieces.push({ name: sql.slice(i + 1, j), text: sql.slice(i, j) });
      textStart = j;
      i = j;
    } else if (c === ';') {
      if (semicolonAt < 0) semicolonAt = i;
      i++;
    } else {
      i++;
    }
  }
  if (textStart < sql.length) pieces.push({ text: sql.slice(textStart) });
  return { pieces, multipleStatements: afterSemicolon, endsWithSemicolon: semicolonAt >= 0 && !afterSemicolon };
}
