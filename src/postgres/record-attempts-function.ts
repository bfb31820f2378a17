/**
 * The schema's `record_attempts` function in each of its versions (migrations 5, 8 and 10 in
 * migrations.ts): the attempts of a batch recorded in one call (docs/postgres.md, "Group commit").
 * @module
 */

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
export function recordAttempts(s: string): string {
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
export function recordAttemptsEndingStreaks(
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
