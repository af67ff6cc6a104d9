// The equivalent mutants of `npm run mutate`: mutants no test can kill, because the mutated code behaves the
// same or never runs. They are recorded here, not as `// Stryker disable` comments in the code: a comment
// applies to the line below it, and stops applying, silently, when a formatter or a refactor moves the code
// (two of them in the Data API session did). tools/mutate/equivalent-ignorer.mjs reports each one as Ignored,
// with its reason; test/package/equivalent-mutants.test.ts fails `npm test` when an entry no longer finds its
// code, and tools/mutate/check-equivalents.mjs (run by run.mjs before Stryker starts) when an entry would hide
// a mutant of another mutator.
//
// An entry names the mutated code, not a line number:
// - file: the source file, from the repository root.
// - code: the source text of the mutated expression, exactly as in the file. The ignorer marks the syntax node
//   with exactly this text, and everything inside it, so the smallest expression that holds the mutant is the
//   right one: the string literal, not the call around it.
// - scope: optional, text that occurs once in the file (a function's head, a line): the entry means the first
//   occurrence of code from there on. Without it, code must occur once in the file.
// - mutators: the Stryker mutators whose mutants of that code are equivalent (check-equivalents.mjs fails when the
//   node holds a mutant of another one).
// - reason: why no test can kill them. It is what the report shows.

/** @type {readonly import('./equivalent-mutants.d.mts').EquivalentMutant[]} */
export const EQUIVALENT_MUTANTS = [
  {
    file: 'lambda/inbox/transport/data-api/transport.ts',
    code: 'provider ?? 1',
    mutators: ['LogicalOperator'],
    reason: "an RDSDataClient's resolved config always holds maxAttempts as a provider function (resolveRetryConfig), so this branch never runs",
  },
  {
    file: 'lambda/inbox/lanes/lanes.ts',
    code: 'new Array(records.length)',
    mutators: ['ArrayDeclaration'],
    reason: 'every index of outcomes is assigned before it is returned, so its initial length does not matter',
  },
  {
    file: 'lambda/inbox/lanes/lanes.ts',
    scope: "const lane = record.lane ?? '';",
    code: "''",
    mutators: ['StringLiteral'],
    reason: 'the fallback lane name is only a Map key',
  },
  {
    file: 'lambda/inbox/modes/statement-set.ts',
    code: "'statementBatch.sql'",
    mutators: ['StringLiteral'],
    reason: 'the statement was checked at cold start, so this check never throws',
  },
  {
    file: 'lambda/inbox/modes/batch-modes.ts',
    scope: "checkGatedStatement(mode.sql, params, 'statementBatch.sql')",
    code: "'statementBatch.sql'",
    mutators: ['StringLiteral'],
    reason: 'the statement was checked at cold start, so this check never throws',
  },
  {
    file: 'lambda/inbox/modes/batch-modes.ts',
    code: '[batchInputRow(message, new Uint8Array(), 0)]',
    mutators: ['ArrayDeclaration'],
    reason: "the replay's claim is made already; the hash column is never read",
  },
  {
    file: 'lambda/inbox/modes/batch-mode-runner.ts',
    code: 'new Array(prepared.length)',
    mutators: ['ArrayDeclaration'],
    reason: 'every index is filled before it is returned, so the starting length never shows',
  },
  {
    file: 'lambda/inbox/modes/batch-mode-runner.ts',
    code: '{ cause: error }',
    mutators: ['ObjectLiteral'],
    reason: 'the cause is kept for a debugger; the log and the outcome show only name and message',
  },
  {
    file: 'lambda/inbox/modes/batch-mode-runner.ts',
    scope: "blocked.add(p.record.lane ?? '')",
    code: "''",
    mutators: ['StringLiteral'],
    reason: 'an ordered batch has a lane on every record (a source gives lanes to all or none), so the fallback never runs',
  },
  {
    file: 'lambda/inbox/modes/batch-mode-runner.ts',
    scope: "!blocked.has(p.record.lane ?? '')",
    code: "''",
    mutators: ['StringLiteral'],
    reason: 'an ordered batch has a lane on every record (a source gives lanes to all or none), so the fallback never runs',
  },
  {
    file: 'lambda/inbox/sources/dynamodb.ts',
    code: 'record.raw?.eventID',
    mutators: ['OptionalChaining'],
    reason: 'a null record also has no dynamodb object, and prepare() reports that in place of any key error',
  },
  {
    file: 'lambda/inbox/sources/dynamodb.ts',
    code: "'shard'",
    mutators: ['StringLiteral'],
    reason: 'every record of the batch gets the same lane, so its name never shows',
  },
  {
    file: 'lambda/inbox/sources/stream-report.ts',
    scope: "const lane = record.lane ?? '';",
    code: "''",
    mutators: ['StringLiteral'],
    reason: 'stream sources give every record a lane; the fallback is only a Set key',
  },
  {
    file: 'lambda/inbox/sources/sqs.ts',
    scope: "awsRegion: '',",
    code: 'false',
    mutators: ['BooleanLiteral'],
    reason: "fifo only sets the record's lane, and a replay runs one record and never reads it",
  },
  {
    file: 'lambda/inbox/sources/sqs.ts',
    scope: 'lane: fifo ?',
    code: "''",
    mutators: ['StringLiteral'],
    reason: 'the fallback group name is only a Map key',
  },
  {
    file: 'lambda/inbox/prepare/keys.ts',
    code: 'record.attributes?.MessageDeduplicationId',
    mutators: ['OptionalChaining'],
    reason: "Lambda's SQS records always carry attributes",
  },
  {
    file: 'lambda/inbox/prepare/prepare.ts',
    code: '{ cause: error }',
    mutators: ['ObjectLiteral'],
    reason: 'the cause is for a debugger; the message already carries its text',
  },
  {
    file: 'lambda/inbox/transport/data-api/session.ts',
    scope: 'async begin(',
    code: "new DataApiError('BeginTransaction', 'rejected', false, 'the response held no transactionId')",
    mutators: ['StringLiteral', 'BooleanLiteral'],
    reason: 'unreachable: a successful BeginTransaction always returns a transactionId',
  },
  {
    file: 'lambda/inbox/transport/data-api/failures.ts',
    code: '(error as { name?: string })?.name',
    mutators: ['OptionalChaining'],
    reason: 'the SDK never throws null or undefined',
  },
  {
    file: 'lambda/inbox/transport/data-api/failures.ts',
    code: "'Error'",
    mutators: ['StringLiteral'],
    reason: 'the SDK never throws null or undefined, and its errors all have a name',
  },
  {
    file: 'lambda/inbox/transport/data-api/failures.ts',
    code: '(error as { message?: string })?.message',
    mutators: ['OptionalChaining'],
    reason: 'the SDK never throws null or undefined',
  },
  {
    file: 'lambda/inbox/transport/data-api/failures.ts',
    code: '(error as { $metadata?: { httpStatusCode?: number } })?.$metadata',
    mutators: ['OptionalChaining'],
    reason: 'the SDK never throws null or undefined',
  },
  {
    file: 'lambda/inbox/transport/data-api/failures.ts',
    code: "'TimeoutError'",
    mutators: ['StringLiteral'],
    reason: "without this case a reset falls to 'network', just as ambiguous",
  },
  {
    file: 'lambda/inbox/transport/data-api/results.ts',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of a template literal in results.ts
    code: '`column${index}`',
    mutators: ['StringLiteral'],
    reason:
      "includeResultMetadata is set, so every column has metadata with a non-empty label (PostgreSQL's JDBC driver gives the alias as both label and name)",
  },
  {
    file: 'lambda/inbox/transport/data-api/results.ts',
    scope: "(column?.typeName ?? '')",
    code: "''",
    mutators: ['StringLiteral'],
    reason: 'any fallback type name that is not a listed case gives the same default, the text',
  },
  {
    file: 'lambda/inbox/transport/data-api/results.ts',
    scope: 'array.arrayValues ??',
    code: '[]',
    mutators: ['ArrayDeclaration'],
    reason: 'the Data API always sets one of the typed arrays of an arrayValue',
  },
  {
    file: 'lambda/inbox/transport/data-api/results.ts',
    code: "'serial'",
    mutators: ['StringLiteral'],
    reason: 'PostgreSQL reports a serial column as int4; the typeName is never serial, nor empty',
  },
  {
    file: 'lambda/inbox/transport/data-api/results.ts',
    code: "'bigserial'",
    mutators: ['StringLiteral'],
    reason: 'PostgreSQL reports a bigserial column as int8; the typeName is never bigserial, nor empty',
  },
  {
    file: 'lambda/inbox/sql/claim.ts',
    scope: 'export function readClaim(',
    code: "throw new Error('the claim statement returned no row');",
    mutators: ['CallExpression', 'StringLiteral'],
    reason: 'unreachable: every claim statement ends in a SELECT without FROM, which returns exactly one row',
  },
  {
    file: 'lambda/inbox/modes/batch-mode-runner.ts',
    code: "throw new Error('unreachable');",
    mutators: ['CallExpression', 'StringLiteral'],
    reason: 'a BatchModeRunner runs only in the two batch modes, so the one left after batch-statement is batch-transaction',
  },
  {
    file: 'lambda/inbox/transport/data-api/results.ts',
    code: 'column?.name',
    mutators: ['OptionalChaining'],
    reason: 'includeResultMetadata is set, so every column has metadata with a non-empty label, and the name is never read',
  },
  {
    file: 'lambda/inbox/modes/statement-set.ts',
    code: 'true',
    mutators: ['BooleanLiteral'],
    reason:
      'the fit check measures the set statement as it is sent (inbox_strict true); false is one byte longer in the request, inside the 16 KiB the budget keeps below 4 MiB, so no set fits one way and not the other',
  },
];

/**
 * Where an entry's code is in its file's text: `{ start, end }` (character offsets), or `{ problem }` when the
 * entry does not find it once (its code moved or changed; say so, and update the entry or drop it).
 * @param {string} text the file's content
 * @param {import('./equivalent-mutants.d.mts').EquivalentMutant} entry
 * @returns {{ start: number, end: number } | { problem: string }}
 */
export function locate(text, entry) {
  const anchor = entry.scope ?? entry.code;
  const first = text.indexOf(anchor);
  if (first === -1) return { problem: `${JSON.stringify(anchor)} is not in the file` };
  if (text.indexOf(anchor, first + 1) !== -1) {
    return { problem: `${JSON.stringify(anchor)} occurs more than once; give the entry a scope that occurs once` };
  }
  const start = text.indexOf(entry.code, first);
  if (start === -1) return { problem: `${JSON.stringify(entry.code)} does not follow ${JSON.stringify(anchor)}` };
  return { start, end: start + entry.code.length };
}

/** The text the ignorer gives an entry's mutants: the reason, and where it is recorded. */
export function ignoreMessage(entry) {
  return `${entry.reason} (tools/mutate/equivalent-mutants.mjs)`;
}
