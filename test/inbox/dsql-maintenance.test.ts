import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dsqlSession } from '../../lambda/functions/dsql-maintenance/dsql-maintenance.js';
import { cleanupHandler } from '../../lambda/functions/purge/cleanup.js';
import { InboxConfigError } from '../../lambda/inbox/errors.js';
import { DSQL_INBOX_MIGRATIONS } from '../../lambda/inbox/transport/dsql/migrations.js';
import { migrateDsqlSession } from '../../lambda/inbox/transport/dsql/migrations.js';
import { DsqlSession } from '../../lambda/inbox/transport/dsql/session.js';
import { DSQL_PROFILE_EXEMPT, dsqlOnProfile, startDsqlProfile } from '../../local/dsql/profile.js';
import type { DsqlProfile } from '../../local/dsql/profile.js';
import type { DsqlTarget } from '../../lambda/inbox/transport/dsql/index.js';
import { freshDatabase } from '../support/database.js';
import { lambdaContext, recordingMetrics } from '../support/inbox.js';

let url: string;
let direct: pg.Pool;
let profile: DsqlProfile;
let target: DsqlTarget;
beforeAll(async () => {
  url = await freshDatabase('dsql_maintenance');
  direct = new pg.Pool({ connectionString: url, max: 2, options: DSQL_PROFILE_EXEMPT });
  profile = await startDsqlProfile(url);
  target = dsqlOnProfile(profile, { database: new URL(url).pathname.slice(1) });
  await migrateDsqlSession(new DsqlSession(target.pool, { callTimeoutMs: 10_000, resumeDelaysMs: [] }), [DSQL_INBOX_MIGRATIONS]);
  // DSQL's 3,000 modified rows per transaction, held by the profile from here on.
  await profile.enforceRowLimit();
});
afterAll(async () => {
  await target.pool.end();
  await profile.close();
  await direct.end();
});

describe('the scheduled functions on Aurora DSQL', () => {
  it('purges more rows than one DSQL transaction may modify, in batches within the limit, though the batch size asks for more', async () => {
    await direct.query(
      `INSERT INTO inbox.consumed_message (consumer_name, message_id, processed_at)
       SELECT 'orders', 'm-' || n, now() - interval '2 hours' FROM generate_series(1, 3500) AS n`,
    );
    await direct.query(`INSERT INTO inbox.consumed_message (consumer_name, message_id) VALUES ('orders', 'recent')`);
    const metrics = recordingMetrics();
    // The purge as the DSQL function runs it, over a DSQL session (here on the profile rather than dsqlSession's TLS and token).
    const purge = cleanupHandler(
      { INBOX_RETENTION_SECONDS: '3600', INBOX_PURGE_BATCH_SIZE: '5000' },
      metrics,
      () => new DsqlSession(target.pool, { callTimeoutMs: 10_000, resumeDelaysMs: [] }),
    );
    const report = await purge(
      undefined,
      lambdaContext(() => 300_000),
    );
    expect(report).toMatchObject({ deleted: 3500, batches: 2, moreRemaining: false });
    expect(metrics.published).toEqual([{ PurgedRows: [3500], PurgeMoreRemaining: [0], OldestRowAgeSeconds: [expect.any(Number)] }]);
    expect((await direct.query('SELECT message_id FROM inbox.consumed_message')).rows).toEqual([{ message_id: 'recent' }]);
    expect(profile.violations).toEqual([]);
  });

  it('signs in as the role INBOX_DSQL_USER names, on the cluster INBOX_DSQL_ENDPOINT names, with DSQL dialect', () => {
    const session = dsqlSession({
      INBOX_DSQL_ENDPOINT: 'abcdefghijklmnopqrstuvwxyz.dsql.eu-west-1.on.aws',
      INBOX_DSQL_USER: 'inbox_purge',
      AWS_REGION: 'eu-west-1',
    });
    expect(session).toBeInstanceOf(DsqlSession);
    expect(session.dialect).toMatchObject({ maxModifiedRows: 3000 });
    expect(() => dsqlSession({ INBOX_DSQL_USER: 'inbox_purge', AWS_REGION: 'eu-west-1' })).toThrow(InboxConfigError);
    expect(() => dsqlSession({ INBOX_DSQL_ENDPOINT: 'abcdefghijklmnopqrstuvwxyz.dsql.eu-west-1.on.aws', AWS_REGION: 'eu-west-1' })).toThrow(/INBOX_DSQL_USER/);
  });
});
