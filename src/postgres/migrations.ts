/**
 * The repository's schema, created and changed by numbered migrations: each in a transaction of
 * its own, under an advisory lock so that instances starting together do not race, and recorded
 * in the `migrations` table of the schema (see docs/postgres.md). @module
 */

import { recordAttempts, recordAttemptsEndingStreaks } from './record-attempts-function.js';
import { type DatabaseKind, inTransaction, type SqlDatabase } from './sql-database.js';

/** One step of the schema: its number, a name for the record, and its statements in order. */
export interface Migration {
  /** Its number: 1, 2, 3, … applied in order, each once. */
  readonly version: number;
  /** What it does, recorded beside its number. */
  readonly name: string;
  /** Its statements, one statement each (the same SQL on PostgreSQL and PGlite). */
  readonly statements: (schema: string) => readonly string[];
}

/**
 * The migrations, in order. Times of the subscription model (`created_at`, `updated_at`,
 * `deleted_at`) are kept as the ISO 8601 text the model holds, so that they read back exactly and
 * sort as the memory repository sorts them; times the code compares (`*_ms`) are milliseconds.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'subscriptions, signing secrets, delivery log, messages and deliveries',
    statements: (s) => [
      // One row: every change takes its revision from it, so changes commit in revision order.
      `CREATE TABLE ${s}.revision (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        value bigint NOT NULL)`,
      `INSERT INTO ${s}.revision (singleton, value) VALUES (true, 0)`,
      // How many live subscriptions an account holds: the row a create locks to refuse the one
      // beyond maxPerAccount.
      `CREATE TABLE ${s}.accounts (
        account_code text PRIMARY KEY,
        live_subscriptions integer NOT NULL CHECK (live_subscriptions >= 0))`,
      `CREATE TABLE ${s}.subscriptions (
        account_code text NOT NULL,
        id text NOT NULL,
        endpoint_url text NOT NULL,
        events text[] NOT NULL,
        property_ids text[],
        status text NOT NULL CHECK (status IN ('enabled', 'disabled')),
        created_at text COLLATE "C" NOT NULL,
        updated_at text NOT NULL,
        revision bigint NOT NULL,
        created_revision bigint NOT NULL,
        deleted_at text,
        PRIMARY KEY (account_code, id))`,
      `COMMENT ON COLUMN ${s}.subscriptions.property_ids IS 'NULL: every current and future property'`,
      `COMMENT ON COLUMN ${s}.subscriptions.deleted_at IS 'set on delete: the row stays as a tombstone so that changesSince tells the delete'`,
      `CREATE UNIQUE INDEX subscriptions_revision ON ${s}.subscriptions (revision)`,
      `COMMENT ON COLUMN ${s}.subscriptions.created_revision IS 'the revision of its create: the order of creation, whatever created_at says'`,
      `CREATE INDEX subscriptions_creation_order ON ${s}.subscriptions
        (account_code, created_revision) WHERE deleted_at IS NULL`,
      // Insert-only: a secret signs until a newer one's retire_older_ms (the earliest of them).
      `CREATE TABLE ${s}.signing_secrets (
        sequence bigserial PRIMARY KEY,
        account_code text NOT NULL,
        subscription_id text NOT NULL,
        secret text NOT NULL,
        key_id text,
        created_ms double precision NOT NULL,
        retire_older_ms double precision,
        FOREIGN KEY (account_code, subscription_id)
          REFERENCES ${s}.subscriptions (account_code, id) ON DELETE CASCADE)`,
      `COMMENT ON COLUMN ${s}.signing_secrets.key_id IS 'the key that encrypted secret; NULL: stored plain'`,
      `COMMENT ON COLUMN ${s}.signing_secrets.retire_older_ms IS 'older secrets of the subscription stop signing at this time (ms)'`,
      `CREATE INDEX signing_secrets_subscription ON ${s}.signing_secrets
        (account_code, subscription_id, sequence)`,
      `CREATE TABLE ${s}.delivery_log (
        sequence bigserial PRIMARY KEY,
        account_code text NOT NULL,
        message_id text NOT NULL,
        subscription_id text NOT NULL,
        endpoint_url text NOT NULL,
        attempt integer NOT NULL,
        at_ms double precision NOT NULL,
        status integer,
        error_code text,
        error_message text,
        outcome text NOT NULL,
        next_attempt_ms double precision,
        reason text)`,
      `CREATE INDEX delivery_log_account ON ${s}.delivery_log (account_code, sequence)`,
      `CREATE TABLE ${s}.messages (
        account_code text NOT NULL,
        id text NOT NULL,
        kind text NOT NULL,
        property_id text,
        body text NOT NULL,
        created_ms double precision NOT NULL,
        PRIMARY KEY (account_code, id))`,
      `CREATE TABLE ${s}.deliveries (
        account_code text NOT NULL,
        message_id text NOT NULL,
        subscription_id text NOT NULL,
        status text NOT NULL DEFAULT 'pending'
          CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_ms double precision,
        last_error text,
        PRIMARY KEY (account_code, message_id, subscription_id),
        FOREIGN KEY (account_code, message_id)
          REFERENCES ${s}.messages (account_code, id) ON DELETE CASCADE)`,
      `CREATE INDEX deliveries_due ON ${s}.deliveries (next_attempt_ms) WHERE status = 'pending'`,
    ],
  },
  {
    version: 2,
    name: 'delivery log: durations, the attempts of a subscription, retention by time',
    statements: (s) => [
      `ALTER TABLE ${s}.delivery_log ADD COLUMN duration_ms double precision`,
      `COMMENT ON COLUMN ${s}.delivery_log.duration_ms IS 'how long the request took (ms); NULL: no request was sent'`,
      `CREATE INDEX delivery_log_subscription ON ${s}.delivery_log
        (account_code, subscription_id, sequence)`,
      `CREATE INDEX delivery_log_age ON ${s}.delivery_log (at_ms)`,
    ],
  },
  {
    version: 3,
    name: 'outbox: pending deliveries, claims, replays, endpoint health, disabled reasons',
    statements: (s) => [
      `ALTER TABLE ${s}.subscriptions
        ADD COLUMN disabled_reason text
          CHECK (disabled_reason IN ('requested', 'endpoint_failing', 'endpoint_gone')),
        ADD COLUMN disabled_at text,
        ADD COLUMN streak bigint NOT NULL DEFAULT 0,
        ADD COLUMN failing_since_ms double precision,
        ADD COLUMN failed_messages integer NOT NULL DEFAULT 0`,
      // Those disabled before reasons were kept were disabled on request, at their last change.
      `UPDATE ${s}.subscriptions SET disabled_reason = 'requested', disabled_at = updated_at
        WHERE status = 'disabled'`,
      `COMMENT ON COLUMN ${s}.subscriptions.streak IS 'numbers the failing streaks of the endpoint: grows when one ends (a delivery, enabling, deleting); health columns change no revision'`,
      `COMMENT ON COLUMN ${s}.subscriptions.failing_since_ms IS 'when the first failed attempt of the current streak started (ms); NULL: no streak'`,
      `COMMENT ON COLUMN ${s}.subscriptions.failed_messages IS 'messages with a failed attempt in the current streak, each once'`,
      `ALTER TABLE ${s}.deliveries
        ADD COLUMN endpoint_url text NOT NULL DEFAULT '',
        ADD COLUMN published_ms double precision,
        ADD COLUMN first_attempt_ms double precision,
        ADD COLUMN lease_until_ms double precision NOT NULL DEFAULT 0,
        ADD COLUMN replay integer NOT NULL DEFAULT 0,
        ADD COLUMN failed_streak bigint`,
      `UPDATE ${s}.deliveries AS d SET published_ms = m.created_ms,
          next_attempt_ms = coalesce(d.next_attempt_ms, m.created_ms)
        FROM ${s}.messages AS m WHERE m.account_code = d.account_code AND m.id = d.message_id`,
      `ALTER TABLE ${s}.deliveries
        ALTER COLUMN endpoint_url DROP DEFAULT,
        ALTER COLUMN published_ms SET NOT NULL,
        ALTER COLUMN next_attempt_ms SET NOT NULL`,
      `COMMENT ON COLUMN ${s}.deliveries.published_ms IS 'the created_ms of its message: replays of a subscription select and order by it'`,
      `COMMENT ON COLUMN ${s}.deliveries.lease_until_ms IS 'a queue holds it until then (ms): claims take it only after'`,
      `COMMENT ON COLUMN ${s}.deliveries.failed_streak IS 'the subscription streak in which it last failed: counted once in it'`,
      // A claim reads pending deliveries in the order they are due, and checks their lease in
      // the index, not in the table: in-flight deliveries (due and leased) cost an index entry
      // each, not a row. It replaces deliveries_due (migration 1), its first column.
      `DROP INDEX ${s}.deliveries_due`,
      `CREATE INDEX deliveries_pending ON ${s}.deliveries (next_attempt_ms, lease_until_ms)
        WHERE status = 'pending'`,
      `CREATE INDEX deliveries_failed ON ${s}.deliveries
        (account_code, subscription_id, published_ms) WHERE status = 'failed'`,
      `CREATE INDEX messages_age ON ${s}.messages (created_ms)`,
      `ALTER TABLE ${s}.delivery_log ADD COLUMN replay integer`,
      `COMMENT ON COLUMN ${s}.delivery_log.replay IS 'the replay round of the attempt; NULL: the publish'`,
    ],
  },
  {
    version: 4,
    name: 'replays: pacing per subscription, across calls and instances',
    statements: (s) => [
      // A row per subscription ever replayed. A replay locks the rows of its subscriptions in id
      // order before their deliveries: replays at once queue on them and never deadlock.
      `CREATE TABLE ${s}.replay_paces (
        account_code text NOT NULL,
        subscription_id text NOT NULL,
        paced_until_ms double precision NOT NULL,
        PRIMARY KEY (account_code, subscription_id))`,
      `COMMENT ON COLUMN ${s}.replay_paces.paced_until_ms IS 'the paced-until time of the replays to the subscription (ms): each replayed delivery moves it one replay pace on, from now at the latest; a replayed delivery is due at once only while it is less than replayInlineLimit paces ahead'`,
    ],
  },
  {
    version: 5,
    name: 'group commit: the attempts of a batch recorded in one call, one after the other',
    statements: (s) => [recordAttempts(s)],
  },
  {
    version: 6,
    name: 'subscriptions: description, rate limit, delivery headers, metadata, signature type',
    statements: (s) => [
      `ALTER TABLE ${s}.subscriptions
        ADD COLUMN description text,
        ADD COLUMN rate_limit integer CHECK (rate_limit BETWEEN 1 AND 10000),
        ADD COLUMN headers jsonb,
        ADD COLUMN metadata jsonb,
        ADD COLUMN signature_type text CHECK (signature_type IN ('hmac-sha256', 'ed25519'))`,
      `COMMENT ON COLUMN ${s}.subscriptions.rate_limit IS 'deliveries per second; NULL: no limit of its own'`,
      `COMMENT ON COLUMN ${s}.subscriptions.headers IS 'request headers sent with every delivery, name to value; NULL: none'`,
      `COMMENT ON COLUMN ${s}.subscriptions.metadata IS 'its owner''s data, key to value, never sent; NULL: none'`,
      `COMMENT ON COLUMN ${s}.subscriptions.signature_type IS 'NULL: hmac-sha256 (rows from before the column)'`,
    ],
  },
  {
    version: 7,
    name: 'idempotent publish: the message each idempotency key of an account holds',
    statements: (s) => [
      // Apart from the messages, which retention deletes on its own time: a key holds its message
      // until it expires, whatever became of the message. The primary key is what makes
      // publishes with one key at once record one message: the second waits on the first's row.
      `CREATE TABLE ${s}.idempotency_keys (
        account_code text NOT NULL,
        key text NOT NULL,
        message_id text NOT NULL,
        fingerprint text NOT NULL,
        subscription_ids text[] NOT NULL,
        created_ms double precision NOT NULL,
        expires_ms double precision NOT NULL,
        PRIMARY KEY (account_code, key))`,
      `COMMENT ON COLUMN ${s}.idempotency_keys.fingerprint IS 'what the message is of (kind, property, data): a publish with the key and another fingerprint is refused'`,
      `COMMENT ON COLUMN ${s}.idempotency_keys.subscription_ids IS 'the deliveries the first publish answered, answered again to every publish with the key'`,
      `COMMENT ON COLUMN ${s}.idempotency_keys.expires_ms IS 'from then on (ms) a publish with the key records a new message, which takes the row over'`,
      `CREATE INDEX idempotency_keys_expiry ON ${s}.idempotency_keys (expires_ms)`,
    ],
  },
  {
    version: 8,
    name: 'group commit: each attempt also tells the failing streak a delivered attempt ended',
    statements: (s) => [
      // Its answer gains two columns, which CREATE OR REPLACE cannot give a function: dropped and
      // created again in the one transaction, so that a call finds one or the other by its name.
      `DROP FUNCTION ${s}.record_attempts(text[], text[], text[], text[], integer[], float8[],
        integer[], text[], text[], text[], float8[], text[], float8[], integer[], float8[])`,
      recordAttemptsEndingStreaks(s),
    ],
  },
  {
    version: 9,
    name: 'subscriptions: the public key of an ed25519 signing key',
    statements: (s) => [
      // The signing key (whsk_) is a secret like any other, in signing_secrets; its public key is
      // not, and reads show it without reading (or decrypting) the secrets.
      `ALTER TABLE ${s}.subscriptions ADD COLUMN public_key text`,
      `COMMENT ON COLUMN ${s}.subscriptions.public_key IS 'whpk_ public key of the newest signing key when it is an ed25519 one (whsk_); NULL: an HMAC secret (whsec_)'`,
    ],
  },
  {
    version: 10,
    name: 'group commit: record_attempts planned once a session, its deliveries found by their key',
    // The same signature and answer: replaced in place, its steps as migration 8 left them.
    statements: (s) => [recordAttemptsEndingStreaks(s, { plannedOnce: true })],
  },
];

/** The key of the advisory lock that migrations of `schema` take. */
const LOCK_NAME = 'api-conventions migrations ';

/** What migrating the schema did, as `repository.migration` tells it. */
export interface MigrationReport {
  /** The versions this call applied (none when another instance had). */
  readonly applied: readonly number[];
  /** The schema's version afterwards. */
  readonly version: number;
}

/**
 * Bring `schema` up to the last migration: for each, a transaction that takes the advisory lock,
 * creates the schema and the record table where missing, and applies the migration unless the
 * record has it. An instance that waited for the lock finds the work done and applies nothing.
 * @param schema - the schema's name, already checked to be a plain identifier
 */
export async function migrate(
  database: DatabaseKind,
  schema: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationReport> {
  const s = quoteIdentifier(schema);
  const applied: number[] = [];
  let version = 0;
  for (const migration of migrations) {
    version = await inTransaction(database, async (tx) => {
      const current = await lockAndRead(tx, schema, s);
      if (current >= migration.version) return current;
      for (const statement of migration.statements(s)) await tx.query(statement);
      await tx.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
      return migration.version;
    });
  }
  return { applied, version };
}

/** Take the lock, make sure the schema and its record exist, and read the version applied. */
async function lockAndRead(tx: SqlDatabase, schema: string, s: string): Promise<number> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [LOCK_NAME + schema]);
  await tx.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  await tx.query(`CREATE TABLE IF NOT EXISTS ${s}.migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`);
  const { rows } = await tx.query(
    `SELECT coalesce(max(version), 0)::integer AS version FROM ${s}.migrations`,
  );
  return Number((rows[0] as { version: unknown } | undefined)?.version ?? 0);
}

/** A plain identifier (checked by the options) in double quotes. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
