/**
 * The PostgreSQL wire transport (package export `sqs-inbox/postgres`): the inbox over a node-postgres
 * pool, through RDS Proxy, to RDS or Aurora in a VPC, or to any PostgreSQL. Its own entry, so that a
 * consumer on the Data API bundles none of it.
 * @module
 */
export { postgres } from './transport.js';
export type { PostgresOptions } from './transport.js';
export { DatabaseCallError, InboxError, PostgresError } from '../../errors.js';
export type { PostgresPool, PostgresClient } from './postgres-session.js';
export type { InboxTransport } from '../transport.js';
export { postgresFromEnvironment } from './from-environment.js';
