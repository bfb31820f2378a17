/**
 * A million subscriptions in PostgreSQL, loaded into a fresh service's index at start. The rows
 * are written straight into the repository's tables (batches of `INSERT ... SELECT FROM unnest`,
 * the revision counter and the per-account counts set after), not through `create`: the figure is
 * the start, not the insert. Then `service.start()` is timed in a fresh process, as an instance
 * starting beside a full database, `ROUNDS` times.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { PostgresSubscriptionRepository } from 'api-conventions/postgres';
import pg from 'pg';
import { median, round } from './support.js';
import { makeSubscriptions, seededRandom } from './webhook-workload.js';

/** Subscriptions loaded: 1,000,000 unless `WEBHOOK_STORE_BENCH_SUBSCRIPTIONS` says. */
export const LOAD_SUBSCRIPTIONS = Number(
  process.env.WEBHOOK_STORE_BENCH_SUBSCRIPTIONS ?? 1_000_000,
);
/** Accounts they spread over: several thousand, about 200 subscriptions each. */
export const LOAD_ACCOUNTS = 5_000;
/** Timed starts, each in a fresh process. */
const ROUNDS = 2;
const BATCH = 50_000;
/** Batches in flight at once: one generated while the other is inserted. */
const INSERTS_IN_FLIGHT = 2;
const CREATED_AT = '2026-01-01T00:00:00.000Z';

function insertStatement(s: string): string {
  return `INSERT INTO ${s}.subscriptions (account_code, id, endpoint_url, events, property_ids,
      status, created_at, updated_at, revision, created_revision)
    SELECT t.a, t.i, t.u, string_to_array(t.e, ' '), string_to_array(t.p, ' '), 'enabled',
      $6::text, $6::text, $7::bigint + t.n, $7::bigint + t.n
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
      WITH ORDINALITY AS t(a, i, u, e, p, n)`;
}

/** Insert one batch: subscriptions `first` to `first + count - 1`, revisions `first + 1` on. */
async function insertBatch(
  pool: pg.Pool,
  sql: string,
  first: number,
  count: number,
  random: () => number,
): Promise<void> {
  const batch = makeSubscriptions(count, random, LOAD_ACCOUNTS);
  const ids = batch.map((_, i) => `s${first + i}`);
  await pool.query(sql, [
    batch.map((s) => s.accountCode),
    ids,
    ids.map((id) => `https://hooks.example.com/${id}`),
    batch.map((s) => s.events.join(' ')),
    batch.map((s) => s.propertyIds?.join(' ') ?? null),
    CREATED_AT,
    first,
  ]);
}

/** Fill `schema` (migrated, empty) with `LOAD_SUBSCRIPTIONS` subscriptions; seconds taken. */
export async function fill(url: string, schema: string): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: INSERTS_IN_FLIGHT });
  const started = performance.now();
  try {
    await PostgresSubscriptionRepository.open({ database: pool, schema });
    const sql = insertStatement(schema);
    const random = seededRandom(LOAD_SUBSCRIPTIONS);
    const pending = new Set<Promise<void>>();
    for (let first = 0; first < LOAD_SUBSCRIPTIONS; first += BATCH) {
      if (pending.size >= INSERTS_IN_FLIGHT) await Promise.race(pending);
      const count = Math.min(BATCH, LOAD_SUBSCRIPTIONS - first);
      const insert = insertBatch(pool, sql, first, count, random).finally(() =>
        pending.delete(insert),
      );
      pending.add(insert);
    }
    await Promise.all(pending);
    await pool.query(`INSERT INTO ${schema}.accounts (account_code, live_subscriptions)
      SELECT account_code, count(*) FROM ${schema}.subscriptions
      WHERE deleted_at IS NULL GROUP BY account_code`);
    await pool.query(
      `UPDATE ${schema}.revision SET value = (SELECT max(revision) FROM ${schema}.subscriptions)`,
    );
    // As a database some time after its writes: hint bits set, statistics taken.
    await pool.query(`VACUUM ANALYZE ${schema}.subscriptions`);
    return (performance.now() - started) / 1000;
  } finally {
    await pool.end();
  }
}

/** One start's figures. */
interface Start {
  readonly seconds: number;
  /** CPU time of this process during the start: the part a busy machine inflates least. */
  readonly cpuSeconds: number;
  readonly rowsPerSecond: number;
  readonly heapMb: number;
  readonly subscriptions: number;
  readonly revision: number;
}

/**
 * Time `service.start()` in a fresh process (bench/store-start.ts), as an instance starts beside a
 * full database; the heap its index holds after.
 */
async function timeStart(url: string, schema: string): Promise<Start> {
  const child = fork(join(import.meta.dirname, 'store-start.ts'), [url, schema], {
    execArgv: ['--import', 'tsx', '--expose-gc', '--max-old-space-size=4096'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit');
  const [reply] = (await Promise.race([
    once(child, 'message'),
    exited.then(([code]) => {
      throw new Error(`the start process exited with ${code} before its figures`);
    }),
  ])) as [{ started: StartReport }];
  await exited;
  const { seconds, cpuSeconds, heapBytes, subscriptions, revision } = reply.started;
  if (subscriptions !== LOAD_SUBSCRIPTIONS || revision !== LOAD_SUBSCRIPTIONS) {
    throw new Error(`the index holds ${subscriptions} at revision ${revision}`);
  }
  return {
    seconds: round(seconds),
    cpuSeconds: round(cpuSeconds),
    rowsPerSecond: Math.round(subscriptions / seconds),
    heapMb: Math.round(heapBytes / 2 ** 20),
    subscriptions,
    revision,
  };
}

/** What bench/store-start.ts reports. */
interface StartReport {
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly heapBytes: number;
  readonly subscriptions: number;
  readonly revision: number;
}

/** Read every change with `changesSince`, 10,000 a call as the service does, into nothing. */
async function timeRead(url: string, schema: string): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const repository = await PostgresSubscriptionRepository.open({ database: pool, schema });
    const started = performance.now();
    let revision = 0;
    for (;;) {
      const changes = await repository.changesSince(revision, 10_000);
      if (changes.length === 0) break;
      revision = changes.at(-1)!.revision;
    }
    return round((performance.now() - started) / 1000);
  } finally {
    await pool.end();
  }
}

/** Fill the schema, then time the starts (and once the reads alone, for the split). */
export async function measureLoad(url: string, schema: string): Promise<Record<string, unknown>> {
  const fillSeconds = await fill(url, schema);
  console.error(`filled ${LOAD_SUBSCRIPTIONS.toLocaleString('en')} in ${round(fillSeconds)} s`);
  const starts: Start[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    starts.push(await timeStart(url, schema));
    console.error(`start ${i + 1}: ${JSON.stringify(starts.at(-1))}`);
  }
  const readSeconds = await timeRead(url, schema);
  console.error(`changesSince alone: ${readSeconds} s`);
  const seconds = median(starts.map((s) => s.seconds));
  return {
    subscriptions: LOAD_SUBSCRIPTIONS,
    accounts: LOAD_ACCOUNTS,
    fillSeconds: round(fillSeconds),
    startSeconds: seconds,
    rowsPerSecond: Math.round(LOAD_SUBSCRIPTIONS / seconds),
    startCpuSeconds: median(starts.map((s) => s.cpuSeconds)),
    indexHeapMb: median(starts.map((s) => s.heapMb)),
    changesSinceAloneSeconds: readSeconds,
    starts,
    targetSeconds: 10,
    met: seconds < 10,
  };
}
