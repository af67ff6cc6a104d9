import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliRun, databaseEnv } from '../support/cli.js';
import { inboxFixture } from '../support/inbox.js';
import type { InboxFixture } from '../support/inbox.js';

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

let db: InboxFixture;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`node scripts/build.mjs --js-only\` (npm test does).`);
  db = await inboxFixture('cli_claims');
  env = databaseEnv(db);
  await db.query('CREATE TABLE public.processed_messages (message_id text PRIMARY KEY, processed_at timestamptz NOT NULL DEFAULT now())');
  await db.query("INSERT INTO public.processed_messages (message_id) VALUES ('m-1'), ('m-2'), ('bad\nkey')");
});
afterAll(async () => db.close());

const IMPORT = ['claims', 'import', '--from', 'public.processed_messages', '--key-column', 'message_id', '--consumer', 'order-worker'];

describe('sqs-inbox claims import', () => {
  it('is listed in the help', async () => {
    expect((await cliRun(['--help'], {}, children)).stdout).toMatch(/\n {2}claims {6}imports a hand-rolled dedup table/);
  });

  it.each([
    ['no subcommand', ['claims'], 'give a subcommand: import'],
    ['no --from', ['claims', 'import', '--key-column', 'message_id', '--consumer', 'c'], '--from is required'],
    ['a bad --batch-size', [...IMPORT, '--batch-size', '0'], '--batch-size "0" must be a whole number from 1 to 10000'],
    ['a --where without =', [...IMPORT, '--where', 'consumer'], '--where takes COLUMN=TEXT, e.g. --where consumer=order-worker'],
    [
      'a --from that is not schema.table',
      ['claims', 'import', '--from', 'processed', '--key-column', 'k', '--consumer', 'c'],
      '--from must be the old table as schema.table',
    ],
  ])('refuses %s with exit 2, naming the fix', async (_, args, message) => {
    const result = await cliRun(args, args.includes('processed') ? env : {}, children);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });

  it('imports the keys as claims, idempotently, and lists the keys it could not import', async () => {
    const dry = await cliRun([...IMPORT, '--dry-run'], env, children);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('Dry run, nothing inserted: would import 2 claims');
    const first = await cliRun(IMPORT, env, children);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('not imported: "bad\\nkey":');
    expect(first.stdout).toContain('Read 3 rows of public.processed_messages. Imported 2 claims for consumer "order-worker"; 0 were claimed already; 1 keys');
    const again = await cliRun([...IMPORT, '--json'], env, children);
    expect(JSON.parse(again.stdout)).toMatchObject({ read: 3, imported: 0, alreadyClaimed: 2, refused: 1 });
    const claims = await db.query("SELECT message_id FROM inbox.consumed_message WHERE consumer_name = 'order-worker' ORDER BY 1");
    expect(claims.map((row) => row.message_id)).toEqual(['m-1', 'm-2']);
  });

  it('with --where, imports only the rows of one consumer from a shared table', async () => {
    await db.query('CREATE TABLE public.shared_processed (consumer text NOT NULL, message_id text NOT NULL)');
    await db.query("INSERT INTO public.shared_processed VALUES ('billing-worker', 's-1'), ('shipping-worker', 's-2')");
    const args = ['claims', 'import', '--from', 'public.shared_processed', '--key-column', 'message_id', '--consumer', 'billing-worker'];
    const result = await cliRun([...args, '--where', 'consumer=billing-worker', '--json'], env, children);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ read: 1, imported: 1 });
    const claims = await db.query("SELECT message_id FROM inbox.consumed_message WHERE consumer_name = 'billing-worker'");
    expect(claims.map((row) => row.message_id)).toEqual(['s-1']);
  });
});
