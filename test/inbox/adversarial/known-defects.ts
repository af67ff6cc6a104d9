import { MARKER, isWellFormed } from './hostile-values.js';
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

/** Whether the record may end refused for good (and so, under `park`, stored in the parked table). */
export const mayBeRefused = (expected: Expected) => !expected.canApply || expected.causes.size > 0;

/** Every string a value holds, object keys included (walked without recursion: the JSON may be deep). */
function strings(value: unknown): string[] {
  const found: string[] = [];
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') found.push(item);
    else if (Array.isArray(item)) pending.push(...item);
    else if (typeof item === 'object' && item !== null) for (const [key, inner] of Object.entries(item)) pending.push(key, inner);
  }
  return found;
}

/** The record's body text, parsed as JSON when it is JSON. */
function parsedBody(scene: DefectScene): unknown {
  const text = scene.source.bodyText(scene.record);
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Whether a record can reach the statement of statementBatch: it has a key and a body that parses (its
 * effect's refusal aside, which a fix of the cause and a replay or redrive take away).
 */
function reachesBatchStatement(scene: DefectScene): boolean {
  const { source, record } = scene;
  return (
    scene.mode === 'statementBatch' &&
    'ok' in source.keyOf(record, scene.producerKeys) &&
    source.bodyError(record) === undefined &&
    source.parses(record) !== 'no'
  );
}

/** Issue 33's numbered defects (/work/wt/briefs/issue-33.md), as the cases of the generators they cover. */
export const ISSUE_33_DEFECTS: readonly KnownDefect[] = [];

/**
 * Defects this suite found beyond the issue's list. Each has an `it.fails` test in new-defects.test.ts that
 * shows it on its own; the entry keeps the property green until it is fixed.
 */
export const FOUND_DEFECTS: readonly KnownDefect[] = [
  {
    reference: 'new-defects.test.ts: statementBatch, a body its JSON parameter cannot encode',
    what: 'in statementBatch, a deeply nested body overflows the stack while the batch parameter is encoded (the Data API transport takes the throw for a network failure of unknown outcome): the record fails as temporary on every delivery, never applied nor parked',
    record: (scene) => reachesBatchStatement(scene) && scene.record.plan.payload.kind === 'deep' && scene.record.plan.payload.depth >= 5_000,
  },
  {
    reference: 'new-defects.test.ts: kafkaInbox with a header key, a null record',
    what: 'a null Kafka record keyed by a header throws a raw TypeError while its key is read: a temporary failure of no id, so the whole batch fails, every delivery',
    record: (scene) => scene.source.service === 'kafka' && scene.producerKeys && scene.record.plan.shape === 'null',
  },
  {
    reference: 'new-defects.test.ts: parked rows near 1 MiB cannot be read back on the Data API',
    what: 'a parked message whose row is near 1 MiB (an SQS body at the limit, a stream payload at its limit) exceeds the Data API response limit when read back: its replay and redrive fail, and so does a list that holds it',
    record: (scene) =>
      scene.operated &&
      scene.transport === 'data-api' &&
      scene.policy === 'park' &&
      mayBeRefused(scene.expected) &&
      (['at-limit', 'over-limit'].includes(scene.record.plan.payload.kind) ||
        (scene.record.plan.payload.kind === 'change' && scene.record.plan.payload.atLimit)),
  },
  {
    reference: 'new-defects.test.ts: redriveParked sends back what SQS can no longer take',
    what: "a parked SQS message of 1 MiB is redriven with the idempotency-key attribute added, over SQS's limit: marked redriven, its claim released, it is never sent, and on a FIFO queue it holds back its group",
    record: (scene) =>
      scene.operated &&
      scene.source.service === 'sqs' &&
      scene.policy === 'park' &&
      mayBeRefused(scene.expected) &&
      ['at-limit', 'over-limit'].includes(scene.record.plan.payload.kind),
  },
  {
    reference: 'new-defects.test.ts: tx.send with U+0000 or a lone surrogate',
    what: "a send whose body, group id or attributes hold U+0000 or a lone surrogate fails the outbox's insert (jsonb refuses it): its record fails as temporary on every delivery",
    send: (send) => sendTexts(send).some((text) => text.includes('\u0000') || !isWellFormed(text)),
  },
  {
    reference: 'new-defects.test.ts: tx.send takes what SQS refuses',
    what: 'tx.send takes a send SQS refuses for good (a character SQS does not carry, a group id it refuses, an attribute name it refuses or the key attribute, an empty attribute value, more than 1 MiB): the record commits, the send never arrives, and on a FIFO queue it holds back its group',
    send: (send, deliverable) => !deliverable && send.body.length > 0 && !sendTexts(send).some((text) => text.includes('\u0000') || !isWellFormed(text)),
  },
];

/** Every text of a send that reaches the outbox's row. */
function sendTexts(send: SendPlan): string[] {
  return [send.body, ...(send.fifo ? [send.groupId] : []), ...Object.entries(send.attributes).flat()];
}

/** Whether the run generates the known defects' cases anyway: `INBOX_FUZZ_KNOWN=include`. */
export const INCLUDE_KNOWN = process.env.INBOX_FUZZ_KNOWN === 'include';

/** The entries the suite applies: none with INCLUDE_KNOWN. */
export const EXCLUDED: readonly KnownDefect[] = INCLUDE_KNOWN ? [] : [...ISSUE_33_DEFECTS, ...FOUND_DEFECTS];
