import { InboxConfigError, InboxError, PermanentError } from '../errors.js';

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
 * The schema's validator threw or rejected instead of answering: it gave no verdict on the body (an async
 * refinement whose lookup failed, a bug in a refinement), so the body is not at fault and the record is not
 * a {@link ParseError}. The record fails and is delivered again; if the validator keeps failing, the
 * retries take it to the dead-letter queue (or, on a stream, until the event source mapping gives up).
 * To make a refinement's failure permanent, throw a `PermanentError` from it: the record then fails with a
 * `ParseError`, as for a body the schema refused.
 */
export class SchemaValidatorError extends InboxError {
  override name = 'SchemaValidatorError';
}

/**
 * Builds a `parse` option from a Standard Schema validator: the body is decoded (`JSON.parse` by default),
 * then validated. A body the schema refuses is a `ParseError`: permanent, so `onPermanentError` decides
 * whether it is retried into the dead-letter queue or parked. The message names each field at fault:
 * `body.amountCents: Invalid input: expected number, received string`.
 *
 * A schema that validates asynchronously (zod's async refinements) is awaited: the inbox parses every
 * record of the batch before its first database call. A validator that throws or rejects instead of
 * answering fails the record with a {@link SchemaValidatorError} (delivered again), not a `ParseError`.
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
): (body: string) => Output | Promise<Output> {
  if (typeof schema?.['~standard']?.validate !== 'function') {
    throw new InboxConfigError(
      'parse',
      "parseWith() needs a Standard Schema validator (an object with '~standard'.validate), such as a zod 3.24+, valibot 1 or ArkType 2 schema",
    );
  }
  const decode = options.decode ?? ((body: string): unknown => JSON.parse(body));
  const standard = schema['~standard'];
  const failed = (error: unknown): never => {
    if (error instanceof PermanentError) throw error;
    throw new SchemaValidatorError(
      `the ${standard.vendor} schema's validator failed instead of answering (${error instanceof Error ? error.message : String(error)}); the body was not judged`,
      { cause: error },
    );
  };
  return (body) => {
    const value = decode(body);
    let result: ReturnType<typeof standard.validate>;
    try {
      result = standard.validate(value);
    } catch (error) {
      return failed(error);
    }
    return result instanceof Promise ? result.then(verdict, failed) : verdict(result);
  };
}

/** The value the schema gave, or the issues it found, thrown: `parse`'s throw is the record's ParseError. */
function verdict<Output>(result: StandardResult<Output>): Output {
  if (result.issues !== undefined) throw new Error(result.issues.map(describeIssue).join('; '));
  return result.value;
}

function describeIssue(issue: StandardIssue): string {
  const path = (issue.path ?? []).map((step) => String(typeof step === 'object' ? step.key : step));
  return `${['body', ...path].join('.')}: ${issue.message}`;
}
