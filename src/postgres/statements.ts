/**
 * The repository's SQL, one statement per operation, the same on PostgreSQL and PGlite: the
 * subscriptions and their secrets here, the outbox and the delivery log in outbox-statements.ts.
 * Every statement names the account. A change takes its revision from the one `revision` row first (the
 * row lock orders the writers until they commit), changes the subscription and notifies in the same
 * statement, so that no connection is held between statements. @module
 */
import { type OutboxStatements, outboxStatements } from './outbox-statements.js';

/** The columns a subscription is read from, in the order `changeOfTuple` in rows.ts reads them. */
const COLUMNS = `account_code, id, endpoint_url, events, property_ids, status, created_at,
  updated_at, revision, deleted_at, disabled_reason, disabled_at, description, rate_limit, headers,
  metadata, signature_type, public_key`;

/**
 * A create's insert over the tombstone of a deleted subscription of the same id (the table's alias
 * is `t`): the row made anew, its place in creation order kept only while it was live.
 */
const CREATED_OVER_DELETED = `ON CONFLICT (account_code, id) DO UPDATE SET endpoint_url = excluded.endpoint_url,
          events = excluded.events, property_ids = excluded.property_ids, status = 'enabled',
          description = excluded.description, rate_limit = excluded.rate_limit,
          headers = excluded.headers, metadata = excluded.metadata,
          signature_type = excluded.signature_type, public_key = excluded.public_key,
          created_at = excluded.created_at, updated_at = excluded.updated_at,
          revision = excluded.revision, deleted_at = NULL, disabled_reason = NULL,
          disabled_at = NULL, created_revision = CASE WHEN t.deleted_at IS NULL THEN t.created_revision
            ELSE excluded.created_revision END`;

/** The statements of one schema and its notification channel. */
export interface Statements extends OutboxStatements {
  readonly create: string;
  readonly createSubscriptions: string;
  readonly get: string;
  readonly list: string;
  readonly update: string;
  readonly updateSubscriptions: string;
  readonly delete: string;
  readonly deleteSubscriptions: string;
  readonly rotateSecret: string;
  readonly rotateSecrets: string;
  readonly signingSecrets: string;
  readonly changesSince: string;
  readonly secretsToReencrypt: string;
  readonly reencrypt: string;
  readonly secretsToCheck: string;
}

/**
 * The statements for a quoted schema name and a channel (a plain identifier, as the options
 * check it).
 */
export function statements(s: string, channel: string): Statements {
  const notify = `pg_notify('${channel}', sub.revision::text)`;
  // The live subscription of a batch's row `b`, looked up by its key for each row. `OFFSET 0`
  // keeps PostgreSQL from making the test a join or a hashed subplan that reads every live
  // subscription, which it does whenever it believes the table small: a cost per batch that grew
  // with the table (PGlite never analyses its tables; a server's statistics can be old).
  const liveByKey = (b: string) => `SELECT 1 FROM ${s}.subscriptions AS t
          WHERE t.account_code = ${b}.account_code AND t.id = ${b}.id AND t.deleted_at IS NULL
          OFFSET 0`;
  const live = `SELECT 1 FROM ${s}.subscriptions
      WHERE account_code = $1::text AND id = $2::text AND deleted_at IS NULL`;
  // Of a batch's writes (`batch`, each of another subscription, its place `n`), those of a live
  // subscription as the statement's snapshot reads it (`live`, numbered `k` in the batch's order),
  // and the revision before theirs (`rev.base`): the revision row is taken first, as in every
  // change, and moved on by as many.
  const liveBatch = `live AS (
        SELECT b.*, row_number() OVER (ORDER BY b.n) AS k FROM batch AS b
        WHERE EXISTS (${liveByKey('b')})
      ), rev AS (
        UPDATE ${s}.revision SET value = value + (SELECT count(*) FROM live)
        WHERE EXISTS (SELECT 1 FROM live) RETURNING value - (SELECT count(*) FROM live) AS base
      )`;
  return {
    // $1 account, $2 id, $3 endpoint, $4 events, $5 property ids, $6 created, $7 updated,
    // $8 secret, $9 key id, $10 secret created ms, $11 maxPerAccount, $12 description, $13 rate
    // limit, $14 headers and $15 metadata (JSON text, or NULL), $16 signature type, $17 the
    // public key of an ed25519 signing key (or NULL).
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
          $7::text, rev.value, NULL, NULL, NULL, $12::text, $13::integer, $14::text::jsonb,
          $15::text::jsonb, $16::text, $17::text, rev.value
        FROM (SELECT value FROM rev LIMIT 1) AS rev, (SELECT FROM account LIMIT 1) AS account
        ${CREATED_OVER_DELETED}
        RETURNING ${COLUMNS}
      ), cleared AS (
        DELETE FROM ${s}.signing_secrets
        WHERE account_code = $1::text AND subscription_id = $2::text AND EXISTS (SELECT 1 FROM sub)
      ), secret AS (
        INSERT INTO ${s}.signing_secrets (account_code, subscription_id, secret, key_id, created_ms)
        SELECT $1::text, $2::text, $8::text, $9::text, $10::float8 FROM sub
      )
      SELECT sub.*, ${notify} FROM sub`,
    // A batch of creates, each of another account, in one statement: the arrays $1 to $17 of
    // `create`'s parameters, one element per create ($4 events and $5 property ids as JSON text,
    // $5 NULL for every property; see createColumns in rows.ts). Each create is refused or
    // written as `create` would alone: `guarded` keeps those the account's count lets through, as
    // the statement's snapshot reads it; they take the next revisions in the batch's order (the
    // revision row first, as every change), then the accounts rows, locked in one order and re-read
    // at their latest version. One row per create written, with its position `n`.
    createSubscriptions: `WITH batch AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
          $6::text[], $7::text[], $8::text[], $9::text[], $10::float8[], $11::integer[],
          $12::text[], $13::integer[], $14::text[], $15::text[], $16::text[], $17::text[])
          WITH ORDINALITY AS b(account_code, id, endpoint_url, events, property_ids, created_at,
            updated_at, secret, key_id, secret_ms, max, description, rate_limit, headers, metadata,
            signature_type, public_key, n)
      ), guarded AS (
        SELECT b.*, row_number() OVER (ORDER BY b.n) AS k, EXISTS (${liveByKey('b')}) AS prior
        FROM batch AS b
        WHERE coalesce((SELECT live_subscriptions FROM ${s}.accounts AS a
          WHERE a.account_code = b.account_code), 0) < b.max
      ), rev AS (
        UPDATE ${s}.revision SET value = value + (SELECT count(*) FROM guarded)
        WHERE EXISTS (SELECT 1 FROM guarded) RETURNING value - (SELECT count(*) FROM guarded) AS base
      ), account AS (
        INSERT INTO ${s}.accounts AS a (account_code, live_subscriptions)
        SELECT g.account_code, 1 FROM guarded AS g WHERE EXISTS (SELECT 1 FROM rev) AND g.max > 0
        ORDER BY g.account_code COLLATE "C"
        ON CONFLICT (account_code) DO UPDATE
          SET live_subscriptions = a.live_subscriptions + (SELECT CASE WHEN g.prior THEN 0 ELSE 1 END
            FROM guarded AS g WHERE g.account_code = excluded.account_code)
          WHERE a.live_subscriptions < (SELECT g.max FROM guarded AS g
            WHERE g.account_code = excluded.account_code)
        RETURNING a.account_code
      ), sub AS (
        INSERT INTO ${s}.subscriptions AS t (${COLUMNS}, created_revision)
        SELECT g.account_code, g.id, g.endpoint_url,
          ARRAY(SELECT jsonb_array_elements_text(g.events::jsonb)),
          CASE WHEN g.property_ids IS NULL THEN NULL
            ELSE ARRAY(SELECT jsonb_array_elements_text(g.property_ids::jsonb)) END,
          'enabled', g.created_at, g.updated_at, rev.base + g.k, NULL, NULL, NULL, g.description,
          g.rate_limit, g.headers::jsonb, g.metadata::jsonb, g.signature_type, g.public_key,
          rev.base + g.k
        FROM guarded AS g
          JOIN account ON account.account_code = g.account_code
          CROSS JOIN (SELECT base FROM rev LIMIT 1) AS rev
        ORDER BY g.n
        ${CREATED_OVER_DELETED}
        RETURNING ${COLUMNS}
      ), cleared AS (
        DELETE FROM ${s}.signing_secrets AS o USING sub
        WHERE o.account_code = sub.account_code AND o.subscription_id = sub.id
      ), secret AS (
        INSERT INTO ${s}.signing_secrets (account_code, subscription_id, secret, key_id, created_ms)
        SELECT g.account_code, g.id, g.secret, g.key_id, g.secret_ms
        FROM guarded AS g JOIN sub ON sub.account_code = g.account_code AND sub.id = g.id
        ORDER BY g.n
      )
      SELECT g.n, sub.*, ${notify}
      FROM sub JOIN guarded AS g ON g.account_code = sub.account_code AND g.id = sub.id
      ORDER BY sub.revision`,
    get: `SELECT ${COLUMNS} FROM ${s}.subscriptions
      WHERE account_code = $1::text AND id = $2::text AND deleted_at IS NULL`,
    // One row even past the end: the count, and the page's subscriptions as one JSON text of
    // rows (as changesSince: one text is read faster than a row of cells per subscription).
    list: `SELECT total.n AS total_items,
        (SELECT coalesce(json_agg(page ORDER BY page.created_revision), '[]')::text
         FROM (SELECT ${COLUMNS}, created_revision FROM ${s}.subscriptions
               WHERE account_code = $1::text AND deleted_at IS NULL
               ORDER BY created_revision
               OFFSET $2::bigint LIMIT $3::bigint) AS page) AS items
      FROM (SELECT count(*) AS n FROM ${s}.subscriptions
            WHERE account_code = $1::text AND deleted_at IS NULL) AS total`,
    // $3 endpoint or NULL, $4 events or NULL, $5 whether property ids change, $6 them, $7 status
    // or NULL, $8 updated, $9 the reason of a disable or NULL; for each of description ($10,
    // $11), rate limit ($12, $13), headers ($14, $15) and metadata ($16, $17), whether it changes
    // and its new value (NULL removes it); $18 signature type or NULL. Disabling keeps why and when,
    // enabling clears them and starts the endpoint's failing streak afresh; a change that leaves
    // the status keeps them.
    update: `WITH rev AS (
        UPDATE ${s}.revision SET value = value + 1 WHERE EXISTS (${live}) RETURNING value
      ), sub AS (
        UPDATE ${s}.subscriptions AS t SET
          endpoint_url = coalesce($3::text, t.endpoint_url),
          events = coalesce($4::text[], t.events),
          property_ids = CASE WHEN $5::boolean THEN $6::text[] ELSE t.property_ids END,
          status = coalesce($7::text, t.status),
          description = CASE WHEN $10::boolean THEN $11::text ELSE t.description END,
          rate_limit = CASE WHEN $12::boolean THEN $13::integer ELSE t.rate_limit END,
          headers = CASE WHEN $14::boolean THEN $15::text::jsonb ELSE t.headers END,
          metadata = CASE WHEN $16::boolean THEN $17::text::jsonb ELSE t.metadata END,
          signature_type = coalesce($18::text, t.signature_type),
          disabled_reason = CASE
            WHEN coalesce($7::text, t.status) = 'enabled' THEN NULL
            WHEN $7::text = 'disabled' THEN coalesce($9::text, 'requested')
            ELSE coalesce(t.disabled_reason, 'requested') END,
          disabled_at = CASE
            WHEN coalesce($7::text, t.status) = 'enabled' THEN NULL
            WHEN $7::text = 'disabled' THEN $8::text
            ELSE coalesce(t.disabled_at, t.updated_at) END,
          streak = t.streak + CASE WHEN $7::text = 'enabled' THEN 1 ELSE 0 END,
          failing_since_ms = CASE WHEN $7::text = 'enabled' THEN NULL ELSE t.failing_since_ms END,
          failed_messages = CASE WHEN $7::text = 'enabled' THEN 0 ELSE t.failed_messages END,
          updated_at = $8::text,
          revision = rev.value
        FROM rev
        WHERE t.account_code = $1::text AND t.id = $2::text AND t.deleted_at IS NULL
        RETURNING ${COLUMNS.replaceAll(/(\w+)/g, 't.$1')}
      )
      SELECT sub.*, ${notify} FROM sub`,
    // A batch of updates, each of another subscription, in one statement: the arrays $1 to $18
    // of `update`'s parameters, one element per update ($4 events and $6 property ids as JSON
    // text, or NULL; see updateColumns in rows.ts). Those of a live subscription, as the
    // statement's snapshot reads it, take the next revisions in the batch's order (the revision
    // row first, as every change), and each is changed as `update` changes it alone. One row per
    // subscription changed, with its position `n`.
    updateSubscriptions: `WITH batch AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[],
          $6::text[], $7::text[], $8::text[], $9::text[], $10::boolean[], $11::text[],
          $12::boolean[], $13::integer[], $14::boolean[], $15::text[], $16::boolean[], $17::text[],
          $18::text[])
          WITH ORDINALITY AS b(account_code, id, endpoint_url, events, property_ids_change,
            property_ids, status, updated_at, disabled_reason, description_change, description,
            rate_limit_change, rate_limit, headers_change, headers, metadata_change, metadata,
            signature_type, n)
      ), ${liveBatch}, sub AS (
        UPDATE ${s}.subscriptions AS t SET
          endpoint_url = coalesce(l.endpoint_url, t.endpoint_url),
          events = CASE WHEN l.events IS NULL THEN t.events
            ELSE ARRAY(SELECT jsonb_array_elements_text(l.events::jsonb)) END,
          property_ids = CASE WHEN NOT l.property_ids_change THEN t.property_ids
            WHEN l.property_ids IS NULL THEN NULL
            ELSE ARRAY(SELECT jsonb_array_elements_text(l.property_ids::jsonb)) END,
          status = coalesce(l.status, t.status),
          description = CASE WHEN l.description_change THEN l.description ELSE t.description END,
          rate_limit = CASE WHEN l.rate_limit_change THEN l.rate_limit ELSE t.rate_limit END,
          headers = CASE WHEN l.headers_change THEN l.headers::jsonb ELSE t.headers END,
          metadata = CASE WHEN l.metadata_change THEN l.metadata::jsonb ELSE t.metadata END,
          signature_type = coalesce(l.signature_type, t.signature_type),
          disabled_reason = CASE
            WHEN coalesce(l.status, t.status) = 'enabled' THEN NULL
            WHEN l.status = 'disabled' THEN coalesce(l.disabled_reason, 'requested')
            ELSE coalesce(t.disabled_reason, 'requested') END,
          disabled_at = CASE
            WHEN coalesce(l.status, t.status) = 'enabled' THEN NULL
            WHEN l.status = 'disabled' THEN l.updated_at
            ELSE coalesce(t.disabled_at, t.updated_at) END,
          streak = t.streak + CASE WHEN l.status = 'enabled' THEN 1 ELSE 0 END,
          failing_since_ms = CASE WHEN l.status = 'enabled' THEN NULL ELSE t.failing_since_ms END,
          failed_messages = CASE WHEN l.status = 'enabled' THEN 0 ELSE t.failed_messages END,
          updated_at = l.updated_at,
          revision = rev.base + l.k
        FROM live AS l, (SELECT base FROM rev LIMIT 1) AS rev
        WHERE t.account_code = l.account_code AND t.id = l.id AND t.deleted_at IS NULL
        RETURNING l.n, ${COLUMNS.replaceAll(/(\w+)/g, 't.$1')}
      )
      SELECT sub.*, ${notify} FROM sub ORDER BY sub.revision`,
    // The row stays as a tombstone (deleted_at), so that changesSince tells the delete.
    delete: `WITH rev AS (
        UPDATE ${s}.revision SET value = value + 1 WHERE EXISTS (${live}) RETURNING value
      ), sub AS (
        UPDATE ${s}.subscriptions AS t SET deleted_at = $3::text, revision = rev.value,
          streak = t.streak + 1, failing_since_ms = NULL, failed_messages = 0
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
    // A batch of deletes, each of another subscription, in one statement: the arrays $1 to $3 of
    // `delete`'s parameters. Those of a live subscription take the next revisions in the batch's
    // order, as updateSubscriptions; each account's count goes down by its deletes. One row per
    // subscription deleted, with its position `n`.
    deleteSubscriptions: `WITH batch AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
          WITH ORDINALITY AS b(account_code, id, deleted_at, n)
      ), ${liveBatch}, sub AS (
        UPDATE ${s}.subscriptions AS t SET deleted_at = l.deleted_at, revision = rev.base + l.k,
          streak = t.streak + 1, failing_since_ms = NULL, failed_messages = 0
        FROM live AS l, (SELECT base FROM rev LIMIT 1) AS rev
        WHERE t.account_code = l.account_code AND t.id = l.id AND t.deleted_at IS NULL
        RETURNING l.n, t.account_code, t.id, t.revision
      ), account AS (
        UPDATE ${s}.accounts AS a SET live_subscriptions = a.live_subscriptions - c.deleted
        FROM (SELECT account_code, count(*) AS deleted FROM sub GROUP BY account_code) AS c
        WHERE a.account_code = c.account_code
      ), secrets AS (
        DELETE FROM ${s}.signing_secrets AS o USING sub
        WHERE o.account_code = sub.account_code AND o.subscription_id = sub.id
      )
      SELECT sub.n, sub.revision, ${notify} FROM sub ORDER BY sub.revision`,
    // $3 secret, $4 key id, $5 at, $6 at + grace, $7 the new public key or NULL, $8 the new
    // signature type or NULL (it stays), $9 at as text (updated_at when the type changes).
    // Secrets are only inserted: an older one stops signing at the earliest retire_older_ms of the
    // newer ones; those that no longer sign at $5 are dropped. A rotation is a change: it takes a
    // revision and is announced, so that every instance drops the secrets it holds of the
    // subscription as it applies the change. The subscription's row lock orders rotations of one
    // subscription.
    rotateSecret: `WITH rev AS (
        UPDATE ${s}.revision SET value = value + 1 WHERE EXISTS (${live}) RETURNING value
      ), sub AS (
        UPDATE ${s}.subscriptions AS t SET revision = rev.value, public_key = $7::text,
          signature_type = coalesce($8::text, t.signature_type),
          updated_at = CASE
            WHEN coalesce($8::text, t.signature_type, 'hmac-sha256')
              = coalesce(t.signature_type, 'hmac-sha256') THEN t.updated_at
            ELSE $9::text END
        FROM rev
        WHERE t.account_code = $1::text AND t.id = $2::text AND t.deleted_at IS NULL
        RETURNING t.revision
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
      SELECT 1 AS rotated, ${notify} FROM sub`,
    // A batch of rotations, each of another subscription, in one statement: the arrays $1 to $9
    // of `rotateSecret`'s parameters. Those of a live subscription take the next revisions in the
    // batch's order, as updateSubscriptions, and each adds and drops secrets as `rotateSecret`
    // alone. One row per subscription rotated, with its position `n`.
    rotateSecrets: `WITH batch AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[],
          $6::float8[], $7::text[], $8::text[], $9::text[])
          WITH ORDINALITY AS b(account_code, id, secret, key_id, at_ms, retire_ms, public_key,
            signature_type, at_text, n)
      ), ${liveBatch}, sub AS (
        UPDATE ${s}.subscriptions AS t SET revision = rev.base + l.k, public_key = l.public_key,
          signature_type = coalesce(l.signature_type, t.signature_type),
          updated_at = CASE
            WHEN coalesce(l.signature_type, t.signature_type, 'hmac-sha256')
              = coalesce(t.signature_type, 'hmac-sha256') THEN t.updated_at
            ELSE l.at_text END
        FROM live AS l, (SELECT base FROM rev LIMIT 1) AS rev
        WHERE t.account_code = l.account_code AND t.id = l.id AND t.deleted_at IS NULL
        RETURNING l.n, t.revision
      ), done AS (
        SELECT l.* FROM live AS l JOIN sub ON sub.n = l.n
      ), added AS (
        INSERT INTO ${s}.signing_secrets
          (account_code, subscription_id, secret, key_id, created_ms, retire_older_ms)
        SELECT d.account_code, d.id, d.secret, d.key_id, d.at_ms, d.retire_ms FROM done AS d
        ORDER BY d.n
      ), dropped AS (
        DELETE FROM ${s}.signing_secrets AS o USING done AS d
        WHERE o.account_code = d.account_code AND o.subscription_id = d.id
          AND (d.retire_ms <= d.at_ms OR EXISTS (
            SELECT 1 FROM ${s}.signing_secrets AS n
            WHERE n.account_code = o.account_code AND n.subscription_id = o.subscription_id
              AND n.sequence > o.sequence AND n.retire_older_ms <= d.at_ms))
      )
      SELECT sub.n, sub.revision, ${notify} FROM sub ORDER BY sub.revision`,
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
    ...outboxStatements(s),
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
    // $1 at, $2 and $3 the last (account, id) of the previous batch, $4 subscriptions a batch.
    // Each live subscription once at least (secret null when it has none), so that a batch of
    // subscriptions without secrets still moves the next batch on.
    secretsToCheck: `WITH batch AS (
        SELECT account_code, id FROM ${s}.subscriptions
        WHERE deleted_at IS NULL AND (account_code, id) > ($2::text, $3::text)
        ORDER BY account_code, id LIMIT $4::bigint
      )
      SELECT b.account_code, b.id AS subscription_id, o.secret, o.key_id
      FROM batch AS b LEFT JOIN ${s}.signing_secrets AS o
        ON o.account_code = b.account_code AND o.subscription_id = b.id
        AND NOT EXISTS (
          SELECT 1 FROM ${s}.signing_secrets AS n
          WHERE n.account_code = o.account_code AND n.subscription_id = o.subscription_id
            AND n.sequence > o.sequence AND n.retire_older_ms <= $1::float8)
      ORDER BY b.account_code, b.id, o.sequence DESC`,
  };
}
