import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * How the local servers (Data API, SQS) read a request body under their service's limit, and how they
 * refuse one over it so that the client can read the refusal.
 */

/** The body, or the refusal as soon as it is known to pass the limit. */
export type BoundedBody = { readonly kind: 'body'; readonly text: string } | { readonly kind: 'tooLarge'; readonly declaredBytes: number | undefined };

/**
 * After refusing an oversized body, how long the rest of it is read and thrown away, at most, before the
 * connection is closed (20 MB through loopback take a quarter of a second). Closing at once, with unread
 * bytes, makes the kernel reset the connection: a client still writing its body gets EPIPE or ECONNRESET,
 * and may lose the answer.
 */
const LINGER_AFTER_REFUSAL_MS = 1_000;

/**
 * Reads a request body up to `limit` bytes. A Content-Length over the limit is refused before a byte is
 * read; a streamed body as soon as it passes the limit. A refused body is never kept; answer the refusal
 * with {@link refuseBody}.
 */
export function readBoundedBody(request: IncomingMessage, limit: number): Promise<BoundedBody> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve({ kind: 'tooLarge', declaredBytes: declared });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stop();
        chunks.length = 0;
        resolve({ kind: 'tooLarge', declaredBytes: undefined });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve({ kind: 'body', text: Buffer.concat(chunks).toString('utf8') });
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

/**
 * Answers a refused body so that the client can read the answer: the answer goes out at once, on a
 * connection kept open (no `Connection: close`, which would close it as soon as the answer is out), while
 * the rest of the body is read and discarded. A body through by then leaves the connection ready for the
 * client's next request; one still unfinished {@link LINGER_AFTER_REFUSAL_MS} after the answer has its
 * connection closed. (Node's own client stops writing once it has the whole answer; others send it all.)
 */
export function refuseBody(request: IncomingMessage, response: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  if (response.headersSent || response.destroyed) return;
  request.resume();
  response.once('finish', () => {
    if (request.complete) return;
    const timer = setTimeout(() => request.socket.destroy(), LINGER_AFTER_REFUSAL_MS);
    timer.unref();
    request.once('end', () => clearTimeout(timer));
  });
  response.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
  response.end(body);
}
