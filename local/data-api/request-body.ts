import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, DataApiError } from './errors.js';
import { JsonSyntaxError, parseJson } from './json.js';
import type { RequestBody } from './requests.js';

/** The Data API's HTTP request limit, headers included (§3.4); the body alone is checked here. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** The refusal of a body over the request limit, answered before the rest of the body is read. */
export class RequestTooLarge extends DataApiError {}

/**
 * After refusing an oversized body, how long the rest of it is read and thrown away before the connection
 * is closed: closing at once, with unread bytes, would make the kernel reset the connection, and the
 * client could lose the answer.
 */
const LINGER_AFTER_REFUSAL_MS = 1_000;

/**
 * The request body as a JSON object. A body over 4 MiB is refused as soon as it is known to be too large
 * (from Content-Length, or while it streams in), never read into memory whole.
 */
export function readBody(request: IncomingMessage): Promise<RequestBody> {
  return new Promise((resolve, reject) => {
    const tooLarge = (size: string) =>
      new RequestTooLarge(
        'BadRequestException',
        `The request body is ${size}; the Data API accepts at most 4 MiB (4194304 bytes). Send fewer parameter sets per BatchExecuteStatement, or smaller values.`,
      );
    const declared = Number(request.headers['content-length']);
    if (declared > MAX_REQUEST_BYTES) {
      reject(tooLarge(`${declared} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        // The stream keeps flowing with no listener: the rest of the body is discarded as it arrives.
        stop();
        chunks.length = 0;
        reject(tooLarge(`over ${MAX_REQUEST_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') {
        resolve({});
        return;
      }
      try {
        const parsed = parseJson(text);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new JsonSyntaxError('not an object');
        resolve(parsed as RequestBody);
      } catch (error) {
        reject(badRequest(`The request body is not a JSON object (${error instanceof Error ? error.message : String(error)}).`));
      }
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}

/** After the refusal is sent, the rest of the body is discarded for a moment, then the connection closed. */
export function lingerThenClose(request: IncomingMessage, response: ServerResponse): void {
  request.resume();
  response.once('finish', () => {
    if (request.complete) return;
    const timer = setTimeout(() => request.socket.destroy(), LINGER_AFTER_REFUSAL_MS);
    timer.unref();
    request.once('end', () => clearTimeout(timer));
  });
}
