/**
 * The outbox's and the delivery log's SQL (docs/postgres.md, "The outbox"): messages and their
 * deliveries recorded, claimed, released and replayed, attempts recorded and read, and retention.
 * The same on PostgreSQL and PGlite; every statement names the account. @module
 */
import { RELEASED_LEASE } from '../webhooks/store/repository.js';

/** The columns a pending delivery is read from (`toPending` in rows.ts), with its message's body. */
const PENDING = `d.account_code, d.message_id, d.subscription_id, d.endpoint_url, m.body, d.attempts,
  d.first_attempt_ms, d.replay, d.next_attempt_ms`;

/** The outbox's and the delivery log's statements of one schema. */
export interface OutboxStatements {
  readonly recordAttempts: string;
  readonly attempts: string;
  readonly deleteAttemptsBefore: string;
  readonly recordMessages: string;
  readonly recordKeyedMessages: string;
  readonly deleteExpiredKeys: string;
  readonly claimDeliveries: string;
  readonly claimReleasedDeliveries: string;
  readonly releaseLeases: string;
  readonly replayPacesOfMessage: string;
  readonly replayPacesOfSubscription: string;
  readonly releaseDeliveries: string;
  readonly replayMessage: string;
  readonly replaySubscription: string;
  readonly deliveryStatus: string;
  readonly deleteMessagesBefore: string;
}

/** The outbox's statements for a quoted schema name. */
export function outboxStatements(s: string): OutboxStatements {
  // An idempotency key's row has expired by the created time of the message publishing with it.
  const expired = 't.expires_ms <= excluded.created_ms';
  // The deliveries a batch of messages owes ($8 the position of each one's message in the batch,
  // $9 subscription ids, $10 endpoints), and their insertion for the messages recorded: the CTEs
  // that recordMessages and recordKeyedMessages share, after their `batch` and `message`.
  const owes = `owes AS (
        SELECT * FROM unnest($8::bigint[], $9::text[], $10::text[]) WITH ORDINALITY
          AS o(n, subscription_id, endpoint_url, k)
      )`;
  const owed = `owed AS (
        INSERT INTO ${s}.deliveries (account_code, message_id, subscription_id, endpoint_url,
          published_ms, next_attempt_ms, lease_until_ms)
        SELECT message.account_code, message.id, o.subscription_id, o.endpoint_url,
          message.created_ms, message.created_ms, batch.lease_until_ms
        FROM owes AS o
          JOIN batch ON batch.n = o.n
          JOIN message ON message.account_code = batch.account_code AND message.id = batch.id
        ORDER BY o.k
        ON CONFLICT DO NOTHING
      )`;
  return {
    // $1 to $15 the arrays of a batch of attempts, one element each (see attemptColumns in
    // rows.ts): the schema's record_attempts (see migrations.ts), one row per attempt.
    recordAttempts: `SELECT out_n AS n, out_sequence AS sequence,
        out_failing_since_ms AS failing_since_ms, out_failed_messages AS failed_messages,
        out_ended_since_ms AS ended_since_ms, out_ended_messages AS ended_messages
      FROM ${s}.record_attempts($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[],
        $6::float8[], $7::integer[], $8::text[], $9::text[], $10::text[], $11::float8[],
        $12::text[], $13::float8[], $14::integer[], $15::float8[])`,
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
    // A batch of messages: $1 accounts, $2 message ids, $3 kinds, $4 properties (NULL for
    // none), $5 bodies, $6 created ms, $7 leases; their deliveries: $8 the position of each one's
    // message in the batch (from 1), $9 subscription ids, $10 endpoints. One statement, so one
    // transaction: each message and its deliveries, or nothing of a message the account has
    // already (the deliveries' foreign key is checked at the statement's end, the messages
    // inserted by then). The batch holds a message id of an account once.
    recordMessages: `WITH batch AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
          $6::float8[], $7::float8[])
          WITH ORDINALITY AS b(account_code, id, kind, property_id, body, created_ms, lease_until_ms, n)
      ), message AS (
        INSERT INTO ${s}.messages (account_code, id, kind, property_id, body, created_ms)
        SELECT account_code, id, kind, property_id, body, created_ms FROM batch ORDER BY n
        ON CONFLICT (account_code, id) DO NOTHING
        RETURNING account_code, id, created_ms
      ), ${owes}, ${owed}
      SELECT count(*)::integer AS recorded FROM message`,
    // A batch of messages of which some have an idempotency key: $1 to $10 as recordMessages,
    // then $11 the keys (NULL for none), $12 fingerprints, $13 expiry times (ms). A key takes its
    // message (inserted, or taking over an expired row) unless it holds one that has not expired
    // by the message's created time: then the update leaves the row as it is, and the message is
    // not recorded. ON CONFLICT waits for a row another transaction is inserting and then reads
    // its committed version, so publishes with one key at once record one message, and every
    // one returns the row as it stands. Keys are taken in one order, so that batches at once never
    // wait on each other in a circle; the batch holds a key of an account once. One row per keyed
    // message: its position, and the message the key holds.
    recordKeyedMessages: `WITH batch AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
          $6::float8[], $7::float8[], $11::text[], $12::text[], $13::float8[])
          WITH ORDINALITY AS b(account_code, id, kind, property_id, body, created_ms, lease_until_ms,
            key, fingerprint, expires_ms, n)
      ), ${owes}, keyed AS (
        INSERT INTO ${s}.idempotency_keys AS t (account_code, key, message_id, fingerprint,
          subscription_ids, created_ms, expires_ms)
        SELECT b.account_code, b.key, b.id, b.fingerprint,
          coalesce((SELECT array_agg(o.subscription_id ORDER BY o.k) FROM owes AS o
            WHERE o.n = b.n), '{}'::text[]),
          b.created_ms, b.expires_ms
        FROM batch AS b WHERE b.key IS NOT NULL
        ORDER BY b.account_code COLLATE "C", b.key COLLATE "C"
        ON CONFLICT (account_code, key) DO UPDATE SET
          message_id = CASE WHEN ${expired} THEN excluded.message_id ELSE t.message_id END,
          fingerprint = CASE WHEN ${expired} THEN excluded.fingerprint ELSE t.fingerprint END,
          subscription_ids = CASE WHEN ${expired} THEN excluded.subscription_ids
            ELSE t.subscription_ids END,
          created_ms = CASE WHEN ${expired} THEN excluded.created_ms ELSE t.created_ms END,
          expires_ms = CASE WHEN ${expired} THEN excluded.expires_ms ELSE t.expires_ms END
        RETURNING t.account_code, t.key, t.message_id, t.fingerprint, t.subscription_ids
      ), message AS (
        INSERT INTO ${s}.messages (account_code, id, kind, property_id, body, created_ms)
        SELECT b.account_code, b.id, b.kind, b.property_id, b.body, b.created_ms FROM batch AS b
        WHERE b.key IS NULL OR EXISTS (
          SELECT 1 FROM keyed WHERE keyed.account_code = b.account_code AND keyed.key = b.key
            AND keyed.message_id = b.id)
        ORDER BY b.n
        ON CONFLICT (account_code, id) DO NOTHING
        RETURNING account_code, id, created_ms
      ), ${owed}
      SELECT b.n, keyed.message_id, keyed.fingerprint, keyed.subscription_ids
      FROM batch AS b
      JOIN keyed ON keyed.account_code = b.account_code AND keyed.key = b.key`,
    // $1 expired by this time (ms), $2 at most this many: one bounded batch of retention. A key
    // a publish holds is skipped (it is being taken over).
    deleteExpiredKeys: `WITH old AS (
        SELECT account_code, key FROM ${s}.idempotency_keys WHERE expires_ms <= $1::float8
        LIMIT $2::bigint
        FOR UPDATE SKIP LOCKED
      ), gone AS (
        DELETE FROM ${s}.idempotency_keys AS k USING old
        WHERE k.account_code = old.account_code AND k.key = old.key AND k.expires_ms <= $1::float8
        RETURNING 1
      )
      SELECT count(*)::integer AS deleted FROM gone`,
    // $1 due by, $2 lease until, $3 at most this many. Rows another claim holds are skipped, and
    // one it leased meanwhile is re-read at its new version and left: two claims at once never
    // take the same delivery.
    claimDeliveries: claim(s, 'd.next_attempt_ms <= $1::float8 AND d.lease_until_ms <= $1::float8'),
    // $1 due by, $2 lease until, $3 at most this many: only deliveries whose lease releaseLeases
    // gave back (the start of a process alone on its data), due or not yet.
    claimReleasedDeliveries: claim(
      s,
      `d.next_attempt_ms <= $1::float8 AND d.lease_until_ms = ${RELEASED_LEASE}::float8`,
    ),
    // $1 due by: every pending delivery due by then has its lease given back, whoever held it.
    releaseLeases: `WITH released AS (
        UPDATE ${s}.deliveries AS d SET lease_until_ms = ${RELEASED_LEASE}::float8
        WHERE d.status = 'pending' AND d.next_attempt_ms <= $1::float8
          AND d.lease_until_ms <> ${RELEASED_LEASE}::float8
        RETURNING 1
      )
      SELECT count(*)::integer AS released FROM released`,
    // $1 accounts, $2 message ids, $3 subscription ids, $4 the lease given back: only where it is
    // still that lease (a delivery taken by another claim since keeps the other's).
    releaseDeliveries: `UPDATE ${s}.deliveries AS d SET lease_until_ms = d.next_attempt_ms
      FROM unnest($1::text[], $2::text[], $3::text[]) AS r(account_code, message_id, subscription_id)
      WHERE d.account_code = r.account_code AND d.message_id = r.message_id
        AND d.subscription_id = r.subscription_id AND d.status = 'pending'
        AND d.lease_until_ms = $4::float8`,
    // $1 account, $2 message id: the pacing rows of the enabled subscriptions that failed the
    // message, created where missing and locked in subscription id order (see `paces`).
    replayPacesOfMessage: paces(
      s,
      `SELECT d.subscription_id FROM ${s}.deliveries AS d
        JOIN ${s}.subscriptions AS t ON t.account_code = d.account_code AND t.id = d.subscription_id
        WHERE d.account_code = $1::text AND d.message_id = $2::text AND d.status = 'failed'
          AND t.deleted_at IS NULL AND t.status = 'enabled'`,
    ),
    // $1 account, $2 subscription id: its pacing row, when it is enabled.
    replayPacesOfSubscription: paces(
      s,
      `SELECT t.id FROM ${s}.subscriptions AS t
        WHERE t.account_code = $1::text AND t.id = $2::text AND t.deleted_at IS NULL
          AND t.status = 'enabled'`,
    ),
    // $1 account, $2 message id, $3 at, $4 inline, $5 lease of those, $6 pace, $7 the
    // subscriptions whose pacing rows the transaction holds.
    replayMessage: replay(
      s,
      'd.message_id = $2::text AND d.subscription_id = ANY ($7::text[])',
      `EXISTS (SELECT 1 FROM ${s}.messages WHERE account_code = $1::text AND id = $2::text)`,
    ),
    // $1 account, $2 subscription id, $3 at, $4 inline, $5 lease of those, $6 pace, $7 since,
    // $8 the subscriptions whose pacing rows the transaction holds (this one, or none).
    replaySubscription: replay(
      s,
      `d.subscription_id = $2::text AND d.published_ms >= $7::float8
        AND d.subscription_id = ANY ($8::text[])`,
      'true',
    ),
    deliveryStatus: `SELECT status FROM ${s}.deliveries
      WHERE account_code = $1::text AND message_id = $2::text AND subscription_id = $3::text`,
    // $1 before this time (ms), $2 at most this many. A message a replay holds (FOR KEY SHARE) is
    // skipped: its deliveries may be pending again once the replay commits.
    deleteMessagesBefore: `WITH old AS (
        SELECT m.account_code, m.id FROM ${s}.messages AS m
        WHERE m.created_ms < $1::float8 AND NOT EXISTS (
          SELECT 1 FROM ${s}.deliveries AS d
          WHERE d.account_code = m.account_code AND d.message_id = m.id AND d.status = 'pending')
        LIMIT $2::bigint
        FOR UPDATE OF m SKIP LOCKED
      ), gone AS (
        DELETE FROM ${s}.messages AS m USING old
        WHERE m.account_code = old.account_code AND m.id = old.id
        RETURNING 1
      )
      SELECT count(*)::integer AS deleted FROM gone`,
  };
}

/**
 * A claim: pending deliveries that `due` lets through, those due first first, locked (skipping
 * those another claim or attempt holds), leased and returned with their message's body.
 */
function claim(s: string, due: string): string {
  return `WITH due AS (
      SELECT d.account_code, d.message_id, d.subscription_id FROM ${s}.deliveries AS d
      WHERE d.status = 'pending' AND ${due}
      ORDER BY d.next_attempt_ms LIMIT $3::bigint
      FOR UPDATE SKIP LOCKED
    ), leased AS (
      UPDATE ${s}.deliveries AS d SET lease_until_ms = $2::float8
      FROM due
      WHERE d.account_code = due.account_code AND d.message_id = due.message_id
        AND d.subscription_id = due.subscription_id
      RETURNING d.*
    )
    SELECT ${PENDING} FROM leased AS d
    JOIN ${s}.messages AS m ON m.account_code = d.account_code AND m.id = d.message_id
    ORDER BY d.next_attempt_ms`;
}

/**
 * The first statement of a replay's transaction: the pacing rows of the subscriptions `which`
 * selects (one `subscription_id` column, each once), inserted where missing (never replayed: paced
 * until -Infinity) and locked in subscription id order. Replays hold them until they commit, and
 * lock deliveries only of subscriptions whose rows they hold: two replays that could touch one
 * delivery queue on its subscription's row, always taken in the same order, so never deadlock.
 */
function paces(s: string, which: string): string {
  return `INSERT INTO ${s}.replay_paces AS p (account_code, subscription_id, paced_until_ms)
    SELECT $1::text, w.subscription_id, '-Infinity'::float8
    FROM (${which}) AS w(subscription_id)
    ORDER BY w.subscription_id COLLATE "C"
    ON CONFLICT (account_code, subscription_id) DO UPDATE SET paced_until_ms = p.paced_until_ms
    RETURNING p.subscription_id`;
}

/**
 * A replay, once its pacing rows are held: the account's failed deliveries that `which` selects,
 * to enabled live subscriptions, locked (their messages too, against retention), numbered per
 * subscription oldest message first and set pending in the next round, each due as its
 * subscription's pacing says: with P its paced-until time, no earlier than $3, the k-th at
 * max($3, P + (k - $4) * $6); P moves on by $6 for each. Of those due at $3, the first $4 are
 * leased until $5 and returned; every other one is leased until its due time, for the sweeps. One
 * row even when none is (`found`, `total`, `paced_until`), joined with those returned.
 */
function replay(s: string, which: string, found: string): string {
  return `WITH locked AS (
      SELECT d.account_code, d.message_id, d.subscription_id, d.published_ms
      FROM ${s}.deliveries AS d
      JOIN ${s}.subscriptions AS t ON t.account_code = d.account_code AND t.id = d.subscription_id
      JOIN ${s}.messages AS m ON m.account_code = d.account_code AND m.id = d.message_id
      WHERE d.account_code = $1::text AND ${which} AND d.status = 'failed'
        AND t.deleted_at IS NULL AND t.status = 'enabled'
      FOR UPDATE OF d FOR KEY SHARE OF m
    ), numbered AS (
      SELECT l.*, greatest(p.paced_until_ms, $3::float8) AS start, row_number() OVER (
          PARTITION BY l.subscription_id ORDER BY l.published_ms, l.message_id) AS k
      FROM locked AS l
      JOIN ${s}.replay_paces AS p ON p.account_code = l.account_code
        AND p.subscription_id = l.subscription_id
    ), timed AS (
      SELECT n.*, greatest($3::float8, n.start + (n.k - $4::bigint) * $6::float8) AS due_ms
      FROM numbered AS n
    ), chosen AS (
      SELECT t.*, t.due_ms <= $3::float8 AND row_number() OVER (
          PARTITION BY t.due_ms <= $3::float8
          ORDER BY t.published_ms, t.message_id, t.subscription_id) <= $4::bigint AS now
      FROM timed AS t
    ), paced AS (
      UPDATE ${s}.replay_paces AS p SET paced_until_ms = c.start + c.n * $6::float8
      FROM (SELECT subscription_id, max(start) AS start, count(*) AS n FROM chosen
            GROUP BY subscription_id) AS c
      WHERE p.account_code = $1::text AND p.subscription_id = c.subscription_id
    ), pending AS (
      UPDATE ${s}.deliveries AS d SET status = 'pending', attempts = 0, first_attempt_ms = NULL,
        replay = d.replay + 1, next_attempt_ms = c.due_ms,
        lease_until_ms = CASE WHEN c.now THEN $5::float8 ELSE c.due_ms END
      FROM chosen AS c
      WHERE d.account_code = c.account_code AND d.message_id = c.message_id
        AND d.subscription_id = c.subscription_id
      RETURNING d.*, c.now
    )
    SELECT ${found} AS found, (SELECT count(*) FROM pending)::integer AS total,
      (SELECT max(next_attempt_ms) FROM pending WHERE NOT now) AS paced_until, due.*
    FROM (SELECT 1) AS one LEFT JOIN LATERAL (
      SELECT ${PENDING}, d.published_ms FROM pending AS d
      JOIN ${s}.messages AS m ON m.account_code = d.account_code AND m.id = d.message_id
      WHERE d.now
    ) AS due ON true
    ORDER BY due.published_ms, due.message_id, due.subscription_id`;
}
