/**
 * PGlite's data folder as its initdb leaves it, made once per test run and copied or loaded
 * wherever a test opens PGlite: initdb of a fresh folder takes seconds (PGlite runs it in a second
 * instance of its own), a copy of its result a fraction of that. The template holds no schema:
 * the repository's migrations still run on every database a test opens.
 *
 * The first test file that needs it makes it, in the run's folder (pglite-global-setup.ts); a file
 * in the other worker that needs it meanwhile waits for it. It is made by the PGlite the tests
 * import, with no options, as the tests and the reference service open PGlite (no extensions, the
 * default initdb settings): `PGlite.create()` in memory or on a fresh folder makes the same
 * database. A test about a fresh folder (the first start of the service) opens one.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';

/** Where the template is: the folder, and its dump for databases in memory. */
interface Template {
  readonly folder: string;
  readonly dump: string;
}

/** How long a file waits for the template the other worker makes: minutes, on a busy machine. */
const WAIT_MS = 180_000;

/** The template, made first if no file made it yet. */
async function template(): Promise<Template> {
  const root = inject('pgliteTemplate');
  if (root === undefined) {
    throw new Error('no PGlite template folder: pglite-global-setup.ts did not run');
  }
  const made: Template = { folder: join(root, 'pgdata'), dump: join(root, 'pgdata.tar') };
  const ready = join(root, 'ready');
  const failed = join(root, 'failed');
  if (existsSync(ready)) return made;
  let maker = true;
  try {
    // One maker: creating a folder either succeeds or finds it there.
    mkdirSync(join(root, 'making'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    maker = false;
  }
  if (maker) {
    try {
      await make(made);
    } catch (error) {
      writeFileSync(failed, String(error));
      throw error;
    }
    writeFileSync(ready, '');
    return made;
  }
  const deadline = Date.now() + WAIT_MS;
  while (!existsSync(ready)) {
    if (existsSync(failed)) {
      throw new Error(`the PGlite template could not be made: ${readFileSync(failed, 'utf8')}`);
    }
    if (Date.now() > deadline) throw new Error(`no PGlite template after ${WAIT_MS} ms`);
    await sleep(50);
  }
  return made;
}

async function make({ folder, dump }: Template): Promise<void> {
  const lite = await PGlite.create(folder);
  try {
    // Every page written to the files first: a database loaded from the dump replays no WAL.
    await lite.exec('CHECKPOINT');
    const tar = await lite.dumpDataDir('none');
    await writeFile(dump, new Uint8Array(await tar.arrayBuffer()));
  } finally {
    await lite.close();
  }
}

/**
 * PGlite in memory, as `PGlite.create()` makes it: loaded from the template.
 * @param dataDir - `memory://` and a name, for a test that gives one
 */
export async function pgliteInMemory(dataDir?: `memory://${string}`): Promise<PGlite> {
  const { dump } = await template();
  const loadDataDir = new Blob([await readFile(dump)], { type: 'application/x-tar' });
  return PGlite.create({ loadDataDir, ...(dataDir === undefined ? {} : { dataDir }) });
}

/**
 * A PGlite data folder at `folder` (missing or empty) as PGlite leaves a fresh one: the template
 * copied there.
 * @returns `folder`
 */
export async function pgliteFolder(folder: string): Promise<string> {
  const { folder: source } = await template();
  if (existsSync(folder) && readdirSync(folder).length > 0) {
    throw new Error(`${folder} is not empty: the template goes into a missing or empty folder`);
  }
  await mkdir(folder, { recursive: true });
  // cp copies the thousand files of the folder in a tenth of the time fs.cpSync takes.
  await promisify(execFile)('cp', ['-R', `${source}/.`, folder]);
  return folder;
}

/**
 * A new temporary DATA_DIR for the reference service (examples/service.ts), its embedded
 * PostgreSQL folder (`pglite` in it) copied from the template. The caller removes it.
 */
export async function demoDataDir(): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), 'demo-data-'));
  await pgliteFolder(join(dataDir, 'pglite'));
  return dataDir;
}
