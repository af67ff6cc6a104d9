import { request as httpRequest, type IncomingMessage } from 'node:http';
import { BadRequestException } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendOversized } from '../../support/oversized-request.js';
import { rejectionOf, startHarness, type Harness } from './harness.js';

const MiB = 1024 * 1024;

/**
 * Streams up to `totalBytes` of a JSON body to the Execute route, honouring back-pressure, and stops when
 * the answer arrives. Returns the answer and how much had been written by then.
 */
function streamBody(
  endpoint: string,
  totalBytes: number,
  headers: Record<string, string> = {},
): Promise<{ response: IncomingMessage; body: string; written: number }> {
  return new Promise((resolve, reject) => {
    let written = 0;
    let answered = false;
    const request = httpRequest(`${endpoint}/Execute`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (response) => {
      answered = true;
      const at = written;
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => {
        request.destroy();
        resolve({ response, body, written: at });
      });
    });
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
    if (headers['content-length']) {
      request.flushHeaders();
      return;
    }
    const chunk = Buffer.alloc(MiB, 0x20);
    request.write('{"sql": "SELECT 1", "padding": "');
    const pump = () => {
      while (!answered && written < totalBytes) {
        written += chunk.length;
        if (!request.write(chunk)) {
          request.once('drain', pump);
          return;
        }
      }
      if (!answered) request.end('"}');
    };
    pump();
  });
}

describe('local Data API: request size limit', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('request_limit');
  });
  afterAll(async () => h?.close());

  it('refuses a body over 4 MiB while it streams in, long before the client has sent it all', async () => {
    const { response, body, written } = await streamBody(h.server.endpoint, 64 * MiB);
    expect(response.statusCode).toBe(400);
    expect(response.headers['x-amzn-errortype']).toMatch(/^BadRequestException:/);
    expect(JSON.parse(body).message).toContain('at most 4 MiB');
    // Socket buffers let the client run a few MiB ahead of the server; the whole 64 MiB never has to go.
    expect(written).toBeLessThan(24 * MiB);
  });

  it('refuses a body whose Content-Length is over 4 MiB without waiting for any of it', async () => {
    const { response, body } = await streamBody(h.server.endpoint, 0, { 'content-length': String(200 * MiB) });
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(body).message).toBe(
      'The request body is 209715200 bytes; the Data API accepts at most 4 MiB (4194304 bytes). Send fewer parameter sets per BatchExecuteStatement, or smaller values.',
    );
  });

  it.each(['content-length', 'chunked'] as const)(
    'answers a client sending a 20 MB body (%s) with the refusal it can read, and no broken pipe',
    async (framing) => {
      for (let i = 0; i < 3; i++) {
        const outcome = await sendOversized(`${h.server.endpoint}/Execute`, { 'content-type': 'application/json' }, 20 * MiB, framing);
        expect({ ...outcome, text: JSON.parse(outcome.text).message }).toEqual({
          status: 400,
          text: expect.stringContaining('at most 4 MiB'),
          writeError: undefined,
        });
      }
    },
  );

  it('answers the SDK a BadRequestException, once, for a batch over 4 MiB, and serves the next call on the same client', async () => {
    const sets = Array.from({ length: 6 }, () => [{ name: 'v', value: { stringValue: 'x'.repeat(MiB) } }]);
    const error = await rejectionOf(h.batch('SELECT :v', sets));
    expect(error).toBeInstanceOf(BadRequestException);
    expect(error.$metadata.attempts).toBe(1);
    expect(error.message).toContain('at most 4 MiB');
    expect((await h.execute('SELECT 1')).records).toEqual([[{ longValue: 1 }]]);
  });
});
