import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The cleanup of embedded PostgreSQL servers left behind, driven the way it runs: a process starting
 * embedded PostgreSQL reaps first. Everything happens in a private temp folder (TMPDIR of the child
 * processes), so no real server folder of another run is ever in reach.
 */

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleeper = () => spawn('sleep', ['120'], { stdio: 'ignore' });
const stillRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null && alive(child.pid as number);

async function deadPid(): Promise<number> {
  const child = spawn('true');
  await new Promise((done) => child.once('exit', done));
  return child.pid as number;
}

/** A node process that starts embedded PostgreSQL with `base` as its temp folder and prints its URL. */
function startPostgresIn(base: string, then: 'stay' | 'stop'): { child: ChildProcess; ready: Promise<string> } {
  const module = pathToFileURL(resolve('local/postgres.ts')).href;
  const script =
    `const { startPostgres } = await import(${JSON.stringify(module)});` +
    'const server = await startPostgres();' +
    'process.stdout.write(server.url + "\\n");' +
    (then === 'stop' ? 'await server.close(); process.exit(0);' : 'setInterval(() => {}, 1 << 30);');
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: base };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const ready = new Promise<string>((done, fail) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split('\n')[0];
      if (output.includes('\n') && line) done(line);
    });
    let errors = '';
    child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.once('exit', (code) => fail(new Error(`the child exited (${code}) before PostgreSQL was ready: ${errors}`)));
  });
  return { child, ready };
}

/** A folder as an embedded server leaves it: an owner record naming `creator`, and a postmaster.pid naming `postmaster`. */
async function plant(base: string, name: string, options: { creator?: number; postmaster: number; ownerUid?: number }): Promise<string> {
  const folder = join(base, name);
  await mkdir(join(folder, 'data'), { recursive: true });
  await chmod(folder, 0o755);
  if (options.creator !== undefined) await writeFile(join(folder, 'sqs-inbox-owner.pid'), String(options.creator), { mode: 0o644 });
  await writeFile(join(folder, 'data', 'postmaster.pid'), `${options.postmaster}\n${join(folder, 'data')}\n1700000000\n5432\n`);
  if (options.ownerUid !== undefined) {
    for (const path of [folder, join(folder, 'data'), join(folder, 'data', 'postmaster.pid'), join(folder, 'sqs-inbox-owner.pid')]) {
      if (existsSync(path)) await chown(path, options.ownerUid, options.ownerUid);
    }
  }
  return folder;
}

describe.skipIf(process.platform !== 'linux' || process.getuid?.() !== 0)('embedded PostgreSQL: reaping only what is ours (as root)', () => {
  let base: string;
  const sleepers: ChildProcess[] = [];
  const watch = (child: ChildProcess) => {
    sleepers.push(child);
    return child;
  };
  let planted: { other: string; reused: string; living: string; starting: string };
  let victims: { other: ChildProcess; reused: ChildProcess; living: ChildProcess; creator: ChildProcess };
  let orphan: { folder: string; postmaster: number };
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // Arrange
    base = await mkdtemp(join(tmpdir(), 'sqs-inbox-reap-test-'));
    await chmod(base, 0o755);
    victims = { other: watch(sleeper()), reused: watch(sleeper()), living: watch(sleeper()), creator: watch(sleeper()) };
    const gone = await deadPid();
    planted = {
      // Planted by another user, naming an unrelated live process.
      other: await plant(base, 'sqs-inbox-pg-planted', { creator: gone, postmaster: victims.other.pid as number, ownerUid: 65534 }),
      // Ours, creator dead, but its postmaster.pid names a live process that is not a postmaster of it.
      reused: await plant(base, 'sqs-inbox-pg-reused', { creator: gone, postmaster: victims.reused.pid as number }),
      // Ours, and its creator is still running.
      living: await plant(base, 'sqs-inbox-pg-living', { creator: victims.creator.pid as number, postmaster: victims.living.pid as number }),
      // Ours, without an owner record yet: a folder another process is still making.
      starting: await plant(base, 'sqs-inbox-pg-starting', { postmaster: await deadPid() }),
    };
    // A real orphan: a process started embedded PostgreSQL and was killed outright.
    const first = startPostgresIn(base, 'stay');
    children.push(first.child);
    await first.ready;
    const folders = (await readdir(base)).filter((entry) => entry.startsWith('sqs-inbox-pg-') && !Object.values(planted).includes(join(base, entry)));
    expect(folders).toHaveLength(1);
    const folder = join(base, folders[0] as string);
    orphan = { folder, postmaster: Number((await readFile(join(folder, 'data', 'postmaster.pid'), 'utf8')).split('\n')[0]) };
    first.child.kill('SIGKILL');
    await new Promise((done) => first.child.once('exit', done));
    expect(alive(orphan.postmaster)).toBe(true);

    // Act: the next process to start embedded PostgreSQL reaps.
    const second = startPostgresIn(base, 'stop');
    children.push(second.child);
    await second.ready;
    await new Promise((done) => second.child.once('exit', done));
  }, 90_000);

  afterAll(async () => {
    for (const child of [...sleepers, ...children]) child.kill('SIGKILL');
    if (orphan && alive(orphan.postmaster)) process.kill(orphan.postmaster, 'SIGKILL');
    if (base) await rm(base, { recursive: true, force: true });
  });

  it('does not signal an unrelated live process that a folder planted by another user names', () => {
    expect(stillRunning(victims.other)).toBe(true);
    expect(existsSync(planted.other)).toBe(true);
  });

  it('does not signal a live process that is not the postmaster of our dead creator folder, and removes that folder', () => {
    expect(stillRunning(victims.reused)).toBe(true);
    expect(existsSync(planted.reused)).toBe(false);
  });

  it('touches nothing in a folder whose creator is alive, or whose owner record is not written yet', () => {
    expect(stillRunning(victims.living)).toBe(true);
    expect(existsSync(join(planted.living, 'data', 'postmaster.pid'))).toBe(true);
    expect(existsSync(join(planted.starting, 'data'))).toBe(true);
  });

  it('stops the real postmaster of an orphan whose creator was killed, and removes its folder', () => {
    expect(alive(orphan.postmaster)).toBe(false);
    expect(existsSync(orphan.folder)).toBe(false);
  });
});
