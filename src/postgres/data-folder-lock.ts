/**
 * One process per data folder: embedded PostgreSQL (PGlite) keeps its data in a folder that only
 * one process may open, or acknowledged writes are lost. A lock file beside the folder names the
 * process that holds it; one left by a process that died is taken over (see docs/postgres.md).
 * @module
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { link, mkdir, readFile, realpath, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { DataFolderError } from '../errors/data-folder-error.js';

/** A data folder this process holds until {@link DataFolderLock.release}. */
export interface DataFolderLock {
  /** The folder, as an absolute path with links resolved. */
  readonly folder: string;
  /** The lock file: the folder's path with `.lock` added, beside it. */
  readonly file: string;
  /** Give the folder up (remove the lock file once no holder in this process is left). Idempotent. */
  release(): Promise<void>;
}

/** What a lock file holds. */
interface Holder {
  readonly pid: number;
  readonly host: string;
  /** The holder's boot and start time, to tell it from a later process given the same pid. */
  readonly started: string | null;
  readonly token: string;
  readonly since: string;
}

/** A lock held by this process, shared by the holders that took it. */
interface Held {
  readonly token: string;
  holders: number;
}

// On globalThis, so that two copies of the package in one process (ESM and CommonJS) see one table.
const TABLE = Symbol.for('api-conventions.data-folder-locks');
type Table = Map<string, Held>;

function table(): Table {
  const scope = globalThis as { [TABLE]?: Table };
  let held = scope[TABLE];
  if (held === undefined) {
    held = new Map();
    scope[TABLE] = held;
    // A process that ends without releasing (process.exit, an uncaught error) leaves no lock behind.
    process.once('exit', () => {
      for (const [file, { token }] of held ?? []) removeSync(file, token);
    });
  }
  return held;
}

/** How many times a takeover by another process is waited for before giving up. */
const TRIES = 100;
const TRY_EVERY_MS = 10;

/**
 * Take the data folder of an embedded database for this process, before opening it: a second
 * process (or a second lock in this one) is refused with a {@link DataFolderError}
 * `data_folder_in_use` naming the folder and the process that holds it. A lock left by a process
 * that is no longer alive (killed, or its machine restarted) is taken over. The folder is created
 * when missing.
 * @param folder - the folder given to PGlite (`new PGlite(folder)`)
 * @throws DataFolderError `data_folder_in_use` when a live process holds it,
 *   `data_folder_unlockable` when the lock file cannot be written
 * @example
 * ```ts
 * const lock = await lockDataFolder('./.data');
 * const database = new PGlite('./.data');
 * const repository = await PostgresSubscriptionRepository.open({ database });
 * // at shutdown
 * await repository.close();
 * await database.close();
 * await lock.release();
 * ```
 */
export async function lockDataFolder(folder: string): Promise<DataFolderLock> {
  return take(folder, false);
}

/**
 * The lock of the folder for a holder in this process: shared with the one this process holds
 * already (the repository opened on a PGlite whose folder its caller locked), else taken.
 * @internal
 */
export function shareDataFolderLock(folder: string): Promise<DataFolderLock> {
  return take(folder, true);
}

/**
 * The local folder of a PGlite instance, or `undefined` for one in memory (no `dataDir`,
 * `memory://`) or in a browser store (`idb://`, `opfs-ahp://`, ...), and for anything else.
 * @internal
 */
export function localDataDir(database: unknown): string | undefined {
  let dataDir: unknown;
  try {
    dataDir = (database as { dataDir?: unknown } | null)?.dataDir;
  } catch {
    return undefined;
  }
  if (typeof dataDir !== 'string') return undefined;
  const path = dataDir.startsWith('file://') ? dataDir.slice('file://'.length) : dataDir;
  if (path === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return undefined;
  return path;
}

/**
 * The folder's path with links resolved, its parent created where missing. The folder itself is
 * left to PGlite: a PGlite made just before the repository opens looks, as it starts, for its
 * folder and creates it when missing, and a folder created here in between (file system calls run
 * on other threads) would fail its start with EEXIST.
 */
async function realFolder(wanted: string): Promise<string> {
  try {
    return await realpath(wanted);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'ENOENT') throw error;
  }
  const parent = dirname(wanted);
  await mkdir(parent, { recursive: true });
  return join(await realpath(parent), basename(wanted));
}

async function take(given: string, share: boolean): Promise<DataFolderLock> {
  const wanted = resolve(given);
  let folder: string;
  try {
    folder = await realFolder(wanted);
  } catch (cause) {
    throw unlockable(wanted, `${wanted} cannot be created or read`, cause);
  }
  const file = `${folder}.lock`;
  const locks = table();
  const mine = locks.get(file);
  if (mine !== undefined) {
    if (!share) throw inUse(folder, file, ownHolder(mine.token));
    mine.holders += 1;
    return handle(folder, file, mine);
  }
  const held: Held = { token: randomBytes(16).toString('hex'), holders: 1 };
  const holder: Holder = {
    pid: process.pid,
    host: hostname(),
    started: startOf(process.pid) ?? null,
    token: held.token,
    since: new Date().toISOString(),
  };
  let last: Holder | undefined;
  for (let tries = 0; tries < TRIES; tries += 1) {
    if (await create(folder, file, holder)) {
      locks.set(file, held);
      return handle(folder, file, held);
    }
    const found = await read(folder, file);
    if (found === 'gone') continue; // released meanwhile: try again at once
    last = found ?? last;
    if (found !== undefined && alive(found)) throw inUse(folder, file, found);
    // Left by a process that is gone (or unreadable): take it over, one process at a time.
    if (!(await takeOver(folder, file, found))) {
      await new Promise((wake) => setTimeout(wake, TRY_EVERY_MS));
    }
  }
  throw inUse(folder, file, last);
}

function handle(folder: string, file: string, held: Held): DataFolderLock {
  let released = false;
  return Object.freeze({
    folder,
    file,
    async release(): Promise<void> {
      if (released) return;
      released = true;
      held.holders -= 1;
      if (held.holders > 0) return;
      const locks = table();
      if (locks.get(file) === held) locks.delete(file);
      const found = await read(folder, file).catch(() => undefined);
      if (typeof found === 'object' && found.token === held.token) {
        await unlink(file).catch(() => undefined);
      }
    },
  });
}

/**
 * Write the lock file whole, or find it there: the text goes to a file of its own, linked to the
 * lock's name (atomic, refused when the name exists), so a reader never sees half a lock.
 */
async function create(folder: string, file: string, holder: Holder): Promise<boolean> {
  const draft = `${file}.${holder.token}`;
  try {
    await writeFile(draft, `${JSON.stringify(holder)}\n`, { flag: 'wx' });
    await link(draft, file);
    return true;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw unlockable(folder, `the lock file ${file} cannot be written`, cause);
  } finally {
    await unlink(draft).catch(() => undefined);
  }
}

/** The holder a lock file names, `'gone'` when there is none, `undefined` when it is unreadable. */
async function read(folder: string, file: string): Promise<Holder | 'gone' | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw unlockable(folder, `the lock file ${file} cannot be read`, cause);
  }
  return parse(text);
}

function parse(text: string): Holder | undefined {
  try {
    const value = JSON.parse(text) as Partial<Holder> | null;
    if (
      typeof value?.pid === 'number' &&
      Number.isSafeInteger(value.pid) &&
      value.pid > 0 &&
      typeof value.host === 'string' &&
      typeof value.token === 'string' &&
      (value.started === null || typeof value.started === 'string')
    ) {
      return {
        pid: value.pid,
        host: value.host,
        started: value.started,
        token: value.token,
        since: typeof value.since === 'string' ? value.since : '',
      };
    }
  } catch {
    // not JSON: not a lock this module wrote
  }
  return undefined;
}

/**
 * Whether the process a lock names may still work in the folder. A lock of another machine (or
 * container) cannot be checked from here: it counts as alive.
 */
function alive(holder: Holder): boolean {
  if (holder.host !== hostname()) return true;
  if (holder.pid === process.pid) {
    // This process holds only the locks in its table: one with its pid and another token was
    // left by an earlier process that had the same pid (pid 1 in a container, restarted).
    return [...table().values()].some((held) => held.token === holder.token);
  }
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    // EPERM: alive, another user's.
  }
  // The pid is in use; by the holder, unless it started at another time (the pid was reused).
  const now = startOf(holder.pid);
  return holder.started === null || now === undefined || now === holder.started;
}

/**
 * Remove a stale lock under a takeover file, so that of two processes finding it stale, one takes
 * it; a takeover file whose process died (it is held for a few statements) is removed.
 * @returns whether this process removed the stale lock or found it gone
 */
async function takeOver(folder: string, file: string, stale: Holder | undefined): Promise<boolean> {
  const guard = `${file}.takeover`;
  const token = randomBytes(16).toString('hex');
  const me: Holder = {
    pid: process.pid,
    host: hostname(),
    started: startOf(process.pid) ?? null,
    token,
    since: new Date().toISOString(),
  };
  if (!(await create(folder, guard, me))) {
    const other = await read(folder, guard);
    if (typeof other === 'object' && !alive(other)) await unlink(guard).catch(() => undefined);
    return false;
  }
  try {
    const found = await read(folder, file);
    if (found === 'gone') return true;
    // Only the lock found stale: one written since by a live process stays.
    if (found?.token === stale?.token && (found === undefined) === (stale === undefined)) {
      await unlink(file).catch(() => undefined);
      return true;
    }
    return false;
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

function removeSync(file: string, token: string): void {
  try {
    if (parse(readFileSync(file, 'utf8'))?.token === token) unlinkSync(file);
  } catch {
    // gone already, or unreadable: nothing to remove
  }
}

/** The boot and start time of a process, where the system tells them (Linux), else undefined. */
function startOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces and parentheses): the 20th is
    // the start time, in clock ticks since boot.
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return start === undefined ? undefined : `${boot}/${start}`;
  } catch {
    return undefined;
  }
}

/** The holder this process writes for a token it holds. */
function ownHolder(token: string): Holder {
  return { pid: process.pid, host: hostname(), started: null, token, since: '' };
}

function inUse(folder: string, file: string, holder: Holder | undefined): DataFolderError {
  const who =
    holder === undefined
      ? 'another process'
      : holder.pid === process.pid && holder.host === hostname()
        ? `this process (pid ${holder.pid})`
        : `process ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}`;
  const since = holder?.since ? ` since ${holder.since}` : '';
  const remote =
    holder !== undefined && holder.host !== hostname()
      ? ` If that process is no longer running, delete ${file}.`
      : '';
  return new DataFolderError(
    'data_folder_in_use',
    `The data folder ${folder} is in use by ${who}${since}: embedded PostgreSQL allows one process per folder. Stop that process, or give this one another folder.${remote}`,
    { folder, pid: holder?.pid },
  );
}

function unlockable(folder: string, what: string, cause: unknown): DataFolderError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new DataFolderError(
    'data_folder_unlockable',
    `The data folder ${folder} cannot be locked: ${what} (${why}). Give a folder this process may write in.`,
    { folder, cause },
  );
}
