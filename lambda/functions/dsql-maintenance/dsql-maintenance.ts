import type { Context } from 'aws-lambda';
import { dsqlFromEnvironment } from '../../inbox/transport/dsql/index.js';
import { cleanupHandler } from '../purge/cleanup.js';
import { sweeperHandler } from '../outbox-sweeper/outbox-sweeper.js';
import { CALL_TIMEOUT_MS } from '../scheduled-session.js';
import type { ScheduledSession } from '../scheduled-session.js';
import { driverOf } from '../../inbox/transport/transport.js';

/**
 * The scheduled functions' session on Aurora DSQL, from INBOX_DSQL_ENDPOINT, INBOX_DSQL_REGION and INBOX_DSQL_USER
 * (as a consumer's `dsqlFromEnvironment()`): the function's own database role, signed in with `dsql:DbConnect`. Its
 * dialect keeps each purge batch within DSQL's 3,000 modified rows and runs a conflicting statement again.
 */
export const dsqlSession: ScheduledSession = (env) =>
  driverOf(dsqlFromEnvironment(env, { maxConnections: 1 })).open({ callTimeoutMs: CALL_TIMEOUT_MS, resumeDelaysMs: [] });

let purging: ReturnType<typeof cleanupHandler> | undefined;
let sweeping: ReturnType<typeof sweeperHandler> | undefined;

/**
 * The scheduled purge on Aurora DSQL (Lambda handler `index.purge`): lambda/functions/purge/cleanup.ts over
 * {@link dsqlSession}, configured from the environment on the first invocation.
 */
export const purge = (event: unknown, context: Context) => (purging ??= cleanupHandler(process.env, undefined, dsqlSession))(event, context);

/**
 * The scheduled outbox sweeper on Aurora DSQL (Lambda handler `index.sweep`): lambda/functions/outbox-sweeper/ over
 * {@link dsqlSession}, configured from the environment on the first invocation.
 */
export const sweep = (event: unknown, context: Context) => (sweeping ??= sweeperHandler(process.env, undefined, undefined, dsqlSession))(event, context);
