/**
 * The options of `PostgresSubscriptionRepository.open`: what each one is, and the one place
 * that reads them and works out their defaults. @module
 */
import type { GroupBatching } from '../internal/group-commit.js';
import {
  aBoolean,
  aFunction,
  INVALID,
  optionsOf,
  type Rule,
  readOptions,
  refused,
  requiredValue,
  wholeNumber,
  withMethods,
} from '../internal/options.js';
import {
  type aesGcmSecretCipher,
  type aesGcmSecretCipherAsync,
  SECRET_KEYS,
  type SecretCipher,
  type SecretKey,
} from '../webhooks/signing/secret-cipher.js';
import { LISTEN_BACKOFF } from './change-listener.js';
import {
  DATABASE_EXPECTED,
  type DatabaseKind,
  databaseKind,
  type SqlClient,
  type SqlDatabase,
} from './sql-database.js';

/** How the PostgreSQL repository is set up. */
export interface PostgresRepositoryOptions {
  /**
   * Where the data is: a `pg` Pool (`new Pool({ connectionString })`) or a PGlite instance
   * (`new PGlite('./.data')`). The repository never closes it. A PGlite in a folder is held for
   * this process (see `lockDataFolder`): take the lock before `new PGlite(folder)`, or
   * `open` takes it, until the repository's `close`.
   */
  readonly database: SqlDatabase;
  /**
   * The schema of the repository's tables, created where missing: a lowercase identifier of at
   * most 48 characters. @defaultValue `'api_conventions'`
   */
  readonly schema?: string;
  /**
   * Keys that encrypt signing secrets at rest with AES-256-GCM, newest first: the first encrypts,
   * every one decrypts (see {@link aesGcmSecretCipher}). Without keys or a `cipher`, secrets are
   * stored plain and `secretsAtRest` is `'plain'`.
   */
  readonly secretKeys?: readonly SecretKey[];
  /**
   * A cipher for the secrets at rest, instead of `secretKeys`: one of your own, or
   * {@link aesGcmSecretCipherAsync} (the same keys and stored format through WebCrypto). Its
   * `encrypt` and `decrypt` may answer at once or in a promise; the repository awaits them.
   */
  readonly cipher?: SecretCipher;
  /**
   * Opens the connection `watch` LISTENs on, for a pool whose connections cannot LISTEN (behind a
   * transaction-pooling proxy); its `release(error)` must close it. @defaultValue the pool's
   * `connect()`
   */
  readonly listenConnection?: () => Promise<SqlClient>;
  /** The first wait before the LISTEN connection is opened again, in ms. @defaultValue 100 */
  readonly reconnectDelayMs?: number;
  /**
   * The longest wait between attempts to open it again, in ms: how long after the server is back
   * the instance may still not hear changes. @defaultValue 500
   */
  readonly maxReconnectDelayMs?: number;
  /**
   * On a pg Pool, send each statement as a named prepared statement, so that the server parses
   * and plans it once per connection rather than at every call (several times less of its CPU for
   * the outbox's statements). Turn it off behind a transaction-pooling proxy that does not carry
   * prepared statements (PgBouncer before 1.21). On PGlite, prepare each statement once with
   * `PREPARE` and run it with `EXECUTE`, its parameters as quoted literals, wherever each is a
   * string, number, boolean or null (the rest, and statements in a transaction, run unnamed):
   * half the CPU of a subscription read.
   * @defaultValue true
   */
  readonly preparedStatements?: boolean;
  /**
   * How writes made at the same time share one statement: the messages that `recordMessage`
   * calls in flight record, the attempts of `recordAttempt` calls in flight, the subscriptions of
   * `create` calls in flight (each of another account) and the changes of `update` calls in flight
   * (each of another subscription; see docs/postgres.md, "Group commit"). Each call still
   * resolves only once its own rows are committed, and a batch that fails rejects its own calls,
   * each with the error (a batch of creates or updates the database refused goes again one write
   * at a time first).
   */
  readonly groupCommit?: GroupCommitOptions;
}

/** How {@link PostgresRepositoryOptions.groupCommit} forms batches. */
export interface GroupCommitOptions {
  /** The most writes one statement takes. @defaultValue 100 */
  readonly maxBatch?: number;
  /**
   * How long a batch forming while another is in flight waits for more writes before it goes with
   * fewer than `minBatch`, in ms; a write made while nothing is in flight never waits.
   * @defaultValue 0 (no wait: fewer than `minBatch` wait for a batch to end)
   */
  readonly maxWaitMs?: number;
  /**
   * Batches of publishes (of attempts) in flight at once; the rest wait for one to end and then
   * go together, unless they are `minBatch` or more. Creates and updates go one batch at a time
   * whatever this says, so that an account's creates (a subscription's updates) take their
   * revisions in the order they were made. @defaultValue 2 on a pg Pool, 1 on PGlite (which runs
   * one statement at a time on this thread)
   */
  readonly concurrency?: number;
  /**
   * The fewest writes a batch holds to go while another of its kind is in flight (at the end of
   * the turn in which it holds that many, or once full, or after `maxWaitMs`); fewer wait for a
   * batch to end, so that a few writes at a time keep to one statement in flight (the server's
   * work per write lowest), and many keep the server busy on one batch while this process makes
   * the next. The writes made together while nothing is in flight are shared among as many
   * batches as may go, each of this many at least. @defaultValue 16
   */
  readonly minBatch?: number;
}

const SCHEMA = /^[a-z_][a-z0-9_]{0,47}$/;

const schemaRule: Rule<string> = {
  expected:
    'a lowercase identifier (letters a-z, digits and "_", not first a digit) of 1 to 48 characters',
  read: (value) => (typeof value === 'string' && SCHEMA.test(value) ? value : INVALID),
};

const databaseRule: Rule<DatabaseKind> = {
  expected: DATABASE_EXPECTED,
  read: (value) => databaseKind(value) ?? INVALID,
};

const RULES = {
  database: databaseRule,
  schema: schemaRule,
  secretKeys: SECRET_KEYS,
  cipher: withMethods<SecretCipher>(['encrypt', 'decrypt', 'keyIdOf'], 'a SecretCipher'),
  listenConnection: aFunction<() => Promise<SqlClient>>('opens a pg client for LISTEN'),
  reconnectDelayMs: wholeNumber(1, 60_000),
  maxReconnectDelayMs: wholeNumber(1, 3_600_000),
  preparedStatements: aBoolean,
  groupCommit: optionsOf(
    {
      maxBatch: wholeNumber(1, 10_000),
      maxWaitMs: wholeNumber(0, 1_000),
      concurrency: wholeNumber(1, 64),
      minBatch: wholeNumber(1, 10_000),
    },
    '{ maxBatch: 100, concurrency: 2, minBatch: 16 }',
  ),
};

/** The most writes a batch takes, by default. */
const MAX_BATCH = 100;
/** Batches of one kind in flight on a pg Pool, by default (one on PGlite). */
const POOL_CONCURRENCY = 2;
/** The fewest writes a batch takes to go while another is in flight, by default. */
const MIN_BATCH = 16;

/** What every refusal of an option names. @internal */
export const OWNER = 'PostgresSubscriptionRepository.open';

// What a cipher beside keys must be instead.
const CIPHER_ALONE = 'left out when secretKeys is given (pass the keys alone)';

/**
 * The options read, with their defaults, the database told apart, and how batches of writes form.
 * @throws ConfigurationError `invalid_option` for a wrong database, schema, key or bound, or a
 *   cipher beside keys
 * @internal
 */
export function readRepositoryOptions(options: PostgresRepositoryOptions | undefined) {
  const read = readOptions(options, OWNER, RULES, {
    required: true,
    defaults: { schema: 'api_conventions', ...LISTEN_BACKOFF },
    example: '{ database: new Pool({ connectionString }) }',
  });
  const database = requiredValue(RULES.database, read.database, 'database');
  if (read.secretKeys !== undefined && read.cipher !== undefined) {
    throw refused('cipher', CIPHER_ALONE, read.cipher);
  }
  // How batches of writes form: `groupCommit` with the defaults.
  const batches: GroupBatching = {
    maxBatch: read.groupCommit?.maxBatch ?? MAX_BATCH,
    maxWaitMs: read.groupCommit?.maxWaitMs ?? 0,
    // An embedded database runs one statement at a time on this thread: nothing to overlap.
    concurrency: read.groupCommit?.concurrency ?? (database.kind === 'pool' ? POOL_CONCURRENCY : 1),
    minBatch: read.groupCommit?.minBatch ?? MIN_BATCH,
  };
  return { ...read, database, batches };
}
