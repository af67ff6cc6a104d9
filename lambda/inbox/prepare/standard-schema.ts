import { InboxConfigError } from '../errors.js';

/**
 * What `parseWith` needs of a validator: the Standard Schema interface (https://standardschema.dev), which
 * zod (3.24 and newer), valibot (1.0) and ArkType (2.0) implement. Declared here so that sqs-inbox depends
 * on no validation library.
 */
export interface StandardSchema<Output = unknown> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
  };
}

/** A Standard Schema validation result: the value, or the issues that refused it. */
export type StandardResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: readonly StandardIssue[] };

/** One reason a value was refused, with where in the value it was found. */
export interface StandardIssue {
  readonly message: string;
  readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined;
}

/**
 * Builds a `parse` option from a Standard Schema validator: the body is decoded (`JSON.parse` by default),
 * then validated. A refused body throws, and the inbox turns the throw into a `ParseError`: permanent, so
 * `onPermanentError` decides whether it is retried into the dead-letter queue or parked. The message
 * names each field at fault: `body.amountCents: Invalid input: expected number, received string`.
 *
 * The inbox parses synchronously (before any database call, so a bad body costs nothing): a schema that
 * validates asynchronously (zod's async refinements) is refused at the first record that meets it.
 *
 * @example
 * import { z } from 'zod';
 * const Payment = z.object({ paymentId: z.string(), amountCents: z.number().int() });
 * export const handler = inbox({ parse: parseWith(Payment), apply: async (tx, { body }) => { ... } });
 */
export function parseWith<Output>(
  schema: StandardSchema<Output>,
  options: {
    /**
     * Turns the body into the value the schema validates.
     * @default JSON.parse
     */
    readonly decode?: ((body: string) => unknown) | undefined;
  } = {},
): (body: string) => Output {
  if (typeof schema?.['~standard']?.validate !== 'function') {
    throw new InboxConfigError(
      'parse',
      "parseWith() needs a Standard Schema validator (an object with '~standard'.validate), such as a zod 3.24+, valibot 1 or ArkType 2 schema",
    );
  }
  const decode = options.decode ?? ((body: string): unknown => JSON.parse(body));
  const standard = schema['~standard'];
  return (body) => {
    const result = standard.validate(decode(body));
    if (result instanceof Promise) {
      result.catch(() => undefined); // never awaited: its rejection must not become an unhandled one
      throw new Error(`the ${standard.vendor} schema validated asynchronously; parse must be synchronous: drop the async refinements`);
    }
    if (result.issues !== undefined) throw new Error(result.issues.map(describeIssue).join('; '));
    return result.value;
  };
}

function describeIssue(issue: StandardIssue): string {
  const path = (issue.path ?? []).map((step) => String(typeof step === 'object' ? step.key : step));
  return `${['body', ...path].join('.')}: ${issue.message}`;
}
