/**
 * A real PostgreSQL for the tests: `initdb` into a temporary folder and `pg_ctl` on a free port
 * (never 5432), stopped and removed afterwards, restartable on the same port with its data kept.
 * It never touches a server it did not start.
 */
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);

/** The port of the machine's own server, which the tests never use. */
const machinePort = 5432;

/** Where to look when the binaries are not on the PATH: Debian's `postgresql` package. */
const debianRoot = '/usr/lib/postgresql';

/** Whether `path` is a file this process may execute. */
function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The highest-versioned `/usr/lib/postgresql/<version>/bin`, if any. */
function debianBinFolder(): string | undefined {
  if (!existsSync(debianRoot)) return undefined;
  const versions = readdirSync(debianRoot)
    .filter((version) => isExecutable(join(debianRoot, version, 'bin', 'initdb')))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  return versions[0] === undefined ? undefined : join(debianRoot, versions[0], 'bin');
}

/** The absolute path of a PostgreSQL binary: on the PATH, else in Debian's newest version. */
export function findBinary(name: 'initdb' | 'pg_ctl' | 'psql'): string {
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    if (folder !== '' && isExecutable(join(folder, name))) return join(folder, name);
  }
  const folder = debianBinFolder();
  if (folder !== undefined && isExecutable(join(folder, name))) return join(folder, name);
  throw new Error(
    `PostgreSQL's ${name} is neither on the PATH nor in ${debianRoot}/<version>/bin; ` +
      'install it with `apt-get install -y postgresql`.',
  );
}

/**
 * How to run a server binary: as root, initdb and the server refuse to run, so they run as the
 * `postgres` user (runuser where present, else su).
 */
function asServerUser(binary: string, args: readonly string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [binary, [...args]];
  if (isExecutable('/usr/sbin/runuser') || isExecutable('/sbin/runuser')) {
    return ['runuser', ['-u', 'postgres', '--', binary, ...args]];
  }
  const quoted = [binary, ...args].map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(' ');
  return ['su', ['postgres', '-s', '/bin/sh', '-c', quoted]];
}

/** The uid and gid of the `postgres` user, with a clear error where there is none. */
function serverUser(): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error(
      'running as root, PostgreSQL needs the `postgres` user to run as; ' +
        'install it with `apt-get install -y postgresql`.',
    );
  }
}

/** Run a binary, with its stderr in the error when it fails. */
async function runOrExplain(file: string, args: readonly string[]): Promise<string> {
  try {
    return (await run(file, [...args], { encoding: 'utf8' })).stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`${[file, ...args].join(' ')} failed: ${stderr.trim()}`, { cause: error });
  }
}

/** Where and how to start a server. */
export interface PostgresServerOptions {
  /** The port. @defaultValue a free port, never 5432 */
  port?: number;
  /** How many connections it takes at once. @defaultValue PostgreSQL's, 100 */
  maxConnections?: number;
  /**
   * Settings after the suite's own, which they replace (`{ full_page_writes: 'on' }`).
   * @defaultValue none: fsync, synchronous_commit and full_page_writes off
   */
  settings?: Readonly<Record<string, string>>;
}

/** Servers of this process still running: stopped at exit should a test not stop its own. */
const running = new Set<PostgresServer>();
process.once('exit', () => {
  for (const server of running) server.stopAtExit();
});

/** A PostgreSQL server in a temporary folder of its own. */
export class PostgresServer {
  #running = false;

  private constructor(
    /** The port it listens on, on 127.0.0.1. */
    readonly port: number,
    /** The data folder (`initdb`'s). */
    readonly dataDir: string,
    /** The folder of its Unix socket and log. */
    readonly socketDir: string,
    /** How many connections it takes at once, or undefined for PostgreSQL's default. */
    readonly maxConnections: number | undefined,
    /** Settings after the suite's own. */
    readonly settings: Readonly<Record<string, string>> = {},
  ) {}

  /** Initialise a fresh data folder and start a server on a free port (or the one given). */
  static async start(options: PostgresServerOptions = {}): Promise<PostgresServer> {
    const port = options.port ?? (await freePort());
    if (port === machinePort) throw new Error(`port ${machinePort} is the machine's own server`);
    const dataDir = await mkdtemp(join(tmpdir(), 'pg-data-'));
    const socketDir = await mkdtemp(join(tmpdir(), 'pg-sock-'));
    const server = new PostgresServer(
      port,
      dataDir,
      socketDir,
      options.maxConnections,
      options.settings,
    );
    try {
      await server.#initialise();
      await server.restart();
    } catch (error) {
      await server.#removeFolders();
      throw error;
    }
    return server;
  }

  /** The connection URL (trust authentication, user and database `postgres`). */
  get url(): string {
    return PostgresServer.urlOf(this.port);
  }

  /** The connection URL of a server started on `port`, before it is up. */
  static urlOf(port: number): string {
    return `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  /** Whether the server is running. */
  get isRunning(): boolean {
    return this.#running;
  }

  /** The postmaster's process id (the first line of its `postmaster.pid`), while it runs. */
  get processId(): number {
    return Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  }

  async #initialise(): Promise<void> {
    if (process.getuid?.() === 0) {
      const { uid, gid } = serverUser();
      await chown(this.dataDir, uid, gid);
      await chown(this.socketDir, uid, gid);
    }
    const args = ['-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'];
    await runOrExplain(...asServerUser(findBinary('initdb'), [...args, '-D', this.dataDir]));
  }

  /**
   * Start (again) on the same port with the same data: stops first if running, keeping the data.
   * `-w` waits until the server accepts connections; `-l` keeps its output off our pipes, which
   * would otherwise stay open as long as the server runs.
   */
  async restart(): Promise<void> {
    if (this.#running) await this.stop({ keepData: true });
    const settings = [
      `-p ${this.port}`,
      `-k ${this.socketDir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off -c synchronous_commit=off -c full_page_writes=off',
      ...(this.maxConnections === undefined ? [] : [`-c max_connections=${this.maxConnections}`]),
      ...Object.entries(this.settings).map(([name, value]) => `-c ${name}=${value}`),
    ].join(' ');
    const log = join(this.socketDir, 'server.log');
    const args = ['-w', '-D', this.dataDir, '-l', log, '-o', settings, 'start'];
    try {
      await runOrExplain(...asServerUser(findBinary('pg_ctl'), args));
    } catch (error) {
      const output = existsSync(log) ? readFileSync(log, 'utf8') : '';
      throw new Error(`PostgreSQL did not start on port ${this.port}: ${output}`, { cause: error });
    }
    this.#running = true;
    running.add(this);
  }

  /** Run one SQL command through psql; its rows unaligned (`|` between fields), one a line. */
  async query(sql: string): Promise<string> {
    const args = ['-X', '-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres'];
    const output = await runOrExplain(findBinary('psql'), [
      ...args,
      '-d',
      'postgres',
      '-At',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      sql,
    ]);
    return output.replace(/\n$/, '');
  }

  /**
   * Stop the server (fast shutdown, waiting for it to exit) and remove its folders, unless
   * `keepData` is given: then `restart()` starts it again with the same data.
   */
  async stop(options: { keepData?: boolean } = {}): Promise<void> {
    if (this.#running) {
      const args = ['-D', this.dataDir, '-m', 'fast', '-w', 'stop'];
      await runOrExplain(...asServerUser(findBinary('pg_ctl'), args));
      this.#running = false;
      running.delete(this);
    }
    if (options.keepData !== true) await this.#removeFolders();
  }

  /** Stop at once and remove the folders, for a process that exits with the server running. */
  stopAtExit(): void {
    if (!this.#running) return;
    const [file, args] = asServerUser(findBinary('pg_ctl'), [
      '-D',
      this.dataDir,
      '-m',
      'immediate',
      'stop',
    ]);
    try {
      execFileSync(file, args, { stdio: 'ignore' });
    } catch {
      // Already gone: nothing is left to stop.
    }
    this.#running = false;
    rmSync(this.dataDir, { recursive: true, force: true });
    rmSync(this.socketDir, { recursive: true, force: true });
  }

  async #removeFolders(): Promise<void> {
    await rm(this.dataDir, { recursive: true, force: true });
    await rm(this.socketDir, { recursive: true, force: true });
  }
}
