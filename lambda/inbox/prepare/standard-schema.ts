import { InboxConfigError, ParseError } from '../errors.js';
import { parseJson } from './json-body.js';

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
 * then validated. A refused body throws a `ParseError`: permanent, so `onPermanentError` decides whether it
 * is retried into the dead-letter queue or parked. Its message names each field at fault, `the zod schema
 * refused the body at body.amountCents`, and leaves the schema's own messages out, since validators quote
 * the values they refuse (`expected 5 but received 7`), and the message goes to the log and the parked row;
 * `{ issueMessages: true }` adds them: `body.amountCents: Invalid input: expected number, received string`.
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
    /**
     * Adds each issue's message to the ParseError, which the log and the parked row keep: validators' messages
     * can quote the body's values, so this is for bodies that may be logged.
     * @default false
     */
    readonly issueMessages?: boolean | undefined;
  } = {},
): (body: string) => Output {
  if (typeof schema?.['~standard']?.validate !== 'function') {
    throw new InboxConfigError(
      'parse',
      "parseWith() needs a Standard Schema validator (an object with '~standard'.validate), such as a zod 3.24+, valibot 1 or ArkType 2 schema",
    );
  }
  const decode = options.decode ?? parseJson;
  const standard = schema['~standard'];
  return (body) => {
    const result = standard.validate(decode(body));
    if (result instanceof Promise) {
      result.catch(() => undefined); // never awaited: its rejection must not become an unhandled one
      throw new ParseError(`the ${standard.vendor} schema validated asynchronously; parse must be synchronous: drop the async refinements`);
    }
    if (result.issues !== undefined) throw new ParseError(refusal(standard.vendor, result.issues, options.issueMessages === true));
    return result.value;
  };
}

function refusal(vendor: string, issues: readonly StandardIssue[], withMessages: boolean): string {
  if (withMessages) return issues.map((issue) => `${issuePath(issue)}: ${issue.message}`).join('; ');
  return (
    `the ${vendor} schema refused the body at ${issues.map(issuePath).join(', ')}; ` +
    'its messages are left out, as they can quote the body (parseWith(schema, { issueMessages: true }) keeps them)'
  );
}

/** Where in the body an issue is, as `body.items.0.sku`: the names, never the values. */
function issuePath(issue: StandardIssue): string {
  const path = (issue.path ?? []).map((step) => String(typeof step === 'object' ? step.key : step));
  return ['body', ...path].join('.');
}
