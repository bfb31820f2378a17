/**
 * What the form of message ids costs the outbox on PostgreSQL: messages recorded 64 at a time
 * (the repository's group commit) into tables that already hold older messages, once with random
 * ids (`msg_` and a version 4 UUID, the default before) and once with the default ids (`msg_` and
 * a version 7 UUID, time-ordered), in turns, each turn after a checkpoint. Per message: the WAL
 * written, the server's CPU and the wall time. The server runs with `full_page_writes` on, as a
 * server that keeps its data does (the suite's other benchmarks turn it off).
 * Not part of the suite: `npx tsx bench/message-ids.ts` (MESSAGE_IDS_BENCH_BACKGROUND older
 * messages per table, 1,000,000 by default; MESSAGE_IDS_BENCH_CALLS messages a turn, 20,000;
 * MESSAGE_IDS_BENCH_TURNS turns of each form, 3).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createWebhookMessage } from '../src/index.js';
import { PostgresSubscriptionRepository } from '../src/postgres/index.js';
import { PostgresServer } from '../test/support/postgres-server.js';
import { treeCpuSeconds } from './process-cpu.js';
import { driveCalls, latencyFigures, round } from './support.js';

const BACKGROUND = Number(process.env.MESSAGE_IDS_BENCH_BACKGROUND ?? 1_000_000);
const CALLS = Number(process.env.MESSAGE_IDS_BENCH_CALLS ?? 20_000);
const TURNS = Number(process.env.MESSAGE_IDS_BENCH_TURNS ?? 3);
const IN_FLIGHT = 64;
const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

type Form = 'random' | 'ordered';
const forms: readonly Form[] = ['random', 'ordered'];

// The older rows' ids in SQL, for row g made at T0 - DAY + g ms: a version 4 UUID, or a version 7
// UUID of that time (12 hex digits of ms, then random hex from md5) as the default makes them.
const olderId: Record<Form, string> = {
  random: `'msg_' || gen_random_uuid()`,
  ordered: `'msg_' || substr(lpad(to_hex(($1::bigint + g)), 12, '0'), 1, 8) || '-' ||
    substr(lpad(to_hex(($1::bigint + g)), 12, '0'), 9, 4) || '-7' || substr(md5(g::text), 1, 3) ||
    '-9' || substr(md5(g::text), 4, 3) || '-' || substr(md5(g::text), 7, 12)`,
};

const newId: Record<Form, (at: number) => string> = {
  random: () => `msg_${randomUUID()}`,
  ordered: (at) =>
    createWebhookMessage(
      { accountCode: 'ACME', kind: 'folio/created' },
      { clock: { now: () => at } },
    ).id,
};

const server = await PostgresServer.start({ settings: { full_page_writes: 'on' } });
const postmaster = server.processId;
const pool = new pg.Pool({ connectionString: server.url, max: IN_FLIGHT + 4 });
try {
  const [{ full_page_writes: fullPageWrites }] = (await pool.query('SHOW full_page_writes')).rows;
  if (fullPageWrites !== 'on') throw new Error(`full_page_writes is ${fullPageWrites}`);
  const repositories = new Map<Form, PostgresSubscriptionRepository>();
  const subscription = { subscriptionId: 'sub_1', endpointUrl: 'https://hooks.example.com/1' };
  for (const form of forms) {
    const schema = `ids_${form}`;
    const repository = await PostgresSubscriptionRepository.open({ database: pool, schema });
    repositories.set(form, repository);
    await pool.query(
      `INSERT INTO ${schema}.messages (account_code, id, kind, body, created_ms)
      SELECT 'ACME', ${olderId[form]}, 'folio/created', repeat('x', 600), $1::float8 + g
      FROM generate_series(1, ${BACKGROUND}) AS g`,
      [T0 - DAY],
    );
    await pool.query(
      `INSERT INTO ${schema}.deliveries (account_code, message_id, subscription_id, endpoint_url,
        status, published_ms, next_attempt_ms, lease_until_ms)
      SELECT account_code, id, 'sub_1', 'https://hooks.example.com/1', 'delivered', created_ms,
        created_ms, 0 FROM ${schema}.messages`,
    );
    await pool.query(`VACUUM ANALYZE ${schema}.messages`);
    await pool.query(`VACUUM ANALYZE ${schema}.deliveries`);
  }
  const sizes = await pool.query(
    `SELECT n.nspname || '.' || c.relname AS name, pg_relation_size(c.oid) AS bytes
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname LIKE 'ids_%' AND c.relname IN ('messages_pkey', 'deliveries_pkey')`,
  );
  console.log(
    `${BACKGROUND} older messages per table; ${CALLS} recorded a turn, ${IN_FLIGHT} in flight;`,
    sizes.rows.map((r) => `${r.name} ${round(Number(r.bytes) / 2 ** 20)} MB`).join(', '),
  );
  const body = JSON.stringify({ type: 'folio/created', data: 'x'.repeat(900) });
  let clock = T0;
  for (let turn = 1; turn <= TURNS; turn++) {
    for (const form of forms) {
      const repository = repositories.get(form)!;
      await pool.query('CHECKPOINT');
      const [lsn] = (await pool.query('SELECT pg_current_wal_lsn() AS at')).rows;
      const cpu = treeCpuSeconds(postmaster);
      const { ms, latencies } = await driveCalls(CALLS, IN_FLIGHT, () => {
        const at = clock++;
        const message = { accountCode: 'ACME', id: newId[form](at), kind: 'folio/created', body };
        return repository.recordMessage({ ...message, createdAt: at }, [subscription], {
          leaseUntil: at + 300_000,
        });
      });
      const serverUs = ((treeCpuSeconds(postmaster) - cpu) * 1e6) / CALLS;
      const [wal] = (
        await pool.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS bytes', [lsn.at])
      ).rows;
      const { p50Ms, p99Ms } = latencyFigures(latencies);
      console.log(
        `turn ${turn} ${form.padEnd(7)} WAL ${Math.round(Number(wal.bytes) / CALLS)} bytes/message,` +
          ` server CPU ${round(serverUs)} us/message, ${Math.round((CALLS * 1000) / ms)} messages/s,` +
          ` p50 ${p50Ms} ms, p99 ${p99Ms} ms`,
      );
    }
  }
  for (const repository of repositories.values()) await repository.close();
} finally {
  await pool.end();
  await server.stop();
}
