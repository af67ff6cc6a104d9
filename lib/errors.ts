import { formatViolation } from './invariants.js';
import type { InvariantViolation } from './invariants.js';

/**
 * The one error the constructs throw, when props cannot make a correct deployment: thrown while the construct is
 * built, before synth. Like the synth-time invariants it carries each problem as `{ problem, fix }`, so a caller
 * (or a test) reads what is wrong and the change that fixes it without parsing the message.
 *
 * @example
 * try {
 *   new InboxConsumer(stack, 'Worker', props);
 * } catch (error) {
 *   if (error instanceof InboxConstructError) for (const { problem, fix } of error.problems) console.error(problem, fix);
 * }
 */
export class InboxConstructError extends Error {
  /** `InboxConstructError`, for a log that prints only an error's name and message. */
  override name = 'InboxConstructError';

  constructor(
    /** What refused the props, with its construct path: `InboxConsumer Stack/Worker`. */
    readonly subject: string,
    /** Every problem found, each with its fix. */
    readonly problems: readonly {
      /** What is wrong, naming the prop and the values. */
      readonly problem: string;
      /** The change that fixes it. */
      readonly fix: string;
    }[],
    /** `list`: one problem a line (several checks ran together); `line`: one sentence. */
    layout: 'list' | 'line' = problems.length === 1 ? 'line' : 'list',
  ) {
    const lines = problems.map(formatViolation);
    super(layout === 'line' ? `${subject}: ${lines.join(' ')}` : `${subject}:\n  - ${lines.join('\n  - ')}`);
  }

  /**
   * The error for problems written as one sentence each, `<problem> Fix: <fix>`, as the constructs' checks collect
   * them: each is split at its last ` Fix: ` into `{ problem, fix }`.
   */
  static of(subject: string, written: readonly string[], layout: 'list' | 'line' = 'list'): InboxConstructError {
    return new InboxConstructError(subject, written.map(violationOf), layout);
  }
}

/** `<problem> Fix: <fix>` read back; a sentence without a fix is a problem whose fix is to report it. */
function violationOf(text: string): InvariantViolation {
  const at = text.lastIndexOf(' Fix: ');
  if (at < 0) return { problem: text, fix: 'this is a defect of sqs-inbox: report it with the construct and its props.' };
  return { problem: text.slice(0, at), fix: text.slice(at + ' Fix: '.length) };
}
