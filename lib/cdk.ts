/**
 * What `import 'sqs-inbox/cdk'` loads: the constructs (index.ts), once their peers are known to be
 * installed. The constructs import aws-cdk-lib and constructs statically, and an ES module's imports
 * are resolved before any of its code runs, so a missing peer would end in Node's bare
 * ERR_MODULE_NOT_FOUND; this module checks first, then imports the constructs, and names every value of
 * index.ts (an ES module cannot re-export a dynamic import's names; a test keeps the two lists equal).
 * `require` and the types go to index.ts directly.
 * @module
 */
import { PeerDependencyError, importPeer } from '../lambda/inbox/peers.js';

/** The command that installs what `sqs-inbox/cdk` needs. */
const INSTALL = 'npm install aws-cdk-lib constructs';
const missing = (packageName: string) => (cause: unknown) => new PeerDependencyError('sqs-inbox/cdk', packageName, INSTALL, cause);
// constructs first: aws-cdk-lib itself needs it, and would fail naming it from inside aws-cdk-lib.
await importPeer('constructs', () => import('constructs'), missing('constructs'));
await importPeer('aws-cdk-lib', () => import('aws-cdk-lib'), missing('aws-cdk-lib'));
const cdk = await import('./index.js');

export const {
  InboxAlarms,
  InboxCleanup,
  InboxConstructError,
  InboxConsumer,
  InboxDatabase,
  InboxDatabaseProxy,
  InboxDatabaseRole,
  InboxDsqlConsumer,
  InboxDsqlDatabase,
  InboxFunction,
  InboxOutboxRelay,
  InboxQueue,
  InboxSecretRotation,
  InboxSources,
  MigrationSet,
  connectToPostgres,
} = cdk;
export { PeerDependencyError };
