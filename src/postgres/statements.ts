/**
 * The repository's SQL, one statement per operation, the same on PostgreSQL and PGlite. Every
 * statement names the account. A change takes its revision from the one `revision` row first (the
 * row lock orders the writers until they commit), changes the subscription and notifies in the same
 * statement, so that no connection is held between statements. @module
 */

/** The columns a subscription is read from, in the order `changeOfTuple` in rows.ts reads them. */
const COLUMNS = `account_code, id, endpoint_url, events, property_ids, status, created_at,
  updated_at, revision, deleted_at`;

/** The statements of one schema and its notification channel. */
export interface Statements {
  readonly create: string;
  readonly get: string;
  readonly list: string;
  readonly update: string;
  readonly delete: string;
  readonly rotateSecret: string;
  readonly signingSecrets: string;
  readonly changesSince: string;
  readonly recordAttempt: string;
  readonly attempts: string;
  readonly deleteAttemptsBefore: string;
  readonly secretsToReencrypt: string;
  readonly reencrypt: string;
}

/**
 * The statements for a quoted schema name and a channel (a plain identifier, as the options
 * check it).
 */
export function statements(s: string, channel: string): Statements {
  const notify = `pg_notify('${channel}', sub.revision::text)`;
  const live = `SELECT 1 FROM ${s}.subscriptions
      WHERE account_code = $1::text AND id = $2::text AND deleted_at IS NULL`;
  return {
    // $1 account, $2 id, $3 endpoint, $4 events, $5 property ids, $6 created, $7 updated,
    // $8 secret, $9 key id, $10 secret created ms, $11 maxPerAccount.
    // `guard` spares a revision in the common refusal, from the account's count of live
    // subscriptions as the statement's snapshot reads it; the accounts row, locked and re-read at
    // its latest version, makes the refusal atomic. An id the account holds is replaced, as in
    // memory; its count stays (`prior` is read from the statement's snapshot).
    // `rev` and `account` hold one row at most, and the LIMITs tell the planner so: until the
    // small tables are analysed it guesses thousands of rows each, millions for their product,
    // and past jit_above_cost every create was JIT-compiled (13 to 20 ms each on PostgreSQL 15).
    create: `WITH guard AS (
        SELECT coalesce((SELECT live_subscriptions FROM ${s}.accounts
          WHERE account_code = $1::text), 0) < $11::integer AS open
      ), prior AS (${live}
      ), rev AS (
        UPDATE ${s}.revision SET value = value + 1 WHERE (SELECT open FROM guard) RETURNING value
      ), account AS (
        INSERT INTO ${s}.accounts AS a (account_code, live_subscriptions)
        SELECT $1::text, 1 FROM rev WHERE $11::integer > 0
        ON CONFLICT (account_code) DO UPDATE
          SET live_subscriptions = a.live_subscriptions
            + CASE WHEN EXISTS (SELECT 1 FROM prior) THEN 0 ELSE 1 END
          WHERE a.live_subscriptions < $11::integer
        RETURNING 1
      ), sub AS (
        INSERT INTO ${s}.subscriptions AS t (${COLUMNS}, created_revision)
        SELECT $1::text, $2::text, $3::text, $4::text[], $5::text[], 'enabled', $6::text,
          $7::text, rev.value, NULL, rev.value
        FROM (SELECT value FROM rev LIMIT 1) AS rev, (SELECT FROM account LIMIT 1) AS account
        ON CONFLICT (account_code, id) DO UPDATE SET endpoint_url = excluded.endpoint_url,
          events = excluded.events, property_ids = excluded.property_ids, status = 'enabled',
          created_at = excluded.created_at, updated_at = excluded.updated_at,
          revision = excluded.revision, deleted_at = NULL,
          created_revision = CASE WHEN t.deleted_at IS NULL THEN t.created_revision
            ELSE excluded.created_revision END
        RETURNING ${COLUMNS}
      ), cleared AS (
        DELETE FROM ${s}.signing_secrets
        WHERE account_code = $1::text AND subscription_id = $2::text AND EXISTS (SELECT 1 FROM sub)
      ), secret AS (
        INSERT INTO ${s}.signing_secrets (account_code, subscription_id, secret, key_id, created_ms)
        SELECT $1::text, $2::text, $8::text, $9::text, $10::float8 FROM sub
      )
      SELECT sub.*, ${notify} FROM sub`,
    get: `SELECT ${COLUMNS} FROM ${s}.subscriptions
      WHERE account_code = $1::text AND id = $2::text AND deleted_at IS NULL`,
    // One row even past the end (the count), with the page's subscriptions joined to it.
    list: `SELECT total.n AS total_items, page.*
      FROM (SELECT count(*) AS n FROM ${s}.subscriptions
            WHERE account_code = $1::text AND deleted_at IS NULL) AS total
      LEFT JOIN LATERAL (
        SELECT ${COLUMNS}, created_revision FROM ${s}.subscriptions
        WHERE account_code = $1::text AND deleted_at IS NULL
        ORDER BY created_revision
        OFFSET $2::bigint LIMIT $3::bigint
      ) AS page ON true
      ORDER BY page.created_revision`,
    // $3 endpoint or NULL, $4 events or NULL, $5 whether property ids change, $6 them, $7 status
    // or NULL, $8 updated.
    update: `WITH rev AS (
        UPDATE ${s}.revision SET value = value + 1 WHERE EXISTS (${live}) RETURNING value
      ), sub AS (
        UPDATE ${s}.subscriptions AS t SET
          endpoint_url = coalesce($3::text, t.endpoint_url),
          events = coalesce($4::text[], t.events),
          property_ids = CASE WHEN $5::boolean THEN $6::text[] ELSE t.property_ids END,
          status = coalesce($7::text, t.status),
          updated_at = $8::text,
          revision = rev.value
        FROM rev
        WHERE t.account_code = $1::text AND t.id = $2::text AND t.deleted_at IS NULL
        RETURNING ${COLUMNS.replaceAll(/(\w+)/g, 't.$1')}
      )
      SELECT sub.*, ${notify} FROM sub`,
    // The row stays as a tombstone (deleted_at), so that changesSince tells the delete.
    delete: `WITH rev AS (
        UPDATE ${s}.revision SET value = value + 1 WHERE EXISTS (${live}) RETURNING value
      ), sub AS (
        UPDATE ${s}.subscriptions AS t SET deleted_at = $3::text, revision = rev.value
        FROM rev
        WHERE t.account_code = $1::text AND t.id = $2::text AND t.deleted_at IS NULL
        RETURNING t.revision
      ), account AS (
        UPDATE ${s}.accounts SET live_subscriptions = live_subscriptions - 1
        WHERE account_code = $1::text AND EXISTS (SELECT 1 FROM sub)
      ), secrets AS (
        DELETE FROM ${s}.signing_secrets
        WHERE account_code = $1::text AND subscription_id = $2::text AND EXISTS (SELECT 1 FROM sub)
      )
      SELECT sub.revision, ${notify} FROM sub`,
    // $3 secret, $4 key id, $5 at, $6 at + grace. Secrets are only inserted: an older one stops
    // signing at the earliest retire_older_ms of the newer ones; those that no longer sign at $5
    // are dropped. The subscription's row lock orders rotations of one subscription.
    rotateSecret: `WITH sub AS (${live} FOR UPDATE
      ), added AS (
        INSERT INTO ${s}.signing_secrets
          (account_code, subscription_id, secret, key_id, created_ms, retire_older_ms)
        SELECT $1::text, $2::text, $3::text, $4::text, $5::float8, $6::float8 FROM sub
      ), dropped AS (
        DELETE FROM ${s}.signing_secrets AS o
        WHERE o.account_code = $1::text AND o.subscription_id = $2::text
          AND EXISTS (SELECT 1 FROM sub)
          AND ($6::float8 <= $5::float8 OR EXISTS (
            SELECT 1 FROM ${s}.signing_secrets AS n
            WHERE n.account_code = o.account_code AND n.subscription_id = o.subscription_id
              AND n.sequence > o.sequence AND n.retire_older_ms <= $5::float8))
      )
      SELECT count(*)::integer AS rotated FROM sub`,
    // $3 at.
    signingSecrets: `SELECT o.secret, o.key_id FROM ${s}.signing_secrets AS o
      WHERE o.account_code = $1::text AND o.subscription_id = $2::text AND EXISTS (${live})
        AND NOT EXISTS (
          SELECT 1 FROM ${s}.signing_secrets AS n
          WHERE n.account_code = o.account_code AND n.subscription_id = o.subscription_id
            AND n.sequence > o.sequence AND n.retire_older_ms <= $3::float8)
      ORDER BY o.sequence DESC`,
    // One JSON text of [columns] tuples: loading a million subscriptions at start is read-bound,
    // and one text parses faster than as many rows (about 1.7 times, measured with pg).
    changesSince: `SELECT coalesce(json_agg(json_build_array(${COLUMNS}) ORDER BY revision), '[]')::text
        AS changes
      FROM (SELECT ${COLUMNS} FROM ${s}.subscriptions
            WHERE revision > $1::bigint ORDER BY revision LIMIT $2::bigint) AS page`,
    recordAttempt: `INSERT INTO ${s}.delivery_log (account_code, message_id, subscription_id,
        endpoint_url, attempt, at_ms, status, error_code, error_message, outcome,
        next_attempt_ms, reason, duration_ms)
      VALUES ($1::text, $2::text, $3::text, $4::text, $5::integer, $6::float8, $7::integer,
        $8::text, $9::text, $10::text, $11::float8, $12::text, $13::float8)
      RETURNING sequence`,
    // $2 before this sequence, $3 subscription or NULL, $4 outcomes or NULL, $5 since or NULL,
    // $6 until or NULL, $7 limit. Newest first.
    attempts: `SELECT * FROM ${s}.delivery_log
      WHERE account_code = $1::text AND sequence < $2::bigint
        AND ($3::text IS NULL OR subscription_id = $3::text)
        AND ($4::text[] IS NULL OR outcome = ANY ($4::text[]))
        AND ($5::float8 IS NULL OR at_ms >= $5::float8)
        AND ($6::float8 IS NULL OR at_ms < $6::float8)
      ORDER BY sequence DESC LIMIT $7::bigint`,
    // $1 before this time (ms), $2 at most this many: one bounded batch of retention.
    deleteAttemptsBefore: `WITH old AS (
        SELECT sequence FROM ${s}.delivery_log WHERE at_ms < $1::float8 LIMIT $2::bigint
      ), gone AS (
        DELETE FROM ${s}.delivery_log WHERE sequence IN (SELECT sequence FROM old) RETURNING 1
      )
      SELECT count(*)::integer AS deleted FROM gone`,
    // $1 the newest key id, $2 after this sequence, $3 how many.
    secretsToReencrypt: `SELECT sequence, account_code, subscription_id, secret, key_id
      FROM ${s}.signing_secrets
      WHERE key_id IS DISTINCT FROM $1::text AND sequence > $2::bigint
      ORDER BY sequence LIMIT $3::bigint`,
    // Each row only where it still holds what was read: a secret changed meanwhile is left alone.
    reencrypt: `UPDATE ${s}.signing_secrets AS t SET secret = n.secret, key_id = n.key_id
      FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS n(sequence, old, secret, key_id)
      WHERE t.sequence = n.sequence AND t.secret = n.old
      RETURNING t.sequence`,
  };
}
