/**
 * The repository's schema, created and changed by numbered migrations: each in a transaction of
 * its own, under an advisory lock so that instances starting together do not race, and recorded
 * in the `migrations` table of the schema (see docs/postgres.md). @module
 */
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

/**
 * `record_attempts`: the attempts of a batch, each as one attempt alone would be recorded, in the
 * batch's order for each subscription (the subscriptions in one order, so that batches at once
 * never wait on each other in a circle), in one call and so in one transaction; a batch that
 * moves no subscription's health (every attempt delivered, to endpoints with no failing streak,
 * each delivery once) in one pass. Each attempt: its entry in the delivery log; its
 * delivery, locked first (`held`), so that attempts at once of one message count it once; the
 * subscription's failing streak; the delivery moved when it is pending in the attempt's round (a
 * retry pending again, due at its next attempt and leased until `leases_until_ms` or then), and
 * marked as counted in the streak. The subscription's row is written only when its health
 * changes: a delivery to a healthy endpoint locks nothing but its own delivery. Each attempt sees
 * what the ones before it of its subscription wrote, as if they had been recorded one by one. One row per
 * attempt: its position in the batch (from 1), its sequence in the log, and the streak after it.
 * A later version of these steps replaces the function in a migration of its own (migration 8:
 * {@link recordAttemptsEndingStreaks}).
 */
function recordAttempts(s: string): string {
  // Whether the attempt moves its delivery: pending, and in the attempt's replay round.
  const round = `(d.status = 'pending' AND d.replay = coalesce(item.replay, 0))`;
  return `CREATE FUNCTION ${s}.record_attempts(
      account_codes text[], message_ids text[], subscription_ids text[], endpoint_urls text[],
      attempt_numbers integer[], at_ms float8[], statuses integer[], error_codes text[],
      error_messages text[], outcomes text[], next_attempt_ms float8[], reasons text[],
      durations_ms float8[], replays integer[], leases_until_ms float8[])
    RETURNS TABLE (out_n bigint, out_sequence bigint, out_failing_since_ms float8,
      out_failed_messages integer)
    LANGUAGE plpgsql ROWS 16
    -- Each attempt finds its delivery and subscription by key: an index lookup per row, whatever
    -- the statistics say (a hash join over a batch read the whole deliveries table, a cost that
    -- grew with the table); no JIT compilation either, which costs more than the statements.
    SET jit = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    AS $body$
    DECLARE
      item record;
    BEGIN
      -- Every attempt delivered, to an endpoint with no failing streak, each delivery once: the
      -- health of no subscription moves, so the batch is recorded in one pass, its deliveries
      -- locked in key order first.
      IF (SELECT bool_and(o.outcome = 'delivered') FROM unnest(outcomes) AS o(outcome))
        AND (SELECT count(*) = count(DISTINCT (k.a, k.m, k.s))
          FROM unnest(account_codes, message_ids, subscription_ids) AS k(a, m, s))
        AND NOT EXISTS (
          SELECT 1 FROM unnest(account_codes, subscription_ids) AS k(a, s)
          JOIN ${s}.subscriptions AS t ON t.account_code = k.a AND t.id = k.s
          WHERE t.deleted_at IS NULL AND t.failing_since_ms IS NOT NULL)
      THEN
        RETURN QUERY WITH batch AS (
          SELECT * FROM unnest(account_codes, message_ids, subscription_ids, endpoint_urls,
            attempt_numbers, at_ms, statuses, error_codes, error_messages, outcomes,
            next_attempt_ms, reasons, durations_ms, replays)
            WITH ORDINALITY AS x(account_code, message_id, subscription_id, endpoint_url, attempt,
              at_ms, status, error_code, error_message, outcome, next_attempt_ms, reason,
              duration_ms, replay, n)
        ), held AS (
          SELECT d.account_code, d.message_id, d.subscription_id FROM ${s}.deliveries AS d
          JOIN batch AS b ON d.account_code = b.account_code AND d.message_id = b.message_id
            AND d.subscription_id = b.subscription_id
          ORDER BY d.account_code COLLATE "C", d.message_id COLLATE "C",
            d.subscription_id COLLATE "C"
          FOR UPDATE OF d
        ), entry AS (
          INSERT INTO ${s}.delivery_log (account_code, message_id, subscription_id,
            endpoint_url, attempt, at_ms, status, error_code, error_message, outcome,
            next_attempt_ms, reason, duration_ms, replay)
          SELECT b.account_code, b.message_id, b.subscription_id, b.endpoint_url, b.attempt,
            b.at_ms, b.status, b.error_code, b.error_message, b.outcome, b.next_attempt_ms,
            b.reason, b.duration_ms, b.replay
          FROM batch AS b ORDER BY b.n
          RETURNING delivery_log.sequence, delivery_log.account_code, delivery_log.message_id,
            delivery_log.subscription_id
        ), moved AS (
          UPDATE ${s}.deliveries AS d SET status = 'delivered'
          FROM batch AS b, held AS h
          WHERE d.account_code = b.account_code AND d.message_id = b.message_id
            AND d.subscription_id = b.subscription_id
            AND h.account_code = b.account_code AND h.message_id = b.message_id
            AND h.subscription_id = b.subscription_id
            AND d.status = 'pending' AND d.replay = coalesce(b.replay, 0)
        )
        SELECT b.n, e.sequence, t.failing_since_ms, t.failed_messages
        FROM batch AS b
        JOIN entry AS e ON e.account_code = b.account_code AND e.message_id = b.message_id
          AND e.subscription_id = b.subscription_id
        LEFT JOIN ${s}.subscriptions AS t ON t.account_code = b.account_code
          AND t.id = b.subscription_id AND t.deleted_at IS NULL;
        RETURN;
      END IF;
      -- One by one, in the batch's order for each subscription, the subscriptions in one order:
      -- batches at once take their rows in the same order.
      FOR item IN
        SELECT * FROM unnest(account_codes, message_ids, subscription_ids, endpoint_urls,
          attempt_numbers, at_ms, statuses, error_codes, error_messages, outcomes,
          next_attempt_ms, reasons, durations_ms, replays, leases_until_ms)
          WITH ORDINALITY AS x(account_code, message_id, subscription_id, endpoint_url, attempt,
            at_ms, status, error_code, error_message, outcome, next_attempt_ms, reason,
            duration_ms, replay, lease_until_ms, n)
        ORDER BY x.account_code COLLATE "C", x.subscription_id COLLATE "C", x.n
      LOOP
        RETURN QUERY WITH entry AS (
          INSERT INTO ${s}.delivery_log (account_code, message_id, subscription_id,
            endpoint_url, attempt, at_ms, status, error_code, error_message, outcome,
            next_attempt_ms, reason, duration_ms, replay)
          VALUES (item.account_code, item.message_id, item.subscription_id, item.endpoint_url,
            item.attempt, item.at_ms, item.status, item.error_code, item.error_message,
            item.outcome, item.next_attempt_ms, item.reason, item.duration_ms, item.replay)
          RETURNING delivery_log.sequence
        ), held AS (
          SELECT d.failed_streak FROM ${s}.deliveries AS d
          WHERE d.account_code = item.account_code AND d.message_id = item.message_id
            AND d.subscription_id = item.subscription_id
          FOR UPDATE
        ), health AS (
          UPDATE ${s}.subscriptions AS t SET
            streak = t.streak + CASE WHEN item.outcome = 'delivered' THEN 1 ELSE 0 END,
            failing_since_ms = CASE WHEN item.outcome = 'delivered' THEN NULL
              ELSE coalesce(t.failing_since_ms, item.at_ms) END,
            failed_messages = CASE WHEN item.outcome = 'delivered' THEN 0
              WHEN EXISTS (SELECT 1 FROM held WHERE held.failed_streak = t.streak)
                THEN t.failed_messages
              ELSE t.failed_messages + 1 END
          WHERE t.account_code = item.account_code AND t.id = item.subscription_id
            AND t.deleted_at IS NULL AND item.duration_ms IS NOT NULL
            AND CASE WHEN item.outcome = 'delivered' THEN t.failing_since_ms IS NOT NULL
              ELSE t.failing_since_ms IS NULL
                OR NOT EXISTS (SELECT 1 FROM held WHERE held.failed_streak = t.streak) END
          RETURNING t.streak, t.failing_since_ms, t.failed_messages
        ), moved AS (
          UPDATE ${s}.deliveries AS d SET
            status = CASE WHEN NOT ${round} THEN d.status
              WHEN item.outcome = 'retry' THEN 'pending'
              WHEN item.outcome = 'delivered' THEN 'delivered' ELSE 'failed' END,
            attempts = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN greatest(d.attempts, item.attempt) ELSE d.attempts END,
            first_attempt_ms = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN coalesce(d.first_attempt_ms, item.at_ms) ELSE d.first_attempt_ms END,
            next_attempt_ms = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN coalesce(item.next_attempt_ms, item.at_ms) ELSE d.next_attempt_ms END,
            lease_until_ms = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN coalesce(item.lease_until_ms, item.next_attempt_ms, item.at_ms)
              ELSE d.lease_until_ms END,
            failed_streak = CASE WHEN item.outcome <> 'delivered' AND h.streak IS NOT NULL
              THEN h.streak ELSE d.failed_streak END
          FROM (SELECT 1 FROM held LIMIT 1) AS locked
            LEFT JOIN (SELECT streak FROM health LIMIT 1) AS h ON true
          -- By the key, not a join to held: only the primary key serves it, whatever the
          -- statistics of the partial index on pending deliveries say.
          WHERE d.account_code = item.account_code AND d.message_id = item.message_id
            AND d.subscription_id = item.subscription_id
            AND (${round} OR (item.outcome <> 'delivered' AND h.streak IS NOT NULL))
        )
        SELECT item.n, entry.sequence, kept.failing_since_ms, kept.failed_messages
        FROM entry LEFT JOIN LATERAL (
          SELECT health.failing_since_ms, health.failed_messages FROM health
          UNION ALL
          SELECT t.failing_since_ms, t.failed_messages FROM ${s}.subscriptions AS t
          WHERE t.account_code = item.account_code AND t.id = item.subscription_id
            AND t.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM health)
          LIMIT 1
        ) AS kept ON true;
      END LOOP;
    END
    $body$`;
}

/**
 * `record_attempts` as migration 8 leaves it: the steps of {@link recordAttempts}, and in each row
 * also the failing streak that the attempt ended, as it stood before it (`out_ended_since_ms`,
 * `out_ended_messages`; NULL when the attempt ended none), which `AttemptRecord.ended` tells. Only
 * a delivered attempt that was sent to a live subscription with a failing streak ends one, so the
 * one pass over a batch that moves no subscription's health ends none and answers NULL: it reads
 * nothing more than before. One by one, the subscription's row that such an attempt writes is read
 * as it stands once locked, in the statement that writes it, so that an attempt recorded at once
 * by another instance is counted in the streak it tells, as in the health it leaves.
 *
 * Migration 10 replaces it with `plannedOnce`, the same steps planned at less cost:
 * - `plan_cache_mode = force_generic_plan`: each statement of the function is planned once a
 *   session and its plan kept. Under the default (`auto`), the one-pass statement was planned
 *   again at every call (0.3 to 0.5 ms of the server's CPU each time): a plan made for the batch's
 *   own arrays, whose length the planner reads, always looked cheaper than one made for arrays of
 *   any length. The settings below keep the kept plan to index lookups by key.
 * - the one pass moves its deliveries by their primary key alone. Its `d.status = 'pending'` let
 *   the planner read the partial index of pending deliveries (`deliveries_pending`) whole for
 *   each attempt, as cheap as the statistics of an idle moment say it is, at a cost that grows
 *   with the deliveries pending and the dead entries not yet vacuumed (thousands of entries read
 *   per attempt with a backlog). Compared in the "C" collation (the same test for text), the
 *   condition no longer matches the index's predicate, so that only the primary key serves it.
 */
function recordAttemptsEndingStreaks(
  s: string,
  { plannedOnce = false }: { readonly plannedOnce?: boolean } = {},
): string {
  // Whether the attempt moves its delivery: pending, and in the attempt's replay round.
  const round = `(d.status = 'pending' AND d.replay = coalesce(item.replay, 0))`;
  const pending = plannedOnce ? `d.status COLLATE "C" = 'pending'` : `d.status = 'pending'`;
  return `${plannedOnce ? 'CREATE OR REPLACE' : 'CREATE'} FUNCTION ${s}.record_attempts(
      account_codes text[], message_ids text[], subscription_ids text[], endpoint_urls text[],
      attempt_numbers integer[], at_ms float8[], statuses integer[], error_codes text[],
      error_messages text[], outcomes text[], next_attempt_ms float8[], reasons text[],
      durations_ms float8[], replays integer[], leases_until_ms float8[])
    RETURNS TABLE (out_n bigint, out_sequence bigint, out_failing_since_ms float8,
      out_failed_messages integer, out_ended_since_ms float8, out_ended_messages integer)
    LANGUAGE plpgsql ROWS 16
    -- Each attempt finds its delivery and subscription by key: an index lookup per row, whatever
    -- the statistics say (a hash join over a batch read the whole deliveries table, a cost that
    -- grew with the table); no JIT compilation either, which costs more than the statements.
    SET jit = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off${
      plannedOnce ? ' SET plan_cache_mode = force_generic_plan' : ''
    }
    AS $body$
    DECLARE
      item record;
    BEGIN
      -- Every attempt delivered, to an endpoint with no failing streak, each delivery once: the
      -- health of no subscription moves, so the batch is recorded in one pass, its deliveries
      -- locked in key order first. No attempt of it ends a streak.
      IF (SELECT bool_and(o.outcome = 'delivered') FROM unnest(outcomes) AS o(outcome))
        AND (SELECT count(*) = count(DISTINCT (k.a, k.m, k.s))
          FROM unnest(account_codes, message_ids, subscription_ids) AS k(a, m, s))
        AND NOT EXISTS (
          SELECT 1 FROM unnest(account_codes, subscription_ids) AS k(a, s)
          JOIN ${s}.subscriptions AS t ON t.account_code = k.a AND t.id = k.s
          WHERE t.deleted_at IS NULL AND t.failing_since_ms IS NOT NULL)
      THEN
        RETURN QUERY WITH batch AS (
          SELECT * FROM unnest(account_codes, message_ids, subscription_ids, endpoint_urls,
            attempt_numbers, at_ms, statuses, error_codes, error_messages, outcomes,
            next_attempt_ms, reasons, durations_ms, replays)
            WITH ORDINALITY AS x(account_code, message_id, subscription_id, endpoint_url, attempt,
              at_ms, status, error_code, error_message, outcome, next_attempt_ms, reason,
              duration_ms, replay, n)
        ), held AS (
          SELECT d.account_code, d.message_id, d.subscription_id FROM ${s}.deliveries AS d
          JOIN batch AS b ON d.account_code = b.account_code AND d.message_id = b.message_id
            AND d.subscription_id = b.subscription_id
          ORDER BY d.account_code COLLATE "C", d.message_id COLLATE "C",
            d.subscription_id COLLATE "C"
          FOR UPDATE OF d
        ), entry AS (
          INSERT INTO ${s}.delivery_log (account_code, message_id, subscription_id,
            endpoint_url, attempt, at_ms, status, error_code, error_message, outcome,
            next_attempt_ms, reason, duration_ms, replay)
          SELECT b.account_code, b.message_id, b.subscription_id, b.endpoint_url, b.attempt,
            b.at_ms, b.status, b.error_code, b.error_message, b.outcome, b.next_attempt_ms,
            b.reason, b.duration_ms, b.replay
          FROM batch AS b ORDER BY b.n
          RETURNING delivery_log.sequence, delivery_log.account_code, delivery_log.message_id,
            delivery_log.subscription_id
        ), moved AS (
          UPDATE ${s}.deliveries AS d SET status = 'delivered'
          FROM batch AS b, held AS h
          WHERE d.account_code = b.account_code AND d.message_id = b.message_id
            AND d.subscription_id = b.subscription_id
            AND h.account_code = b.account_code AND h.message_id = b.message_id
            AND h.subscription_id = b.subscription_id
            AND ${pending} AND d.replay = coalesce(b.replay, 0)
        )
        SELECT b.n, e.sequence, t.failing_since_ms, t.failed_messages, NULL::float8,
          NULL::integer
        FROM batch AS b
        JOIN entry AS e ON e.account_code = b.account_code AND e.message_id = b.message_id
          AND e.subscription_id = b.subscription_id
        LEFT JOIN ${s}.subscriptions AS t ON t.account_code = b.account_code
          AND t.id = b.subscription_id AND t.deleted_at IS NULL;
        RETURN;
      END IF;
      -- One by one, in the batch's order for each subscription, the subscriptions in one order:
      -- batches at once take their rows in the same order.
      FOR item IN
        SELECT * FROM unnest(account_codes, message_ids, subscription_ids, endpoint_urls,
          attempt_numbers, at_ms, statuses, error_codes, error_messages, outcomes,
          next_attempt_ms, reasons, durations_ms, replays, leases_until_ms)
          WITH ORDINALITY AS x(account_code, message_id, subscription_id, endpoint_url, attempt,
            at_ms, status, error_code, error_message, outcome, next_attempt_ms, reason,
            duration_ms, replay, lease_until_ms, n)
        ORDER BY x.account_code COLLATE "C", x.subscription_id COLLATE "C", x.n
      LOOP
        RETURN QUERY WITH entry AS (
          INSERT INTO ${s}.delivery_log (account_code, message_id, subscription_id,
            endpoint_url, attempt, at_ms, status, error_code, error_message, outcome,
            next_attempt_ms, reason, duration_ms, replay)
          VALUES (item.account_code, item.message_id, item.subscription_id, item.endpoint_url,
            item.attempt, item.at_ms, item.status, item.error_code, item.error_message,
            item.outcome, item.next_attempt_ms, item.reason, item.duration_ms, item.replay)
          RETURNING delivery_log.sequence
        ), held AS (
          SELECT d.failed_streak FROM ${s}.deliveries AS d
          WHERE d.account_code = item.account_code AND d.message_id = item.message_id
            AND d.subscription_id = item.subscription_id
          FOR UPDATE
        ), health AS (
          UPDATE ${s}.subscriptions AS t SET
            streak = t.streak + CASE WHEN item.outcome = 'delivered' THEN 1 ELSE 0 END,
            failing_since_ms = CASE WHEN item.outcome = 'delivered' THEN NULL
              ELSE coalesce(t.failing_since_ms, item.at_ms) END,
            failed_messages = CASE WHEN item.outcome = 'delivered' THEN 0
              WHEN EXISTS (SELECT 1 FROM held WHERE held.failed_streak = t.streak)
                THEN t.failed_messages
              ELSE t.failed_messages + 1 END
          -- The streak a delivered attempt ends, as it stands before: the row locked and read at
          -- its newest version (RETURNING tells only what the update wrote). Only a delivered
          -- attempt that was sent reads it, and only the row it is about to clear.
          FROM (SELECT) AS one LEFT JOIN (
            SELECT e.failing_since_ms, e.failed_messages FROM ${s}.subscriptions AS e
            WHERE item.outcome = 'delivered' AND item.duration_ms IS NOT NULL
              AND e.account_code = item.account_code AND e.id = item.subscription_id
              AND e.deleted_at IS NULL AND e.failing_since_ms IS NOT NULL
            FOR UPDATE
          ) AS ending ON true
          WHERE t.account_code = item.account_code AND t.id = item.subscription_id
            AND t.deleted_at IS NULL AND item.duration_ms IS NOT NULL
            AND CASE WHEN item.outcome = 'delivered' THEN t.failing_since_ms IS NOT NULL
              ELSE t.failing_since_ms IS NULL
                OR NOT EXISTS (SELECT 1 FROM held WHERE held.failed_streak = t.streak) END
          RETURNING t.streak, t.failing_since_ms, t.failed_messages,
            ending.failing_since_ms AS ended_since_ms, ending.failed_messages AS ended_messages
        ), moved AS (
          UPDATE ${s}.deliveries AS d SET
            status = CASE WHEN NOT ${round} THEN d.status
              WHEN item.outcome = 'retry' THEN 'pending'
              WHEN item.outcome = 'delivered' THEN 'delivered' ELSE 'failed' END,
            attempts = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN greatest(d.attempts, item.attempt) ELSE d.attempts END,
            first_attempt_ms = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN coalesce(d.first_attempt_ms, item.at_ms) ELSE d.first_attempt_ms END,
            next_attempt_ms = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN coalesce(item.next_attempt_ms, item.at_ms) ELSE d.next_attempt_ms END,
            lease_until_ms = CASE WHEN ${round} AND item.outcome = 'retry'
              THEN coalesce(item.lease_until_ms, item.next_attempt_ms, item.at_ms)
              ELSE d.lease_until_ms END,
            failed_streak = CASE WHEN item.outcome <> 'delivered' AND h.streak IS NOT NULL
              THEN h.streak ELSE d.failed_streak END
          FROM (SELECT 1 FROM held LIMIT 1) AS locked
            LEFT JOIN (SELECT streak FROM health LIMIT 1) AS h ON true
          -- By the key, not a join to held: only the primary key serves it, whatever the
          -- statistics of the partial index on pending deliveries say.
          WHERE d.account_code = item.account_code AND d.message_id = item.message_id
            AND d.subscription_id = item.subscription_id
            AND (${round} OR (item.outcome <> 'delivered' AND h.streak IS NOT NULL))
        )
        SELECT item.n, entry.sequence, kept.failing_since_ms, kept.failed_messages,
          kept.ended_since_ms, kept.ended_messages
        FROM entry LEFT JOIN LATERAL (
          SELECT health.failing_since_ms, health.failed_messages, health.ended_since_ms,
            health.ended_messages FROM health
          UNION ALL
          SELECT t.failing_since_ms, t.failed_messages, NULL::float8, NULL::integer
          FROM ${s}.subscriptions AS t
          WHERE t.account_code = item.account_code AND t.id = item.subscription_id
            AND t.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM health)
          LIMIT 1
        ) AS kept ON true;
      END LOOP;
    END
    $body$`;
}
