/** The sign-in of a database secret: what the Data API reads from it. */
export interface DatabaseCredentials {
  readonly username: string;
  readonly password: string;
}

/** Reads a database secret's sign-in. */
export type ReadSecret = (secretArn: string) => Promise<DatabaseCredentials>;

/** A secret's value cannot be read or is not a database sign-in. Never carries the value itself. */
export class SecretValueError extends Error {
  override readonly name = 'SecretValueError';
}

/**
 * The module is named through a variable so that esbuild leaves the import to the Lambda runtime, which
 * ships the AWS SDK v3 (the bundles mark `@aws-sdk/*` external), and TypeScript does not look for it here.
 */
const SECRETS_MANAGER_MODULE: string = '@aws-sdk/client-secrets-manager';

interface SecretsManagerModule {
  SecretsManagerClient: new (config: object) => { send(command: unknown): Promise<{ SecretString?: string }>; destroy(): void };
  GetSecretValueCommand: new (input: { SecretId: string }) => unknown;
}

/**
 * Reads a secret with the Secrets Manager client of the Lambda runtime's AWS SDK. Outside Lambda the
 * package `@aws-sdk/client-secrets-manager` must be installed.
 */
export const readSecretWithRuntimeSdk: ReadSecret = async (secretArn) => {
  let sdk: SecretsManagerModule;
  try {
    sdk = (await import(SECRETS_MANAGER_MODULE)) as SecretsManagerModule;
  } catch (error) {
    throw new SecretValueError(
      `cannot load ${SECRETS_MANAGER_MODULE} (${(error as Error).message}). The Lambda Node.js runtime provides it; ` +
        'elsewhere, install it next to sqs-inbox.',
    );
  }
  const client = new sdk.SecretsManagerClient({});
  try {
    const output = await client.send(new sdk.GetSecretValueCommand({ SecretId: secretArn }));
    return parseCredentials(secretArn, output.SecretString);
  } finally {
    client.destroy();
  }
};

/** Parses `{"username": ..., "password": ...}`, naming what is missing without echoing any value. */
export function parseCredentials(secretArn: string, secretString: string | undefined): DatabaseCredentials {
  let parsed: unknown;
  try {
    parsed = JSON.parse(secretString ?? '');
  } catch {
    throw new SecretValueError(`secret ${secretArn} does not hold a JSON object; a database secret holds {"username", "password", ...}.`);
  }
  const { username, password } = (parsed ?? {}) as { username?: unknown; password?: unknown };
  const missing = [typeof username === 'string' && username ? '' : 'username', typeof password === 'string' && password ? '' : 'password'].filter(Boolean);
  if (missing.length > 0) {
    throw new SecretValueError(`secret ${secretArn} has no ${missing.join(' or ')} string; a database secret holds {"username", "password", ...}.`);
  }
  return { username: username as string, password: password as string };
}
