import type { IncomingMessage } from 'node:http';
import { readBoundedBody } from '../bounded-body.js';
import { badRequest, DataApiErrorResponse } from './errors.js';
import { JsonSyntaxError, parseJson } from './json.js';
import type { RequestBody } from './requests.js';

/** The Data API's HTTP request limit, headers included (§3.4); the body alone is checked here. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** The refusal of a body over the request limit, answered before the rest of the body is read. */
export class RequestTooLarge extends DataApiErrorResponse {}

/**
 * The request body as a JSON object. A body over 4 MiB is refused as soon as it is known to be too large
 * (from Content-Length, or while it streams in), never read into memory whole; answer the refusal with
 * `refuseBody`.
 */
export async function readBody(request: IncomingMessage): Promise<RequestBody> {
  const body = await readBoundedBody(request, MAX_REQUEST_BYTES);
  if (body.kind === 'tooLarge') {
    const size = body.declaredBytes === undefined ? `over ${MAX_REQUEST_BYTES} bytes` : `${body.declaredBytes} bytes`;
    throw new RequestTooLarge(
      'BadRequestException',
      `The request body is ${size}; the Data API accepts at most 4 MiB (4194304 bytes). Send fewer parameter sets per BatchExecuteStatement, or smaller values.`,
    );
  }
  if (body.text.trim() === '') return {};
  try {
    const parsed = parseJson(body.text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new JsonSyntaxError('not an object');
    return parsed as RequestBody;
  } catch (error) {
    throw badRequest(`The request body is not a JSON object (${error instanceof Error ? error.message : String(error)}).`);
  }
}
