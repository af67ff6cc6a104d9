/** A table as both renderers see it: a title, a header row, body rows, and notes printed under it. */
export interface Table {
  readonly title: string;
  readonly headers: readonly string[];
  readonly rows: readonly (readonly string[])[];
  readonly notes?: readonly string[];
}

/** Aligned plain text for the terminal: the first column left-aligned, the rest right-aligned. */
export function toText(table: Table): string {
  const lines = [table.headers, ...table.rows];
  const widths = table.headers.map((_, column) => Math.max(...lines.map((line) => (line[column] ?? '').length)));
  const render = (line: readonly string[]) =>
    line
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ')
      .trimEnd();
  const header = render(table.headers);
  return [
    table.title,
    '',
    header,
    '-'.repeat(header.length),
    ...table.rows.map(render),
    ...(table.notes?.length ? ['', ...table.notes.map((note) => `  * ${note}`)] : []),
  ].join('\n');
}

/** A GitHub-flavoured markdown section. */
export function toMarkdown(table: Table): string {
  const escape = (cell: string) => cell.replace(/\|/g, '\\|');
  const row = (line: readonly string[]) => `| ${line.map(escape).join(' | ')} |`;
  return [
    `## ${table.title}`,
    '',
    row(table.headers),
    `|${table.headers.map((_, column) => (column === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
    ...table.rows.map(row),
    ...(table.notes?.length ? ['', ...table.notes.map((note) => `- ${note}`)] : []),
  ].join('\n');
}
