/**
 * The entries beyond the runtime need packages the runtime does not (`sqs-inbox/producer` and
 * `sqs-inbox/outbox` the SQS client, `sqs-inbox/cdk` the CDK, `sqs-inbox/local` PostgreSQL): optional
 * peers, so that each audience installs only what it uses. A missing one is a {@link PeerDependencyError},
 * which names the package and the install command instead of Node's bare ERR_MODULE_NOT_FOUND.
 * Dependency-free, so that every entry can import it before its peers.
 */

/** An entry of sqs-inbox needs an optional peer package that is not installed; the message names the install command. */
export class PeerDependencyError extends Error {
  override name = 'PeerDependencyError';
  constructor(
    /** The entry that needs it: `sqs-inbox/producer`, `sqs-inbox/cdk`, ... */
    readonly entry: string,
    /** The missing package. */
    readonly packageName: string,
    /** The command that installs what the entry needs. */
    readonly install: string,
    cause: unknown,
    /** Said after the command, before the full stop. */
    remark = '',
  ) {
    super(`${entry} needs the package "${packageName}", which is not installed. Fix: ${install}${remark}.`, { cause });
  }
}

/** Whether `error` is Node's "cannot find package `packageName`" (from `import` or `require`). */
export function isMissingPackage(error: unknown, packageName: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const message = String((error as Error).message);
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && (message.includes(`'${packageName}'`) || message.includes(`'${packageName}/`));
}

/**
 * Runs `importer` (an `import()` of `packageName`, written out so that bundlers see it); a missing package
 * rejects with `missing(cause)` instead of Node's error.
 */
export async function importPeer<T>(packageName: string, importer: () => Promise<T>, missing: (cause: unknown) => Error): Promise<T> {
  try {
    return await importer();
  } catch (error) {
    throw isMissingPackage(error, packageName) ? missing(error) : error;
  }
}
