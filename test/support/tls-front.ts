import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

/** A self-signed certificate for localhost and 127.0.0.1, made with openssl. */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'inbox-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A TLS front that started; `passwords` are the PasswordMessages clients sent, in order. */
export interface TlsFront {
  readonly port: number;
  readonly passwords: string[];
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;

/**
 * What RDS Proxy is to a client, for TLS: it answers PostgreSQL's SSLRequest with 'S', terminates TLS with
 * `certificate`, and relays the plaintext to `upstreamPort`. It refuses a client that does not ask for TLS,
 * and records every password a client sends (the cleartext PasswordMessage an RDS IAM token travels in).
 */
export async function startTlsFront(upstreamPort: number, certificate: { key: string; cert: string }): Promise<TlsFront> {
  const passwords: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.once('data', (first) => {
      if (first.length < 8 || first.readInt32BE(4) !== SSL_REQUEST) {
        socket.destroy();
        return;
      }
      socket.write('S');
      const secure = new tls.TLSSocket(socket, { isServer: true, ...certificate });
      const upstream = net.connect(upstreamPort, '127.0.0.1');
      sockets.add(upstream);
      upstream.on('close', () => (sockets.delete(upstream), secure.destroy()));
      upstream.on('error', () => secure.destroy());
      secure.on('error', () => upstream.destroy());
      secure.on('close', () => upstream.destroy());
      upstream.on('data', (chunk) => secure.write(chunk));
      let buffered = Buffer.alloc(0);
      let startup = true;
      secure.on('data', (chunk: Buffer) => {
        upstream.write(chunk);
        // Parse the client's messages only to find its password: the startup message has no type byte.
        buffered = Buffer.concat([buffered, chunk]);
        for (;;) {
          const header = startup ? 4 : 5;
          if (buffered.length < header) break;
          const length = buffered.readInt32BE(startup ? 0 : 1);
          const total = startup ? length : length + 1;
          if (buffered.length < total) break;
          if (!startup && buffered[0] === 0x70) passwords.push(buffered.subarray(5, total - 1).toString('utf8'));
          buffered = buffered.subarray(total);
          startup = false;
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    passwords,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
