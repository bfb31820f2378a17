/**
 * The outbox's statements on a real PostgreSQL, one call at a time: latencies of recordMessage
 * (1 and 3 deliveries), recordAttempt and claimDeliveries(500) over a table holding older rows.
 * Not part of the suite: `npx tsx bench/outbox-store.ts` (OUTBOX_BENCH_CALLS, 2,000 by default).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PostgresSubscriptionRepository } from '../src/postgres/index.js';
import { statements } from '../src/postgres/statements.js';
import type { DeliveryAttempt } from '../src/webhooks/delivery/attempt.js';
import { PostgresServer } from '../test/support/postgres-server.js';

const CALLS = Number(process.env.OUTBOX_BENCH_CALLS ?? 2_000);
const BACKGROUND = 100_000;
const T0 = Date.UTC(2026, 0, 1);
const LEASE = 300_000;

/** p50, p99 and max of the latencies, in ms. */
function summary(name: string, ms: number[]): void {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  console.log(
    `${name.padEnd(34)} n=${String(sorted.length).padStart(5)}  p50 ${at(0.5).toFixed(3)} ms  p99 ${at(0.99).toFixed(3)} ms  max ${sorted.at(-1)!.toFixed(3)} ms`,
  );
}

async function timed(n: number, call: (i: number) => Promise<unknown>): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await call(i);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return ms;
}

const server = await PostgresServer.start();
const pool = new pg.Pool({ connectionString: server.url, max: 4 });
try {
  const schema = 'outbox_bench';
  const repository = await PostgresSubscriptionRepository.open({ database: pool, schema });
  const subscriptions: string[] = [];
  for (let i = 0; i < 30; i++) {
    const id = randomUUID();
    subscriptions.push(id);
    await repository.create(
      {
        id,
        accountCode: `acct_${i % 5}`,
        endpointUrl: `https://hooks.example.com/${id}`,
        events: ['folio/created'],
        createdAt: new Date(T0).toISOString(),
      },
      'whsec_bench',
      { at: T0, maxPerAccount: 100 },
    );
  }
  const account = (s: number) => `acct_${s % 5}`;
  // Older rows: delivered and failed deliveries, and pending ones in flight (leased ahead).
  const s = `"${schema}"`;
  await pool.query(
    `INSERT INTO ${s}.messages (account_code, id, kind, body, created_ms)
    SELECT 'acct_' || (g % 5), 'old_' || g, 'folio/created', repeat('x', 600), $1::float8 + g
    FROM generate_series(1, ${BACKGROUND}) AS g`,
    [T0 - 86_400_000],
  );
  await pool.query(
    `INSERT INTO ${s}.deliveries (account_code, message_id, subscription_id,
      endpoint_url, status, published_ms, next_attempt_ms, lease_until_ms)
    SELECT 'acct_' || (g % 5), 'old_' || g, 'sub_' || (g % 30), 'https://hooks.example.com/x',
      CASE WHEN g % 10 < 7 THEN 'delivered' WHEN g % 10 < 9 THEN 'failed' ELSE 'pending' END,
      $1::float8 + g, $1::float8 + g, $2::float8
    FROM generate_series(1, ${BACKGROUND}) AS g`,
    [T0 - 86_400_000, T0 + 10 * LEASE],
  );
  await pool.query(`ANALYZE ${s}.messages`);
  await pool.query(`ANALYZE ${s}.deliveries`);

  const ids1: string[] = [];
  const ids3: string[] = [];
  const message = (id: string, i: number) => ({
    accountCode: account(i),
    id,
    kind: 'folio/created',
    propertyId: 'MUC',
    body: JSON.stringify({ type: 'folio/created', id, data: 'x'.repeat(500) }),
    createdAt: T0 + i,
  });
  const to = (i: number) => ({
    subscriptionId: subscriptions[i % 30]!,
    endpointUrl: `https://hooks.example.com/${subscriptions[i % 30]}`,
  });
  summary(
    'recordMessage, 1 delivery',
    await timed(CALLS, async (i) => {
      const id = `msg_${randomUUID()}`;
      ids1.push(id);
      await repository.recordMessage(message(id, i * 5), [to(i * 5)], { leaseUntil: T0 + LEASE });
    }),
  );
  summary(
    'recordMessage, 3 deliveries',
    await timed(CALLS, async (i) => {
      const id = `msg_${randomUUID()}`;
      ids3.push(id);
      const first = i * 5;
      await repository.recordMessage(
        message(id, first),
        [to(first), to(first + 5), to(first + 10)],
        {
          leaseUntil: T0 + LEASE,
        },
      );
    }),
  );
  // Attempts of the 1-delivery messages: a third retried (sent, 503), a third delivered, a third
  // failed for good; the endpoint's health moves with the failures.
  const attempt = (i: number): DeliveryAttempt => {
    const base = {
      id: ids1[i]!,
      subscriptionId: subscriptions[(i * 5) % 30]!,
      endpointUrl: `https://hooks.example.com/${subscriptions[(i * 5) % 30]}`,
      attempt: 1,
      at: T0 + 1_000 + i,
      durationMs: 20,
    };
    if (i % 3 === 0) return { ...base, status: 503, outcome: 'retry', nextAttemptAt: T0 + 60_000 };
    if (i % 3 === 1) return { ...base, status: 204, outcome: 'delivered' };
    return { ...base, status: 500, outcome: 'failed', reason: 'attempts_exhausted' };
  };
  summary(
    'recordAttempt',
    await timed(CALLS, (i) =>
      repository.recordAttempt(account(i * 5), attempt(i), { leaseUntil: T0 + LEASE }),
    ),
  );
  // In flight only: nothing claimable among ~10,000 leased pending deliveries plus the new ones.
  summary(
    'claimDeliveries(500), none due',
    await timed(50, () =>
      repository.claimDeliveries({ dueBy: T0 + 1_000, leaseUntil: T0 + 2 * LEASE, limit: 500 }),
    ),
  );
  // Past every lease: the pending deliveries are claimable, 500 a claim.
  const dueBy = T0 + 20 * LEASE;
  let taken = 0;
  summary(
    'claimDeliveries(500), 500 due',
    await timed(20, async () => {
      const claimed = await repository.claimDeliveries({
        dueBy,
        leaseUntil: dueBy + LEASE,
        limit: 500,
      });
      taken += claimed.length;
    }),
  );
  console.log(`claimed ${taken}`);
  // How the server plans a claim over these rows (run, in a transaction rolled back).
  const sql = statements(`"${schema}"`, `${schema}_changes`);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    for (const claimAt of [T0 + 1_000, dueBy + 2 * LEASE]) {
      const { rows } = await client.query(`EXPLAIN (ANALYZE, TIMING OFF) ${sql.claimDeliveries}`, [
        claimAt,
        claimAt + LEASE,
        500,
      ]);
      console.log(rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
    }
    await client.query('ROLLBACK');
  } finally {
    client.release();
  }
} finally {
  await pool.end();
  await server.stop();
}
