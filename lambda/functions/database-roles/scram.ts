import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/** PostgreSQL's own default (`scram_iterations`). */
export const SCRAM_ITERATIONS = 4096;

/** Printable ASCII: where SASLprep, which PostgreSQL applies to a password before hashing, changes nothing. */
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** Raised when a password cannot be turned into the verifier PostgreSQL would compute for it. */
export class PasswordFormatError extends Error {
  override readonly name = 'PasswordFormatError';
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802 and 7677, the format of
 * `pg_authid.rolpassword`): `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, all base64.
 *
 * A role is created with this instead of its password, so the password itself never leaves the function
 * that read it from Secrets Manager: not in the SQL sent through the Data API, not in CloudTrail, not in
 * PostgreSQL's statement log. The verifier is a salted, iterated hash; signing in still needs the password.
 *
 * @param password - printable ASCII, as Secrets Manager generates it (other characters would need SASLprep)
 * @example
 * scramSha256Verifier(password); // 'SCRAM-SHA-256$4096:...$...:...'
 */
export function scramSha256Verifier(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): string {
  if (typeof password !== 'string' || !PRINTABLE_ASCII.test(password)) {
    // Never echo the password: name only what is wrong with it.
    throw new PasswordFormatError(
      'the password must be a non-empty string of printable ASCII characters (as Secrets Manager generates it); ' +
        'other characters are normalised by SASLprep in PostgreSQL, which this function does not implement',
    );
  }
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
