import { DataApiErrorResponse } from './errors.js';

/** The database user and password a secret holds (what Secrets Manager's database secret gives the Data API). */
export interface SecretCredentials {
  readonly username: string;
  readonly password: string;
}

/**
 * The secrets one server accepts. A call names a secret with `secretArn`: the default secret connects
 * with the server URL's own user, each listed secret as its user. An ARN the server does not know is
 * refused as the service refuses a secret it cannot fetch (SecretsErrorException).
 */
export class Secrets {
  private readonly listed: Map<string, SecretCredentials>;

  constructor(
    /** The default secret: the server URL's credentials. */
    readonly defaultArn: string,
    listed: { readonly [secretArn: string]: SecretCredentials } = {},
  ) {
    const entries = new Map<string, SecretCredentials>();
    for (const [arn, credentials] of Object.entries(listed)) {
      if (arn === '') throw new RangeError('the local Data API: secrets has an empty secret ARN. Key each entry by the ARN calls will name.');
      if (arn === defaultArn) {
        throw new RangeError(
          `the local Data API: secrets lists ${arn}, which is the default secretArn (it always connects with the server URL's credentials). ` +
            'List the user under another ARN, or pass a different secretArn.',
        );
      }
      const { username, password } = (credentials ?? {}) as Partial<SecretCredentials>;
      if (typeof username !== 'string' || username === '' || typeof password !== 'string') {
        throw new RangeError(`the local Data API: secrets["${arn}"] must be { username, password } with a non-empty username string and a password string.`);
      }
      entries.set(arn, { username, password });
    }
    this.listed = entries;
  }

  /** Adds a secret for another database user (a scenario's consumer role), as `secrets` lists them at start. */
  add(secretArn: string, credentials: SecretCredentials): void {
    if (secretArn === this.defaultArn || this.listed.has(secretArn)) {
      throw new RangeError(`addSecret: ${secretArn} is taken; give the user a secret ARN of its own.`);
    }
    this.listed.set(secretArn, { username: credentials.username, password: credentials.password });
  }

  /** Removes a secret {@link add} added; calls naming it are refused from then on. */
  remove(secretArn: string): void {
    this.listed.delete(secretArn);
  }

  /**
   * The credentials a call's secret stands for: undefined for the default secret (the server URL's
   * user). An unknown ARN is a SecretsErrorException naming the ARNs this server accepts.
   */
  resolve(secretArn: string): SecretCredentials | undefined {
    if (secretArn === this.defaultArn) return undefined;
    const credentials = this.listed.get(secretArn);
    if (credentials) return credentials;
    throw new DataApiErrorResponse(
      'SecretsErrorException',
      `The secret provided wasn't found: ${secretArn}. This server accepts ${[this.defaultArn, ...this.listed.keys()].join(', ')}; ` +
        'add the secret to `startLocal({ dataApi: { secrets } })` to connect as another database user.',
    );
  }
}
