import type { CaseContext, Expected } from './expectations.js';
import type { Built } from './lambda-sources.js';
import type { TransportName } from '../../support/transport.js';

// The defects the adversarial suite knows of and leaves out of its properties FOR NOW, so that the branch
// merges while they are being fixed. Each entry names where it is written down; the lead deletes an entry
// once its fix is merged, and the properties then generate those cases again and hold the fix to the
// invariant. A case an entry matches is taken out of the generated batch (the record, with its re-sends)
// or, for a log line, out of the check that no body bytes reach the log. `npm run fuzz -- --with-known`
// (INBOX_FUZZ_KNOWN=include) generates them anyway, to watch them fail.

/** A log line as the recording logger keeps it. */
export interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly extra: readonly unknown[];
}

/** What a record-level entry is judged on: the record, what may become of it, and the records before it. */
export interface DefectScene extends CaseContext {
  /** The transport of the vitest project. */
  readonly transport: TransportName;
  /** True when an operator reads the parked rows back (list, replay, redrive), not only the handler writes them. */
  readonly operated: boolean;
  readonly record: Built;
  readonly expected: Expected;
  /** The records delivered before it in the case (earlier generations, and earlier in its own), with theirs. */
  readonly earlier: readonly { readonly record: Built; readonly expected: Expected }[];
}

/** A send of tx.send, as the outbox property plans it. */
export interface SendPlan {
  readonly fifo: boolean;
  readonly body: string;
  readonly groupId: string;
  readonly attributes: Readonly<Record<string, string>>;
}

export interface KnownDefect {
  /** Where the defect is written down: the issue's item, or the `it.fails` test that shows it. */
  readonly reference: string;
  /** The case it covers, in words. */
  readonly what: string;
  /** The records it takes out of the generated cases. */
  readonly record?: (scene: DefectScene) => boolean;
  /** The log lines it takes out of the check that no body bytes are logged. */
  readonly logLine?: (line: LogLine) => boolean;
  /** The sends of tx.send it takes out of the outbox property; `deliverable`: whether SQS would take the send. */
  readonly send?: (send: SendPlan, deliverable: boolean) => boolean;
}

/** Issue 33's numbered defects (/work/wt/briefs/issue-33.md), as the cases of the generators they cover. */
export const ISSUE_33_DEFECTS: readonly KnownDefect[] = [];

/**
 * Defects this suite found beyond the issue's list. Each has an `it.fails` test that shows it on its own, in
 * the test file of the code at fault (the suite's first ones were fixed with issue 33; their tests are now
 * plain tests there); the entry keeps the property green until it is fixed.
 */
export const FOUND_DEFECTS: readonly KnownDefect[] = [];

/** Whether the run generates the known defects' cases anyway: `INBOX_FUZZ_KNOWN=include`. */
export const INCLUDE_KNOWN = process.env.INBOX_FUZZ_KNOWN === 'include';

/** The entries the suite applies: none with INCLUDE_KNOWN. */
export const EXCLUDED: readonly KnownDefect[] = INCLUDE_KNOWN ? [] : [...ISSUE_33_DEFECTS, ...FOUND_DEFECTS];
