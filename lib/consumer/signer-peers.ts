// The signers a handler on the wire loads at its first sign-in: which of them a function's bundle leaves
// out, and the synth error for one its function needs but the app has not installed.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { INBOX_ENV } from '../../lambda/inbox/contract.js';
import { PeerDependencyError, isMissingPackage } from '../../lambda/inbox/peers.js';

interface Signer {
  readonly packageName: string;
  /** The entry of the package that imports it: what the error names. */
  readonly entry: string;
  /** Why this function needs it, when its environment says it signs in with it. */
  readonly needed: (environment: Readonly<Record<string, string>>) => string | undefined;
}

const SIGNERS: readonly Signer[] = [
  {
    packageName: '@aws-sdk/rds-signer',
    entry: 'sqs-inbox/postgres',
    needed: (environment) =>
      environment[INBOX_ENV.PG_IAM_AUTH] === 'true' ? `${INBOX_ENV.PG_IAM_AUTH}=true: it signs in to RDS Proxy with IAM authentication` : undefined,
  },
  {
    packageName: '@aws-sdk/dsql-signer',
    entry: 'sqs-inbox/dsql',
    needed: (environment) => (environment[INBOX_ENV.DSQL_ENDPOINT] === undefined ? undefined : `${INBOX_ENV.DSQL_ENDPOINT} is set: it signs in to Aurora DSQL`),
  },
];

/**
 * The signers to leave out of the bundle of `entry`: those not installed where it is. sqs-inbox/postgres and
 * sqs-inbox/dsql load theirs with `import()` at the first sign-in, and esbuild fails a bundle on an import
 * it cannot resolve with a bare "Could not resolve", even for a function that never signs in with it; left
 * out, it is the runtime's PeerDependencyError if it ever loads. A function whose environment says it signs
 * in with one fails the synth instead, with the PeerDependencyError that names the install command.
 */
export function absentSigners(entry: string, environment: Readonly<Record<string, string>>, owner: string): string[] {
  const from = createRequire(resolve(entry));
  const absent: string[] = [];
  for (const signer of SIGNERS) {
    const missing = resolutionError(from, signer.packageName);
    if (missing === undefined) continue;
    const why = signer.needed(environment);
    if (why !== undefined) {
      throw new PeerDependencyError(
        signer.entry,
        signer.packageName,
        `npm install ${signer.packageName}`,
        missing,
        ` (the function of ${owner} bundles it: ${why})`,
      );
    }
    absent.push(signer.packageName);
  }
  return absent;
}

/** Node's "cannot find" error when `packageName` is not installed where `from` looks; undefined when it is (or fails otherwise, for esbuild to say). */
function resolutionError(from: NodeJS.Require, packageName: string): unknown {
  try {
    from.resolve(packageName);
    return undefined;
  } catch (error) {
    return isMissingPackage(error, packageName) ? error : undefined;
  }
}
