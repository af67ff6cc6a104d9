import type { FaultName } from './fault-schedule.js';

// The checks both public runners make of their options, once, each problem named with its fix.

/** Adds a problem when `value` is not a whole number of at least `min`. */
export function wholeNumber(problems: string[], name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) problems.push(`${name} must be a whole number of at least ${min}; got ${value}.`);
}

/** What a consumer's fields must be; `examples` shows the runner's own handler and effects query. */
export function checkConsumer(
  problems: string[],
  consumer: {
    readonly handler?: unknown;
    readonly message?: unknown;
    readonly effects?: unknown;
    readonly commitPoint?: unknown;
    readonly verify?: unknown;
    readonly expectedFailures?: unknown;
  },
  examples: { readonly handler: string; readonly effects: string },
): void {
  if (typeof consumer.handler !== 'function') problems.push(`handler must be a factory of your handler, e.g. ${examples.handler}.`);
  if (typeof consumer.message !== 'function') problems.push('message must be a function (index) => ({ key, body, groupId? }).');
  if (typeof consumer.effects !== 'string' || consumer.effects.trim() === '') problems.push(`effects must be SQL returning ${examples.effects}.`);
  const { commitPoint } = consumer;
  if (commitPoint !== undefined && commitPoint !== 'commit' && typeof (commitPoint as { statement?: unknown } | null)?.statement !== 'function') {
    problems.push("commitPoint must be 'commit' or { statement: (sql) => boolean }.");
  }
  if (consumer.verify !== undefined && typeof consumer.verify !== 'function')
    problems.push('verify must be a function (session) => problems, e.g. async (session) => { ... }.');
  const expected = consumer.expectedFailures;
  if (expected !== undefined && typeof expected !== 'function' && !(Number.isInteger(expected) && (expected as number) >= 0)) {
    problems.push(
      `expectedFailures must be a predicate on the key, e.g. (key) => key === 'res-13', or a whole number of messages; got ${JSON.stringify(expected)}.`,
    );
  }
}

/** Adds a problem naming the faults asked for that `known` does not hold. */
export function checkFaults(problems: string[], faults: readonly FaultName[], known: readonly FaultName[], where: string): void {
  const unknown = faults.filter((fault) => !known.includes(fault));
  if (unknown.length > 0) problems.push(`faults: ${unknown.map((f) => JSON.stringify(f)).join(', ')} ${where}; choose from ${known.join(', ')}.`);
}

/** Throws every problem at once, named by the runner. */
export function refuse(runner: string, problems: readonly string[]): void {
  if (problems.length > 0) throw new RangeError(`${runner}: ${problems.join(' ')}`);
}
