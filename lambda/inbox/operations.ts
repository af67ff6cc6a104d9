/**
 * What runs beside the handlers (package export `sqs-inbox/operations`), from a script, a scheduled
 * function or a deployment: the schema migrations (the inbox's own, then yours; `migrateDsql` on Aurora DSQL), the purge of old claims, and the parked messages
 * (list, show, discard, redrive), the redrive of a dead-letter queue that keeps each message's key, and the
 * import of a hand-rolled dedup table's rows as claims, each over a transport (`dataApi({...})`,
 * `postgres(pool)`, `dsql({...})`). `parkedMessages(handler)` lists and replays what a handler's consumer parked.
 *
 * @example
 * import { migrate, purge } from 'sqs-inbox/operations';
 */
export { migrate } from './sql/schema.js';
export { migrateDsql } from './transport/dsql/migrations.js';
export type { InboxMigration, InboxMigrationSet, MigrationReport } from './sql/schema.js';
export { InboxError, MigrationChangedError, ParkedCollisionError } from './errors.js';
export { purge } from './sql/purge.js';
export type { PurgeOptions, PurgeReport } from './sql/purge.js';
export { parkedMessageStore } from './parked/store.js';
export { parkedMessages } from './parked/parking.js';
export type { InboxTransport } from './transport/transport.js';
export type {
  ParkedMessage,
  ParkedMessages,
  ParkedMessageReader,
  ParkedMessageStore,
} from './parked/store.js';
export { redriveParked } from './parked/redrive.js';
export type { RedriveOptions, RedriveResult } from './parked/redrive.js';
export { redriveDeadLetters } from '../operations/dead-letter-redrive.js';
export type { DeadLetterRedriveOptions, DeadLetterRedriveReport } from '../operations/dead-letter-redrive.js';
export { importClaims } from '../operations/claims-import.js';
export type { ClaimsImportOptions, ClaimsImportReport } from '../operations/claims-import.js';
