/**
 * The narrow query interface the PostgreSQL repository talks through: a `pg` Pool and a PGlite
 * instance both satisfy it as they are. Where one connection is needed (a migration's
 * transaction, the LISTEN connection), the kind is told by its methods. @module
 */
import { checkValue, INVALID, type Rule } from '../internal/options.js';

/** What a query answers: its rows, one object per row keyed by column name. */
export interface SqlResult {
  /** The rows. */
  readonly rows: readonly unknown[];
}

/**
 * Runs one SQL statement with `$1, $2, …` parameters. A `pg` Pool, a `pg` PoolClient and a PGlite
 * instance (or its transaction) satisfy it.
 */
export interface SqlDatabase {
  /** Run `text` with `params`. */
  query(text: string, params?: unknown[]): Promise<SqlResult>;
}

/** Runs a statement on a repository's database, or on `on` (a transaction's connection). */
export type RunRows = <R>(text: string, params: unknown[], on?: SqlDatabase) => Promise<R[]>;

/** A notification as `pg` reports it. */
export interface SqlNotification {
  /** The channel. */
  readonly channel: string;
  /** The payload, if any. */
  readonly payload?: string | undefined;
}

/**
 * One connection of a pool, held until released: a `pg` PoolClient. It reports notifications and
 * connection errors as events.
 */
export interface SqlClient extends SqlDatabase {
  /** Give the connection back; with an error, the pool closes it instead of reusing it. */
  release(destroy?: Error | boolean): void;
  /** Listen to `notification`, `error` and `end`. */
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** Stop listening. */
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
}

/** A pool of connections: a `pg` Pool. */
export interface SqlPool extends SqlDatabase {
  /** Check a connection out. */
  connect(): Promise<SqlClient>;
}

/** An embedded database with transactions and LISTEN of its own: a PGlite instance. */
export interface SqlEmbedded extends SqlDatabase {
  /** Run `fn` in a transaction on the one connection: committed when it resolves. */
  transaction<T>(fn: (tx: SqlDatabase) => Promise<T>): Promise<T>;
  /** Call `callback` with each notification's payload on `channel`; resolves to the unlisten. */
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
  /** Run statements without parameters through the simple protocol: one result each. */
  exec?(text: string): Promise<readonly SqlResult[]>;
}

/** The kinds of database the repository tells apart. */
export type DatabaseKind =
  | { readonly kind: 'embedded'; readonly db: SqlEmbedded }
  | { readonly kind: 'pool'; readonly db: SqlPool };

/** What the repository's `database` option must be, for messages. */
export const DATABASE_EXPECTED =
  'a pg Pool (with query() and connect()) or a PGlite instance (with query(), transaction() and listen())';

/** Whether `value` has a method `name`, read once, without throwing. */
function hasMethod(value: object, name: string): boolean {
  try {
    return typeof (value as Record<string, unknown>)[name] === 'function';
  } catch {
    return false;
  }
}

/**
 * Tell a PGlite instance (transaction and listen) from a pg Pool (connect), or `undefined`.
 * Embedded is tried first: a PGlite has no `connect()`, but a test double might have both.
 */
export function databaseKind(value: unknown): DatabaseKind | undefined {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null)
    return undefined;
  if (!hasMethod(value, 'query')) return undefined;
  if (hasMethod(value, 'transaction') && hasMethod(value, 'listen')) {
    return { kind: 'embedded', db: value as SqlEmbedded };
  }
  if (hasMethod(value, 'connect')) return { kind: 'pool', db: value as SqlPool };
  return undefined;
}

const POOLED_CLIENT: Rule<SqlClient> = {
  expected: 'a client with query() and release() (pass a pg Pool, not a pg Client)',
  read: (value) =>
    typeof value === 'object' &&
    value !== null &&
    hasMethod(value, 'query') &&
    hasMethod(value, 'release')
      ? (value as SqlClient)
      : INVALID,
};

/** Check a pooled connection out, with a clear error for a `connect()` that gives no client. */
export async function checkOut(pool: SqlPool): Promise<SqlClient> {
  return checkValue(POOLED_CLIENT, await pool.connect(), 'database.connect()');
}

/**
 * Run `fn` in one transaction on one connection: `BEGIN`/`COMMIT` on a pooled client (rolled back
 * when `fn` throws), the embedded database's own `transaction()` otherwise.
 */
export async function inTransaction<T>(
  database: DatabaseKind,
  fn: (tx: SqlDatabase) => Promise<T>,
): Promise<T> {
  if (database.kind === 'embedded') return database.db.transaction(fn);
  const client = await checkOut(database.db);
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollback) {
      broken = rollback instanceof Error ? rollback : new Error(String(rollback));
    }
    throw error;
  } finally {
    client.release(broken);
  }
}
