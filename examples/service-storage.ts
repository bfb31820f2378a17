/**
 * Where the demo keeps subscriptions, signing secrets and the delivery log: the library's
 * PostgreSQL repository, on embedded PostgreSQL (PGlite) in a folder by default, or on a
 * PostgreSQL server (a pg Pool) with a connection URL.
 */
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import {
  DataFolderError,
  lockDataFolder,
  PostgresSubscriptionRepository,
  type SecretKey,
} from '../src/postgres/index.js';

/** Where the data goes. */
export interface DemoStorageOptions {
  /** The folder of the embedded PostgreSQL, created if missing. @defaultValue `.data` */
  dataDir?: string | undefined;
  /** `postgres://user@host:port/database`: a PostgreSQL server instead of the folder. */
  databaseUrl?: string | undefined;
  /** Keys that encrypt signing secrets at rest, newest first: the first encrypts, all decrypt. */
  secretKeys?: readonly SecretKey[] | undefined;
}

/** An open repository, what it is kept in, and how to close both. */
export interface DemoStorage {
  readonly repository: PostgresSubscriptionRepository;
  /** Where the data is kept, for a reader: the folder, or the server without its password. */
  readonly where: string;
  /** Close the repository's connections, then the database. */
  close(): Promise<void>;
}

/** The folder used when neither a folder nor a server is given. */
export const DEFAULT_DATA_DIR = '.data';

/**
 * Open the repository (migrating its schema) on the server of `databaseUrl`, else on PGlite in
 * `dataDir`, locked for this process before PGlite opens it.
 * @throws ConfigurationError for secret keys that are not `{ id, key }` with a 32-byte key
 * @throws DataFolderError `data_folder_in_use` when another live process holds the folder
 */
export async function openDemoStorage(options: DemoStorageOptions = {}): Promise<DemoStorage> {
  const { databaseUrl, secretKeys } = options;
  if (databaseUrl !== undefined) {
    const pool = new pg.Pool({ connectionString: databaseUrl });
    return opened(pool, `PostgreSQL at ${withoutPassword(databaseUrl)}`, secretKeys, () =>
      pool.end(),
    );
  }
  const folder = join(resolve(options.dataDir ?? DEFAULT_DATA_DIR), 'pglite');
  // Before PGlite opens the folder: a second process opening it loses acknowledged writes.
  const lock = await lockDataFolder(folder).catch((error: unknown) => {
    if (!(error instanceof DataFolderError) || error.code !== 'data_folder_in_use') throw error;
    throw new DataFolderError(
      error.code,
      `${error.message} Set DATA_DIR to give this demo another folder (or DATABASE_URL for a PostgreSQL server that several may share).`,
      { folder: error.folder, pid: error.pid, cause: error },
    );
  });
  let database: PGlite;
  try {
    database = new PGlite(folder);
  } catch (error) {
    await lock.release();
    throw error;
  }
  return opened(database, `embedded PostgreSQL (PGlite) in ${folder}`, secretKeys, async () => {
    try {
      await database.close();
    } finally {
      await lock.release();
    }
  });
}

async function opened(
  database: pg.Pool | PGlite,
  where: string,
  secretKeys: readonly SecretKey[] | undefined,
  end: () => Promise<void>,
): Promise<DemoStorage> {
  let repository: PostgresSubscriptionRepository;
  try {
    repository = await PostgresSubscriptionRepository.open({
      database,
      ...(secretKeys === undefined ? {} : { secretKeys }),
    });
  } catch (error) {
    await end().catch(() => undefined);
    throw error;
  }
  return {
    repository,
    where,
    close: async () => {
      await repository.close();
      await end();
    },
  };
}

/** A connection URL fit to print: its password left out. */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.href;
  } catch {
    return 'the DATABASE_URL given';
  }
}

/**
 * The keys of `WEBHOOK_SECRET_KEYS`: `id:base64key` pairs separated by commas, newest first
 * (`2025-06:<openssl rand -base64 32>,2025-01:<older key>`). The repository checks each key.
 * @throws Error naming the format for an entry without an id or a key
 */
export function parseSecretKeys(text: string): SecretKey[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const colon = entry.indexOf(':');
      if (colon <= 0 || colon === entry.length - 1) {
        throw new Error(
          'WEBHOOK_SECRET_KEYS must be id:base64key pairs separated by commas, newest first, such as 2025-06:$(openssl rand -base64 32)',
        );
      }
      return { id: entry.slice(0, colon), key: entry.slice(colon + 1) };
    });
}
