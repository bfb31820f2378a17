/**
 * One process per data folder: lockDataFolder takes a PGlite folder for this process, refuses it
 * while another live process holds it (naming the folder and the pid), takes over a lock left by a
 * process that died, and gives it up on release; the PostgreSQL repository takes it (or shares the
 * one its caller took) when it opens PGlite in a folder. Other processes are real child processes.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DataFolderError, dataFolderErrorCodes } from '../../src/errors/data-folder-error.js';
import { localDataDir, shareDataFolderLock } from '../../src/postgres/data-folder-lock.js';
import {
  type DataFolderLock,
  lockDataFolder,
  PostgresSubscriptionRepository,
} from '../../src/postgres/index.js';
import { DataFolderHolders } from '../support/data-folder-holders.js';
import { pgliteFolder, pgliteInMemory } from '../support/pglite-template.js';

const holders = new DataFolderHolders();
const folders: string[] = [];
afterEach(() => holders.stopAll());
afterAll(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

/** A fresh folder's path (not created: the lock creates it). */
async function aFolder(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'data-folder-'));
  folders.push(parent);
  return join(parent, 'pglite');
}

/** A fresh folder as PGlite initialised it (the run's template, copied): for PGlite to open. */
async function aPGliteFolder(): Promise<string> {
  return pgliteFolder(await aFolder());
}

/** No process has this pid: above the largest pid Linux gives (2^22). */
const DEAD_PID = 2 ** 22 + 4321;

/** A lock file as another process would have left it. */
function lockText(fields: Partial<Record<string, unknown>> = {}): string {
  return `${JSON.stringify({
    pid: DEAD_PID,
    host: hostname(),
    started: null,
    token: 'left-behind',
    since: '2025-01-01T00:00:00.000Z',
    ...fields,
  })}\n`;
}

async function refusal(promise: Promise<unknown>): Promise<DataFolderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DataFolderError);
  return error as DataFolderError;
}

const exists = (file: string) =>
  readFile(file, 'utf8').then(
    () => true,
    () => false,
  );

describe('lockDataFolder', () => {
  it('pins the codes of DataFolderError', () => {
    expect([...dataFolderErrorCodes]).toEqual(['data_folder_in_use', 'data_folder_unlockable']);
  });

  it('takes the folder: a lock file beside it names this process; a second lock in this process is refused', async () => {
    const folder = await aFolder();
    const lock = await lockDataFolder(folder);
    try {
      expect(lock.folder).toBe(folder);
      expect(lock.file).toBe(`${folder}.lock`);
      const held = JSON.parse(await readFile(lock.file, 'utf8'));
      expect(held).toMatchObject({ pid: process.pid, host: hostname() });
      const error = await refusal(lockDataFolder(folder));
      expect(error.code).toBe('data_folder_in_use');
      expect(error.folder).toBe(folder);
      expect(error.pid).toBe(process.pid);
      expect(error.message).toContain(folder);
      expect(error.message).toContain(`this process (pid ${process.pid})`);
    } finally {
      await lock.release();
    }
  });

  it('leaves a missing folder to PGlite, which creates it as it starts (EEXIST were it made here meanwhile): only its parent is created', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'data-folder-'));
    folders.push(parent);
    const folder = join(parent, 'missing', 'pglite');
    const lock = await lockDataFolder(folder);
    try {
      expect(lock.folder).toBe(folder);
      expect(existsSync(join(parent, 'missing'))).toBe(true);
      expect(existsSync(folder)).toBe(false);
    } finally {
      await lock.release();
    }
    // The documented order: PGlite made, then the folder locked at once (one fresh start: PGlite
    // initialises an empty folder in seconds).
    const started = join(parent, 'started');
    const database = new PGlite(started);
    const held = await lockDataFolder(started);
    await database.waitReady;
    expect(existsSync(join(started, 'PG_VERSION'))).toBe(true);
    await held.release();
    await database.close();
  });

  it('refuses a folder another live process holds, naming the folder and its pid, and takes it once that process is killed', async () => {
    const folder = await aFolder();
    const first = await holders.start(folder);
    expect(first.answer.held).toBe(true);
    const error = await refusal(lockDataFolder(folder));
    expect(error.code).toBe('data_folder_in_use');
    expect(error.pid).toBe(first.child.pid);
    expect(error.message).toContain(folder);
    expect(error.message).toContain(`process ${first.child.pid}`);
    // Another process is refused too.
    const second = await holders.start(folder);
    expect(second.answer).toMatchObject({ held: false, code: 'data_folder_in_use' });
    expect(second.answer.pid).toBe(first.child.pid);
    // SIGKILL leaves the lock file behind: its process is gone, so it is taken over.
    await first.kill();
    expect(await exists(`${folder}.lock`)).toBe(true);
    const lock = await lockDataFolder(folder);
    expect(JSON.parse(await readFile(lock.file, 'utf8')).pid).toBe(process.pid);
    await lock.release();
  });

  it('hands the folder on when its holder releases it', async () => {
    const folder = await aFolder();
    const first = await holders.start(folder);
    expect(await first.release()).toBe(0);
    expect(await exists(`${folder}.lock`)).toBe(false);
    const next = await holders.start(folder);
    expect(next.answer.held).toBe(true);
  });

  it('of processes finding one stale lock at once, exactly one takes it', async () => {
    const folder = await aFolder();
    await rm(folder, { recursive: true, force: true });
    await writeFile(`${folder}.lock`, lockText());
    const started = await Promise.all([1, 2, 3, 4].map(() => holders.start(folder)));
    const winners = started.filter((h) => h.answer.held);
    expect(winners).toHaveLength(1);
    const winner = winners[0]?.child.pid;
    for (const loser of started.filter((h) => !h.answer.held)) {
      expect(loser.answer).toMatchObject({ code: 'data_folder_in_use', pid: winner });
    }
  });

  it('takes over a lock left by an earlier process that had this pid (a restarted container)', async () => {
    const folder = await aFolder();
    await rm(folder, { recursive: true, force: true });
    await writeFile(`${folder}.lock`, lockText({ pid: process.pid }));
    const lock = await lockDataFolder(folder);
    expect(JSON.parse(await readFile(lock.file, 'utf8')).token).not.toBe('left-behind');
    await lock.release();
  });

  it('takes over a lock whose pid now belongs to a process started at another time', async () => {
    const folder = await aFolder();
    await rm(folder, { recursive: true, force: true });
    // The parent process is alive, but it is not the one that wrote this lock.
    await writeFile(`${folder}.lock`, lockText({ pid: process.ppid, started: 'another-boot/1' }));
    const lock = await lockDataFolder(folder);
    await lock.release();
  });

  it('takes over a lock file it cannot read (not written by this library)', async () => {
    const folder = await aFolder();
    await rm(folder, { recursive: true, force: true });
    await writeFile(`${folder}.lock`, 'garbage');
    const lock = await lockDataFolder(folder);
    await lock.release();
  });

  it('refuses a lock of another host, saying which file to delete if that process is gone', async () => {
    const folder = await aFolder();
    await rm(folder, { recursive: true, force: true });
    await writeFile(`${folder}.lock`, lockText({ host: 'elsewhere.example', pid: 7 }));
    const error = await refusal(lockDataFolder(folder));
    expect(error.code).toBe('data_folder_in_use');
    expect(error.pid).toBe(7);
    expect(error.message).toContain('process 7 on elsewhere.example');
    expect(error.message).toContain(`delete ${folder}.lock`);
  });

  it('a folder that cannot be made is a typed error naming it', async () => {
    const parent = await aFolder();
    await writeFile(`${parent}.file`, 'a file, not a folder');
    const error = await refusal(lockDataFolder(join(`${parent}.file`, 'pglite')));
    expect(error.code).toBe('data_folder_unlockable');
    expect(error.message).toContain(`${parent}.file`);
  });

  it('releases: the file goes, the folder can be locked again; a second release is harmless', async () => {
    const folder = await aFolder();
    const lock = await lockDataFolder(folder);
    await lock.release();
    await lock.release();
    expect(await exists(lock.file)).toBe(false);
    const again = await lockDataFolder(folder);
    await again.release();
  });
});

describe('the repository on PGlite in a folder', () => {
  it('open takes the folder when its caller did not, and close gives it up', async () => {
    const folder = await aPGliteFolder();
    const database = new PGlite(folder);
    try {
      const repository = await PostgresSubscriptionRepository.open({ database });
      expect(JSON.parse(await readFile(`${folder}.lock`, 'utf8')).pid).toBe(process.pid);
      // Another process is refused while the repository is open.
      const other = await holders.start(folder);
      expect(other.answer).toMatchObject({ held: false, code: 'data_folder_in_use' });
      expect(other.answer.pid).toBe(process.pid);
      await repository.close();
      expect(await exists(`${folder}.lock`)).toBe(false);
    } finally {
      await database.close();
    }
  });

  it('open shares the lock its caller took before new PGlite; the caller releases it', async () => {
    const folder = await aPGliteFolder();
    const lock = await lockDataFolder(folder);
    const database = new PGlite(folder);
    const repository = await PostgresSubscriptionRepository.open({ database });
    const second = await PostgresSubscriptionRepository.open({ database, schema: 'other' });
    await repository.close();
    await second.close();
    expect(await exists(lock.file)).toBe(true);
    await database.close();
    await lock.release();
    expect(await exists(lock.file)).toBe(false);
  });

  it('open refuses a folder another process holds, naming the folder and that pid', async () => {
    const folder = await aPGliteFolder();
    const holder = await holders.start(folder);
    expect(holder.answer.held).toBe(true);
    const database = new PGlite(folder);
    try {
      const error = await refusal(PostgresSubscriptionRepository.open({ database }));
      expect(error.code).toBe('data_folder_in_use');
      expect(error.pid).toBe(holder.child.pid);
      expect(error.message).toContain(folder);
    } finally {
      await database.close();
    }
  });

  it('locks a folder on disk only: not PGlite in memory or in a browser store', async () => {
    expect(localDataDir({ dataDir: undefined })).toBeUndefined();
    expect(localDataDir({ dataDir: 'memory://' })).toBeUndefined();
    expect(localDataDir({ dataDir: 'idb://app' })).toBeUndefined();
    expect(localDataDir({ dataDir: 'opfs-ahp://app' })).toBeUndefined();
    expect(localDataDir({ dataDir: 'file:///srv/data' })).toBe('/srv/data');
    expect(localDataDir({ dataDir: './data' })).toBe('./data');
    const memory = await pgliteInMemory('memory://');
    expect(localDataDir(memory)).toBeUndefined();
    await memory.close();
  });
});

/** The steps of the property: what this process does, and locks other processes leave. */
type Step =
  | { readonly op: 'lock' }
  | { readonly op: 'share' }
  | { readonly op: 'release'; readonly which: number }
  | { readonly op: 'left'; readonly by: 'dead' | 'same-pid' | 'reused-pid' }
  | { readonly op: 'live' }
  | { readonly op: 'live-ends' };

const steps = fc.array(
  fc.oneof(
    fc.constant<Step>({ op: 'lock' }),
    fc.constant<Step>({ op: 'share' }),
    fc.nat(5).map<Step>((which) => ({ op: 'release', which })),
    fc.constantFrom('dead', 'same-pid', 'reused-pid').map<Step>((by) => ({ op: 'left', by })),
    fc.constant<Step>({ op: 'live' }),
    fc.constant<Step>({ op: 'live-ends' }),
  ),
  { maxLength: 25 },
);

describe('one holder at a time (property)', () => {
  it('a folder is held by one live process at most: a live holder refuses, a gone one is taken over, this process shares its own lock with the repository and refuses a second', async () => {
    await fc.assert(
      fc.asyncProperty(steps, async (script) => {
        const folder = await aFolder();
        const file = `${folder}.lock`;
        // The model, from the rules: who holds the folder.
        let holder: 'none' | 'this' | 'gone' | 'live' = 'none';
        const handles: DataFolderLock[] = [];
        try {
          for (const step of script) {
            if (step.op === 'lock' || step.op === 'share') {
              const taking =
                step.op === 'lock' ? lockDataFolder(folder) : shareDataFolderLock(folder);
              const refused = holder === 'live' || (holder === 'this' && step.op === 'lock');
              const outcome = await taking.then(
                (lock) => lock,
                (error: unknown) => error,
              );
              if (refused) {
                expect(outcome).toBeInstanceOf(DataFolderError);
                expect((outcome as DataFolderError).code).toBe('data_folder_in_use');
                expect((outcome as DataFolderError).pid).toBe(
                  holder === 'live' ? process.ppid : process.pid,
                );
              } else {
                expect(outcome).not.toBeInstanceOf(Error);
                handles.push(outcome as DataFolderLock);
                holder = 'this';
              }
            } else if (step.op === 'release') {
              const handle = handles.splice(step.which % Math.max(1, handles.length), 1)[0];
              await handle?.release();
              if (holder === 'this' && handles.length === 0) holder = 'none';
            } else if (holder === 'none' && step.op === 'left') {
              const fields =
                step.by === 'dead'
                  ? {}
                  : step.by === 'same-pid'
                    ? { pid: process.pid }
                    : { pid: process.ppid, started: 'another-boot/1' };
              await writeFile(file, lockText(fields));
              holder = 'gone';
            } else if (holder === 'none' && step.op === 'live') {
              await writeFile(file, lockText({ pid: process.ppid, token: 'live' }));
              holder = 'live';
            } else if (holder === 'live' && step.op === 'live-ends') {
              await rm(file);
              holder = 'none';
            }
            // The file names this process exactly while it holds the folder.
            const text = await readFile(file, 'utf8').catch(() => undefined);
            expect(text !== undefined).toBe(holder !== 'none');
            if (holder === 'this') expect(JSON.parse(text as string).pid).toBe(process.pid);
          }
        } finally {
          for (const handle of handles) await handle.release();
        }
      }),
      { numRuns: 60 },
    );
  });
});
