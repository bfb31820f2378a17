/**
 * The subscription repository on PostgreSQL: a pg Pool on a server, or PGlite (embedded
 * PostgreSQL) on one machine, through the same SQL (see docs/postgres.md). @module
 */
import type { SecretCipherError } from '../errors/secret-cipher-error.js';
import { type GroupBatching, GroupCommit } from '../internal/group-commit.js';
import { refused } from '../internal/options.js';
import type { DeliveryAttempt } from '../webhooks/delivery/attempt.js';
import { cipherOf } from '../webhooks/signing/secret-cipher.js';
import { markPlainChanges } from '../webhooks/store/plain-changes.js';
import type {
  AttemptQuery,
  AttemptRecord,
  ChangeListener,
  DeliveryClaim,
  DeliveryKey,
  DeliveryLogEntry,
  DeliveryStatus,
  KeptMessage,
  MessageKey,
  OutboxDelivery,
  OutboxMessage,
  PendingDelivery,
  ReplayPlan,
  ReplayResult,
  ReplaySelection,
  RotateSecretOptions,
  SigningSecretsOptions,
  StoreSubscriptionOptions,
  SubscriptionPage,
  SubscriptionRepository,
} from '../webhooks/store/repository.js';
import type {
  StoredSubscription,
  Subscription,
  SubscriptionChange,
  SubscriptionChanges,
} from '../webhooks/subscriptions/subscription.js';
import { listenForChanges } from './change-listener.js';
import { type DataFolderLock, localDataDir, shareDataFolderLock } from './data-folder-lock.js';
import { EmbeddedStatements, type SqlExec, statementName } from './embedded-statements.js';
import {
  EmbeddedUpkeep,
  OUTBOX_TABLES,
  SUBSCRIPTION_TABLES,
  type UpkeepRule,
} from './embedded-upkeep.js';
import { type MigrationReport, migrate, quoteIdentifier } from './migrations.js';
import { PostgresOutbox } from './postgres-outbox.js';
import {
  OWNER,
  type PostgresRepositoryOptions,
  readRepositoryOptions,
} from './repository-options.js';
import {
  type CreateToRecord,
  changeOfTuple,
  count,
  createColumns,
  createValues,
  type DeleteToRecord,
  deleteColumns,
  deleteValues,
  type RotationToRecord,
  rotateColumns,
  rotateValues,
  type SubscriptionRow,
  toSubscription,
  type UpdateToRecord,
  updateColumns,
  updateValues,
} from './rows.js';
import type { DatabaseKind, SqlDatabase, SqlResult } from './sql-database.js';
import { type Statements, statements } from './statements.js';
import { StoredSecrets, secretContext } from './stored-secrets.js';

/** One kind of subscription write: its statements, and how its rows answer (see `#writeBatch`). */
interface SubscriptionWrites<W, A, R> {
  /** The statement of one write alone, and its parameters. */
  readonly alone: { readonly text: string; readonly values: (write: W) => unknown[] };
  /** The statement of a batch, and its parameters as columns. */
  readonly together: {
    readonly text: string;
    readonly columns: (batch: readonly W[]) => unknown[];
  };
  /** A write's answer from its row. */
  readonly answer: (row: R) => A;
  /** The answer of a write that changed nothing. */
  readonly none: A;
  /** What the writes of one statement differ by: the same key again goes in the next batch. */
  readonly keyOf: (write: W) => string;
}

/** What a write of one subscription is told apart by: a statement changes a row once. */
function subscriptionKey({ accountCode, id }: { accountCode: string; id: string }): string {
  return JSON.stringify([accountCode, id]);
}
/**
 * Whether `error` is the database's refusal of a statement, its error message as pg and PGlite
 * give it (severity `ERROR` and the SQLSTATE as `code`): the statement then committed nothing.
 * Not Node's errors of a lost connection (a `code`, no `severity`), nor a `FATAL` one that ends
 * the session.
 */
function refusedByDatabase(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  return severity === 'ERROR' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

const BATCH = 500;
const MAX_INT = 2 ** 31 - 1;

// What a value must be, for the refusal of re-encrypting without keys.
const KEYS_TO_REENCRYPT = `given to ${OWNER} (newest first) for reencryptSecrets()`;

/** A pg Pool's or client's query with a statement name (pg prepares it once per connection). */
interface NamedQuery {
  query(config: { name: string; text: string; values: unknown[] }): Promise<SqlResult>;
}

/**
 * Subscriptions, signing secrets and the delivery log in PostgreSQL, the same on every instance:
 * revisions commit in order, and `watch` hears every instance's changes through LISTEN/NOTIFY.
 * Open it with {@link PostgresSubscriptionRepository.open}, which migrates the schema first.
 * @example
 * ```ts
 * import { PGlite } from '@electric-sql/pglite';
 * const repository = await PostgresSubscriptionRepository.open({ database: new PGlite() });
 * ```
 */
export class PostgresSubscriptionRepository implements SubscriptionRepository {
  readonly secretsAtRest: 'encrypted' | 'plain';
  readonly #database: DatabaseKind;
  readonly #sql: Statements;
  readonly #secrets: StoredSecrets;
  readonly #channel: string;
  readonly #schema: string;
  readonly #listen: Omit<Parameters<typeof listenForChanges>[1], 'channel'>;
  readonly #watching = new Set<() => Promise<void>>();
  // The name of each statement's text, on a pool with prepared statements; undefined otherwise.
  readonly #names: Map<string, string> | undefined;
  // The statements PGlite holds prepared; undefined on a pool, or with preparedStatements false.
  readonly #embedded: EmbeddedStatements | undefined;
  // On an embedded database (no autovacuum), the statistics of the subscription tables kept
  // current as rows are written (the outbox keeps its tables').
  readonly #upkeep: EmbeddedUpkeep | undefined;
  // Messages, deliveries, attempts: the outbox's statements and their batches.
  readonly #outbox: PostgresOutbox;
  #migration: MigrationReport | undefined;
  #lock: DataFolderLock | undefined;
  readonly #creates: GroupCommit<CreateToRecord, StoredSubscription | undefined>;
  readonly #updates: GroupCommit<UpdateToRecord, StoredSubscription | undefined>;
  readonly #deletes: GroupCommit<DeleteToRecord, boolean>;
  readonly #rotations: GroupCommit<RotationToRecord, boolean>;

  private constructor(options: PostgresRepositoryOptions | undefined) {
    const read = readRepositoryOptions(options);
    this.#database = read.database;
    this.#secrets = new StoredSecrets(
      read.cipher ?? (read.secretKeys === undefined ? undefined : cipherOf(read.secretKeys)),
      OWNER,
    );
    this.secretsAtRest = this.#secrets.atRest;
    this.#schema = read.schema;
    this.#channel = `${read.schema}_changes`;
    this.#sql = statements(quoteIdentifier(read.schema), this.#channel);
    this.#names =
      this.#database.kind === 'pool' && read.preparedStatements !== false ? new Map() : undefined;
    // An embedded database's simple-protocol entry (PGlite's `exec`), where it has one.
    const exec =
      this.#database.kind === 'embedded' && this.#database.db.exec !== undefined
        ? (this.#database.db as SqlExec)
        : undefined;
    this.#embedded =
      exec !== undefined && read.preparedStatements !== false
        ? new EmbeddedStatements(exec)
        : undefined;
    const upkeep = (rule: UpkeepRule) =>
      exec === undefined ? undefined : new EmbeddedUpkeep(exec, read.schema, rule);
    this.#upkeep = upkeep(SUBSCRIPTION_TABLES);
    this.#listen = {
      connect: read.listenConnection,
      reconnectDelayMs: read.reconnectDelayMs,
      maxReconnectDelayMs: Math.max(read.reconnectDelayMs, read.maxReconnectDelayMs),
    };
    const { batches } = read;
    this.#outbox = new PostgresOutbox({
      database: this.#database,
      sql: this.#sql,
      rows: (text, params, on) => this.#rows(text, params, on),
      batches,
      upkeep: upkeep(OUTBOX_TABLES),
    });
    this.#creates = this.#subscriptionWrites(batches, {
      alone: { text: this.#sql.create, values: createValues },
      together: { text: this.#sql.createSubscriptions, columns: createColumns },
      answer: toSubscription,
      none: undefined,
      // One create of an account a statement: its count of subscriptions is read and locked once.
      keyOf: ({ subscription }) => subscription.accountCode,
    });
    this.#updates = this.#subscriptionWrites(batches, {
      alone: { text: this.#sql.update, values: updateValues },
      together: { text: this.#sql.updateSubscriptions, columns: updateColumns },
      answer: toSubscription,
      none: undefined,
      keyOf: subscriptionKey,
    });
    this.#deletes = this.#subscriptionWrites(batches, {
      alone: { text: this.#sql.delete, values: deleteValues },
      together: { text: this.#sql.deleteSubscriptions, columns: deleteColumns },
      answer: () => true,
      none: false,
      keyOf: subscriptionKey,
    });
    this.#rotations = this.#subscriptionWrites(batches, {
      alone: { text: this.#sql.rotateSecret, values: rotateValues },
      together: { text: this.#sql.rotateSecrets, columns: rotateColumns },
      answer: () => true,
      none: false,
      keyOf: subscriptionKey,
    });
  }

  /**
   * Check the options, hold the data folder of a PGlite for this process, create or migrate the
   * schema, and give the repository.
   * @throws ConfigurationError `invalid_option` for a wrong database, schema, key or bound
   * @throws DataFolderError `data_folder_in_use` for a PGlite whose folder another live process
   *   holds (embedded PostgreSQL allows one process per folder)
   */
  static async open(options: PostgresRepositoryOptions): Promise<PostgresSubscriptionRepository> {
    const repository = new PostgresSubscriptionRepository(options);
    const database = repository.#database;
    const folder = database.kind === 'embedded' ? localDataDir(database.db) : undefined;
    // Shared with a lock this process took before opening the folder; taken here otherwise.
    if (folder !== undefined) repository.#lock = await shareDataFolderLock(folder);
    try {
      repository.#migration = await migrate(database, repository.#schema);
    } catch (error) {
      await repository.#lock?.release();
      throw error;
    }
    return repository;
  }

  /** The schema's version, and the migrations this instance applied when it opened. */
  get migration(): MigrationReport {
    return this.#migration ?? { applied: [], version: 0 };
  }

  /** The notification channel changes are announced on (`<schema>_changes`). */
  get channel(): string {
    return this.#channel;
  }

  /** Run a statement on the pool, or on `on` (a transaction's connection). */
  async #rows<R>(text: string, params: unknown[], on?: SqlDatabase): Promise<R[]> {
    const db = on ?? this.#database.db;
    const names = this.#names;
    if (on === undefined && this.#embedded !== undefined) {
      const rows = await this.#embedded.rows(text, params);
      if (rows !== undefined) return rows as R[];
    }
    if (names === undefined) return (await db.query(text, params)).rows as R[];
    let name = names.get(text);
    if (name === undefined) {
      // One name per text: the schema and channel are in the text, so two repositories of one
      // pool never give one name two texts (pg refuses that on a connection).
      name = statementName(text);
      names.set(text, name);
    }
    // A cast that cannot go: SqlDatabase declares only query(text, params), which PGlite and test
    // doubles give too; names are used only on a pg pool, whose Pool and PoolClient take a config.
    return (await (db as unknown as NamedQuery).query({ name, text, values: params })).rows as R[];
  }

  async create(
    subscription: Subscription,
    secret: string,
    options: StoreSubscriptionOptions,
  ): Promise<StoredSubscription | undefined> {
    const [stored, keyId] = await this.#secrets.seal(
      subscription.accountCode,
      subscription.id,
      secret,
    );
    // As memory's `size >= maxPerAccount`: 2.5 holds 3, NaN refuses nothing.
    const limit = Number.isNaN(options.maxPerAccount) ? MAX_INT : options.maxPerAccount;
    const max = Math.max(0, Math.min(Math.ceil(limit), MAX_INT));
    return this.#creates.add({
      subscription,
      secret: stored,
      keyId,
      at: options.at,
      max,
      publicKey: options.publicKey ?? null,
    });
  }

  /**
   * The group commit of one kind of subscription write (creates, updates, deletes, rotations).
   * One batch at a time whatever `concurrency` says: a second batch in flight could commit before
   * the first, and an account's creates (a subscription's changes) take their revisions in the
   * order they were made. A batch the database refused (an error with a SQLSTATE) wrote nothing:
   * each write goes again alone, so that the one it refuses fails its own caller only. A batch
   * lost otherwise (the connection) may have committed: a write again could answer differently (a
   * create refused at the account's bound by its own first row), so each fails with the error, as
   * alone.
   */
  #subscriptionWrites<W, A, R>(
    batches: Omit<GroupBatching, 'concurrency'>,
    kind: SubscriptionWrites<W, A, R>,
  ): GroupCommit<W, A> {
    return new GroupCommit<W, A>({
      ...batches,
      concurrency: 1,
      write: (batch) => this.#writeBatch(batch, kind),
      keyOf: kind.keyOf,
      retryAlone: refusedByDatabase,
    });
  }

  /**
   * A batch of one kind of subscription write, answered in order: one alone in its own statement
   * (`alone`: `create`, `update`, `delete`, `rotateSecret`), more in one statement (`together`:
   * `createSubscriptions`, `updateSubscriptions`, `deleteSubscriptions`, `rotateSecrets`, which
   * cost a write alone more but a batch of them far less) whose rows tell each write's place `n`.
   * A write's answer is `answer` of its row, or `none` for a write that changed nothing.
   */
  async #writeBatch<W, A, R>(
    batch: readonly W[],
    { alone, together, answer, none }: SubscriptionWrites<W, A, R>,
  ): Promise<A[]> {
    const [one] = batch;
    if (batch.length === 1 && one !== undefined) {
      const [row] = await this.#rows<R>(alone.text, alone.values(one));
      this.#upkeep?.wrote(1);
      return [row === undefined ? none : answer(row)];
    }
    const rows = await this.#rows<R & { n: string | number }>(
      together.text,
      together.columns(batch),
    );
    this.#upkeep?.wrote(batch.length);
    const answers = new Array<A>(batch.length).fill(none);
    for (const row of rows) answers[Number(row.n) - 1] = answer(row);
    return answers;
  }

  async get(accountCode: string, id: string): Promise<StoredSubscription | undefined> {
    const [row] = await this.#rows<SubscriptionRow>(this.#sql.get, [accountCode, id]);
    return row === undefined ? undefined : toSubscription(row);
  }

  async list(
    accountCode: string,
    page: { readonly offset: number; readonly limit: number },
  ): Promise<SubscriptionPage> {
    const [row] = await this.#rows<{ total_items: string | number; items: string }>(
      this.#sql.list,
      [accountCode, count(page.offset), count(page.limit)],
    );
    return {
      items: (JSON.parse(row?.items ?? '[]') as SubscriptionRow[]).map(toSubscription),
      totalItems: Number(row?.total_items ?? 0),
    };
  }

  update(
    accountCode: string,
    id: string,
    changes: SubscriptionChanges,
    at: number,
  ): Promise<StoredSubscription | undefined> {
    return this.#updates.add({ accountCode, id, changes, at });
  }

  delete(accountCode: string, id: string, at: number): Promise<boolean> {
    return this.#deletes.add({ accountCode, id, at });
  }

  async rotateSecret(
    accountCode: string,
    id: string,
    secret: string,
    options: RotateSecretOptions,
  ): Promise<boolean> {
    const [stored, keyId] = await this.#secrets.seal(accountCode, id, secret);
    return this.#rotations.add({
      accountCode,
      id,
      secret: stored,
      keyId,
      at: options.at,
      graceMs: options.graceMs,
      publicKey: options.publicKey ?? null,
      signatureType: options.signatureType ?? null,
    });
  }

  /**
   * The secrets that sign for the subscription at `at`, newest first. One the keys cannot decrypt
   * is skipped and told to `onUnreadable`: the others still sign.
   * @throws SecretCipherError naming the subscription when it has secrets and none can be read
   */
  async signingSecrets(
    accountCode: string,
    id: string,
    at: number,
    options: SigningSecretsOptions = {},
  ): Promise<readonly string[]> {
    const rows = await this.#rows<{ secret: string; key_id: string | null }>(
      this.#sql.signingSecrets,
      [accountCode, id, at],
    );
    const { secrets, unreadable } = await this.#secrets.openAll(accountCode, id, rows);
    const [newest] = unreadable;
    if (secrets.length === 0 && newest !== undefined) throw newest;
    for (const error of unreadable) {
      try {
        options.onUnreadable?.(error);
      } catch {
        // A failing listener must not keep the readable secrets from signing.
      }
    }
    return secrets;
  }

  /**
   * One error for each subscription that has secrets signing at `at` and none the keys can read
   * (stored under a key that is not configured, or under another key of the same id), a batch of
   * subscriptions at a time; the service calls it at start and tells each to `onError`.
   */
  async unreadableSecrets(at: number): Promise<readonly SecretCipherError[]> {
    const found: SecretCipherError[] = [];
    let after: [string, string] = ['', ''];
    for (;;) {
      const rows = await this.#rows<{
        account_code: string;
        subscription_id: string;
        secret: string | null;
        key_id: string | null;
      }>(this.#sql.secretsToCheck, [at, ...after, BATCH]);
      const last = rows.at(-1);
      if (last === undefined) return found;
      const bySubscription = new Map<string, typeof rows>();
      for (const row of rows) {
        const key = secretContext(row.account_code, row.subscription_id);
        const held = bySubscription.get(key) ?? [];
        if (row.secret !== null) held.push(row);
        bySubscription.set(key, held);
      }
      for (const held of bySubscription.values()) {
        const [first] = held;
        if (first === undefined) continue;
        const { secrets, unreadable } = await this.#secrets.openAll(
          first.account_code,
          first.subscription_id,
          held as { secret: string; key_id: string | null }[],
        );
        if (secrets.length === 0 && unreadable[0] !== undefined) found.push(unreadable[0]);
      }
      after = [last.account_code, last.subscription_id];
    }
  }

  async changesSince(revision: number, limit: number): Promise<readonly SubscriptionChange[]> {
    if (Number.isNaN(revision) || revision === Number.POSITIVE_INFINITY || !(limit >= 1)) {
      return [];
    }
    // Revisions are whole: above 4.5 is from 5 on, as above 4.
    const after = Math.max(-1, Math.min(Math.floor(revision), 2 ** 62));
    const [row] = await this.#rows<{ changes: string }>(this.#sql.changesSince, [
      after,
      count(limit),
    ]);
    const tuples = JSON.parse(row?.changes ?? '[]') as unknown[][];
    return markPlainChanges(tuples.map(changeOfTuple));
  }

  async watch(listener: ChangeListener): Promise<() => Promise<void>> {
    const stop = await listenForChanges(
      this.#database,
      { ...this.#listen, channel: this.#channel },
      listener,
    );
    const unwatch = async (): Promise<void> => {
      this.#watching.delete(unwatch);
      await stop();
    };
    this.#watching.add(unwatch);
    return unwatch;
  }

  recordAttempt(
    accountCode: string,
    attempt: DeliveryAttempt,
    options?: { readonly leaseUntil?: number },
  ): Promise<AttemptRecord> {
    return this.#outbox.recordAttempt(accountCode, attempt, options);
  }

  attempts(accountCode: string, query: AttemptQuery): Promise<readonly DeliveryLogEntry[]> {
    return this.#outbox.attempts(accountCode, query);
  }

  deleteAttemptsBefore(at: number, limit: number): Promise<number> {
    return this.#outbox.deleteAttemptsBefore(at, limit);
  }

  recordMessage(
    message: OutboxMessage,
    deliveries: readonly OutboxDelivery[],
    options: { readonly leaseUntil: number; readonly key?: MessageKey | undefined },
  ): Promise<KeptMessage | undefined> {
    return this.#outbox.recordMessage(message, deliveries, options);
  }

  claimDeliveries(claim: DeliveryClaim): Promise<readonly PendingDelivery[]> {
    return this.#outbox.claimDeliveries(claim);
  }

  releaseLeases(dueBy: number): Promise<number> {
    return this.#outbox.releaseLeases(dueBy);
  }

  releaseDeliveries(deliveries: readonly DeliveryKey[], leaseUntil: number): Promise<void> {
    return this.#outbox.releaseDeliveries(deliveries, leaseUntil);
  }

  /**
   * True on PGlite (one process per folder: every lease found at start was a dead predecessor's),
   * false on a pg Pool (other instances may share the server).
   */
  get exclusive(): boolean {
    return this.#database.kind === 'embedded';
  }

  replay(accountCode: string, selection: ReplaySelection, plan: ReplayPlan): Promise<ReplayResult> {
    return this.#outbox.replay(accountCode, selection, plan);
  }

  deliveryStatus(
    accountCode: string,
    messageId: string,
    subscriptionId: string,
  ): Promise<DeliveryStatus | undefined> {
    return this.#outbox.deliveryStatus(accountCode, messageId, subscriptionId);
  }

  deleteMessagesBefore(at: number, limit: number): Promise<number> {
    return this.#outbox.deleteMessagesBefore(at, limit);
  }

  deleteExpiredKeys(at: number, limit: number): Promise<number> {
    return this.#outbox.deleteExpiredKeys(at, limit);
  }

  /**
   * Encrypt every signing secret under the newest key: those under older keys, and those stored
   * plain before keys were configured. Safe to run while the service runs, and again.
   * @returns how many secrets it encrypted again
   * @throws ConfigurationError `invalid_option` when the repository has no keys
   * @throws SecretCipherError for a secret that no configured key decrypts
   */
  async reencryptSecrets(): Promise<number> {
    const { cipher } = this.#secrets;
    if (cipher === undefined) throw refused('secretKeys', KEYS_TO_REENCRYPT, undefined);
    let done = 0;
    let after = 0;
    for (;;) {
      const rows = await this.#rows<{
        sequence: string | number;
        account_code: string;
        subscription_id: string;
        secret: string;
        key_id: string | null;
      }>(this.#sql.secretsToReencrypt, [cipher.keyId, after, BATCH]);
      if (rows.length === 0) return done;
      const sequences: string[] = [];
      const old: string[] = [];
      const sealed: string[] = [];
      for (const row of rows) {
        const secret = await this.#secrets.open(
          row.account_code,
          row.subscription_id,
          row.secret,
          row.key_id,
        );
        sequences.push(String(row.sequence));
        old.push(row.secret);
        sealed.push((await this.#secrets.seal(row.account_code, row.subscription_id, secret))[0]);
      }
      const keyIds = sealed.map(() => cipher.keyId);
      const { rows: changed } = await this.#database.db.query(this.#sql.reencrypt, [
        sequences,
        old,
        sealed,
        keyIds,
      ]);
      done += changed.length;
      after = Number(rows.at(-1)?.sequence);
    }
  }

  /**
   * Stop every `watch` and release their connections, let the analyses of an embedded database's
   * tables under way end, and give up the data folder if `open` locked it; the database itself
   * stays open.
   */
  async close(): Promise<void> {
    await Promise.all([...this.#watching].map((unwatch) => unwatch()));
    await Promise.all([this.#upkeep?.close(), this.#outbox.close()]);
    await this.#lock?.release();
  }
}
