import { request } from 'node:http';

/** How a client that sends its whole oversized body fared: the answer, and whether its writes broke. */
export interface OversizedOutcome {
  readonly status: number;
  readonly text: string;
  /** The error of the request's own writes (EPIPE, ECONNRESET), if any. */
  readonly writeError: string | undefined;
}

/**
 * POSTs `bytes` of body to `url` with Node's client, writing it all unless the answer comes first (the
 * client then stops), honouring back-pressure, with a Content-Length or chunked; resolves once the
 * connection is closed, with the answer it got and how its writes ended.
 */
export function sendOversized(url: string, headers: Record<string, string>, bytes: number, framing: 'content-length' | 'chunked'): Promise<OversizedOutcome> {
  return new Promise((resolve) => {
    let status = 0;
    let text = '';
    let writeError: string | undefined;
    const req = request(
      url,
      { method: 'POST', headers: { ...headers, ...(framing === 'content-length' ? { 'content-length': String(bytes) } : {}) } },
      (res) => {
        status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => (writeError = error.code ?? error.message));
    req.on('close', () => resolve({ status, text, writeError }));
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    let written = 0;
    const pump = () => {
      while (written < bytes) {
        written += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}
