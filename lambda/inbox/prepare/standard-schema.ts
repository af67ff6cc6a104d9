import { InboxConfigError, InboxError, ParseError, PermanentError } from '../errors.js';
import { parseJson } from './json-body.js';

/**
 * What `parseWith` needs of a validator: the Standard Schema interface (https://standardschema.dev), which
 * zod (3.24 and newer), valibot (1.0) and ArkType (2.0) implement. Declared here so that sqs-inbox depends
 * on no validation library; its result and issue types live in the namespace of the same name, as in the
 * spec's own `StandardSchemaV1`.
 */
export interface StandardSchema<Output = unknown> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    /** The value, or the issues that refused it; a schema with asynchronous refinements answers with a promise of either. */
    readonly validate: (value: unknown) => StandardSchema.Result<Output> | Promise<StandardSchema.Result<Output>>;
  };
}

/** The types of a Standard Schema validator's answer: `StandardSchema.Result` and `StandardSchema.Issue`. */
export declare namespace StandardSchema {
  /** A validation's answer: the value, or the issues that refused it. */
  type Result<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: readonly Issue[] };

  /** One reason a value was refused, with where in the value it was found. */
  interface Issue {
    /** The validator's own words; they can quote the value, so `parseWith` leaves them out unless asked. */
    readonly message: string;
    /** Where in the value: property names and indexes, or segments holding one as `key`. */
    readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined;
  }
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
 * then validated. A refused body throws a `ParseError`: permanent, so `onPermanentError` decides whether it
 * is retried into the dead-letter queue or parked. Its message names each field at fault, `the zod schema
 * refused the body at body.amountCents`, and leaves the schema's own messages out, since validators quote
 * the values they refuse (`expected 5 but received 7`), and the message goes to the log and the parked row;
 * `{ issueMessages: true }` adds them: `body.amountCents: Invalid input: expected number, received string`.
 *
 * A schema that validates asynchronously (zod's async refinements) is awaited: the inbox parses every
 * record of the batch before its first database call. A validator that throws or rejects instead of
 * answering fails the record with a `SchemaValidatorError` (delivered again), not a `ParseError`.
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
): (body: string) => Output | Promise<Output> {
  if (typeof schema?.['~standard']?.validate !== 'function') {
    throw new InboxConfigError(
      'parse',
      "parseWith() needs a Standard Schema validator (an object with '~standard'.validate), such as a zod 3.24+, valibot 1 or ArkType 2 schema",
    );
  }
  const decode = options.decode ?? parseJson;
  const standard = schema['~standard'];
  const failed = (error: unknown): never => {
    if (error instanceof PermanentError) throw error;
    // The thrown message is left out, as a ParseError's is: a validator's own error can quote the body.
    throw new SchemaValidatorError(
      `the ${standard.vendor} schema's validator threw ${error instanceof Error ? error.name : `a ${typeof error}`} instead of answering; the body was not judged`,
      { cause: error },
    );
  };
  /** The value the schema gave, or the issues it found, thrown as the record's ParseError. */
  const verdict = (result: StandardSchema.Result<Output>): Output => {
    if (result.issues !== undefined) throw new ParseError(refusal(standard.vendor, result.issues, options.issueMessages === true));
    return result.value;
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

function refusal(vendor: string, issues: readonly StandardSchema.Issue[], withMessages: boolean): string {
  if (withMessages) return issues.map((issue) => `${issuePath(issue)}: ${issue.message}`).join('; ');
  return (
    `the ${vendor} schema refused the body at ${issues.map(issuePath).join(', ')}; ` +
    'its messages are left out, as they can quote the body (parseWith(schema, { issueMessages: true }) keeps them)'
  );
}

/** Where in the body an issue is, as `body.items.0.sku`: the names, never the values. */
function issuePath(issue: StandardSchema.Issue): string {
  const path = (issue.path ?? []).map((step) => String(typeof step === 'object' ? step.key : step));
  return ['body', ...path].join('.');
}
