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
  BUILT_IN_MIGRATION_SETS,
  CLEANUP_METRICS,
  CLEANUP_SERVICE_NAME,
  CONSUMER_COUNT_METRICS,
  CONSUMER_LATENCY_METRICS,
  DEFAULT_MIN_RECORD_DURATION,
  DEFAULT_OUTBOX_MIN_AGE,
  DEFAULT_OUTBOX_SENT_RETENTION,
  DEFAULT_OUTBOX_SWEEP_LIMIT,
  INBOX_METRICS_NAMESPACE,
  InboxAlarms,
  InboxCleanup,
  InboxConsumer,
  InboxDatabase,
  InboxDatabaseRole,
  InboxFunction,
  InboxOutboxRelay,
  InboxQueue,
  InboxSecretRotation,
  KAFKA_DEFAULT_POLLERS,
  KAFKA_MAX_TIMEOUT_SECONDS,
  MAX_MIGRATION_SET_BYTES,
  MIN_CLEANUP_TIMEOUT,
  MIN_OUTBOX_RELAY_TIMEOUT,
  MigrationSet,
  OUTBOX_RELAY_METRICS,
  OUTBOX_SERVICE_NAME,
  STREAM_DEFAULT_BATCH_SIZE,
  STREAM_DEFAULT_RETRY_ATTEMPTS,
} = cdk;
export { PeerDependencyError };
