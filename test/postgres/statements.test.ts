/**
 * The repository's statements as a real server plans them on a fresh schema, whose tables were
 * never analysed: each one's estimated cost stays under the server's `jit_above_cost`, so that no
 * call is JIT-compiled (a compilation costs more than the statement: 13 to 20 ms for a create).
 * And `record_attempts` as a server plans it over analysed tables: a batch's deliveries found by
 * their key, whatever the statistics say of the pending ones. PGlite has no JIT; the run's shared
 * server is a real PostgreSQL with its defaults (JIT on), on which the file has a database of its
 * own.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { type Statements, statements } from '../../src/postgres/statements.js';
import { type SharedPostgres, sharedPostgres } from '../support/shared-postgres.js';

let postgres: SharedPostgres;
let pool: pg.Pool;
beforeAll(async () => {
  postgres = await sharedPostgres();
  pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
  await postgres?.release();
});

const at = '2026-01-01T00:00:00.000Z';
const ms = Date.parse(at);

/** Parameters of each statement, as the repository passes them. */
const PARAMS: Record<keyof Statements, unknown[]> = {
  create: [
    'ACME',
    'a',
    'https://hooks.example.com/a',
    ['t/e'],
    null,
    at,
    at,
    'whsec',
    null,
    ms,
    10,
    'a description',
    100,
    '{"X-Team":"billing"}',
    '{"owner":"ops"}',
    'hmac-sha256',
    null,
  ],
  createSubscriptions: [
    ['ACME', 'OTHER'],
    ['a', 'b'],
    ['https://hooks.example.com/a', 'https://hooks.example.com/b'],
    ['["t/e"]', '["t/e","t/f"]'],
    [null, '["MUC"]'],
    [at, at],
    [at, at],
    ['whsec', 'whsec_2'],
    [null, null],
    [ms, ms],
    [10, 10],
    ['a description', null],
    [100, null],
    ['{"X-Team":"billing"}', null],
    ['{"owner":"ops"}', null],
    ['hmac-sha256', 'ed25519'],
    [null, 'whpk_1'],
  ],
  get: ['ACME', 'a'],
  list: ['ACME', 0, 20],
  update: [
    'ACME',
    'a',
    null,
    ['t/f'],
    false,
    null,
    'disabled',
    at,
    'endpoint_failing',
    true,
    'new description',
    true,
    null,
    true,
    '{"X-Team":"ops"}',
    false,
    null,
    'ed25519',
  ],
  updateSubscriptions: [
    ['ACME', 'ACME'],
    ['a', 'b'],
    [null, 'https://hooks.example.com/b2'],
    ['["t/f"]', null],
    [false, true],
    [null, '["MUC"]'],
    ['disabled', null],
    [at, at],
    ['endpoint_failing', null],
    [true, false],
    ['new description', null],
    [true, false],
    [null, null],
    [true, false],
    ['{"X-Team":"ops"}', null],
    [false, true],
    [null, '{"owner":"ops"}'],
    ['ed25519', null],
  ],
  delete: ['ACME', 'a', at],
  deleteSubscriptions: [
    ['ACME', 'OTHER'],
    ['a', 'b'],
    [at, at],
  ],
  rotateSecret: ['ACME', 'a', 'whsk_2', null, ms, ms + 1_000, 'whpk_2', 'ed25519', at],
  rotateSecrets: [
    ['ACME', 'OTHER'],
    ['a', 'b'],
    ['whsk_2', 'whsec_3'],
    [null, null],
    [ms, ms],
    [ms + 1_000, ms],
    ['whpk_2', null],
    ['ed25519', null],
    [at, at],
  ],
  signingSecrets: ['ACME', 'a', ms],
  changesSince: [0, 10_000],
  recordAttempts: [
    ['ACME', 'ACME'],
    ['m', 'n'],
    ['a', 'a'],
    ['https://hooks.example.com/a', 'https://hooks.example.com/a'],
    [1, 2],
    [ms, ms + 1],
    [200, null],
    [null, 'timeout'],
    [null, 'no answer in 15 s'],
    ['retry', 'failed'],
    [ms + 5_000, null],
    [null, 'attempts_exhausted'],
    [12, 15_000],
    [1, null],
    [ms + 60_000, null],
  ],
  attempts: ['ACME', 2 ** 62, 'a', ['delivered', 'retry'], ms, ms + 1_000, 20],
  deleteAttemptsBefore: [ms, 1_000],
  recordMessages: [
    ['ACME', 'ACME'],
    ['m', 'n'],
    ['folio/created', 'folio/created'],
    ['MUC', null],
    ['{}', '{}'],
    [ms, ms],
    [ms + 300_000, ms + 300_000],
    [1, 1, 2],
    ['a', 'b', 'a'],
    ['https://hooks.example.com/a', 'https://hooks.example.com/b', 'https://hooks.example.com/a'],
  ],
  recordKeyedMessages: [
    ['ACME', 'ACME'],
    ['k', 'l'],
    ['folio/created', 'folio/created'],
    ['MUC', null],
    ['{}', '{}'],
    [ms, ms],
    [ms + 300_000, ms + 300_000],
    [1, 1, 2],
    ['a', 'b', 'a'],
    ['https://hooks.example.com/a', 'https://hooks.example.com/b', 'https://hooks.example.com/a'],
    ['order-1', null],
    ['f1', null],
    [ms + 86_400_000, null],
  ],
  deleteExpiredKeys: [ms, 1_000],
  claimDeliveries: [ms, ms + 300_000, 500],
  claimReleasedDeliveries: [ms, ms + 300_000, 500],
  releaseLeases: [ms],
  releaseDeliveries: [['ACME', 'ACME'], ['m', 'n'], ['a', 'b'], ms + 300_000],
  replayPacesOfMessage: ['ACME', 'm'],
  replayPacesOfSubscription: ['ACME', 'a'],
  replayMessage: ['ACME', 'm', ms, 100, ms + 300_000, 100, ['a', 'b']],
  replaySubscription: ['ACME', 'a', ms, 100, ms + 300_000, 100, ms - 86_400_000, ['a']],
  deliveryStatus: ['ACME', 'm', 'a'],
  deleteMessagesBefore: [ms, 1_000],
  secretsToReencrypt: ['k2', 0, 500],
  reencrypt: [['1'], ['old'], ['new'], ['k2']],
  secretsToCheck: [ms, '', '', 500],
};

/** The planner's estimated total cost of a statement, without running it. */
async function cost(text: string, params: unknown[]): Promise<number> {
  const { rows } = await pool.query(`EXPLAIN (FORMAT JSON) ${text}`, params);
  const [plan] = (rows[0] as { 'QUERY PLAN': Array<{ Plan: { 'Total Cost': number } }> })[
    'QUERY PLAN'
  ];
  return plan!.Plan['Total Cost'];
}

it('plans every statement under jit_above_cost on a fresh schema, so that none is JIT-compiled', async () => {
  const { rows } = await pool.query(`SELECT current_setting('jit_above_cost')::float8 AS above`);
  const above = Number((rows[0] as { above: number }).above);
  expect(above).toBeGreaterThan(0);
  await PostgresSubscriptionRepository.open({ database: pool, schema: 'plans' });
  const sql = statements('"plans"', 'plans_changes');
  const costs: Record<string, number> = {};
  for (const name of Object.keys(PARAMS) as Array<keyof Statements>) {
    costs[name] = await cost(sql[name], PARAMS[name]);
  }
  const over = Object.entries(costs).filter(([, value]) => value >= above);
  expect(over, `costs ${JSON.stringify(costs)}, jit_above_cost ${above}`).toEqual([]);
});

/** Index entries of `schema`'s pending deliveries read so far, as this connection's flushed stats tell. */
async function pendingEntriesRead(client: pg.PoolClient, schema: string): Promise<number> {
  // Flushed when the connection goes idle after this statement; read in the next transaction.
  await client.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await client.query(
    `SELECT idx_tup_read::float8 AS n FROM pg_stat_user_indexes
    WHERE schemaname = $1 AND indexrelname = 'deliveries_pending'`,
    [schema],
  );
  return Number((rows[0] as { n: number }).n);
}

it('records a batch of delivered attempts by the keys of its deliveries, reading none of the pending ones', async () => {
  // One connection: the statistics read are those of the session that recorded the attempts.
  const single = new pg.Pool({ connectionString: postgres.url, max: 1 });
  const schema = 'pending_reads';
  const s = `"${schema}"`;
  try {
    const repository = await PostgresSubscriptionRepository.open({ database: single, schema });
    await repository.create(
      {
        id: 'a',
        accountCode: 'ACME',
        endpointUrl: 'https://hooks.example.com/a',
        events: ['folio/created'],
        createdAt: at,
      },
      'whsec',
      { at: ms, maxPerAccount: 10 },
    );
    // Analysed when every delivery was delivered: the statistics say none is pending.
    await single.query(`INSERT INTO ${s}.messages (account_code, id, kind, body, created_ms)
      SELECT 'ACME', 'old_' || g, 'folio/created', '{}', g FROM generate_series(1, 2000) AS g`);
    await single.query(`INSERT INTO ${s}.deliveries (account_code, message_id, subscription_id,
        endpoint_url, status, published_ms, next_attempt_ms)
      SELECT 'ACME', 'old_' || g, 'a', 'https://hooks.example.com/a', 'delivered', g, g
      FROM generate_series(1, 2000) AS g`);
    await single.query(`ANALYZE ${s}.deliveries`);
    const ids = Array.from({ length: 200 }, (_, i) => `m${i}`);
    await Promise.all(
      ids.map((id, i) =>
        repository.recordMessage(
          { accountCode: 'ACME', id, kind: 'folio/created', body: '{}', createdAt: ms + i },
          [{ subscriptionId: 'a', endpointUrl: 'https://hooks.example.com/a' }],
          { leaseUntil: ms + 300_000 },
        ),
      ),
    );
    const client = await single.connect();
    const before = await pendingEntriesRead(client, schema);
    client.release();
    // Batches of one and of several, every attempt delivered: the one pass over a batch.
    const delivered = (id: string, i: number) =>
      repository.recordAttempt('ACME', {
        id,
        subscriptionId: 'a',
        endpointUrl: 'https://hooks.example.com/a',
        attempt: 1,
        at: ms + 1_000 + i,
        status: 204,
        durationMs: 5,
        outcome: 'delivered',
      });
    for (let i = 0; i < 8; i++) await delivered(ids[i]!, i);
    await Promise.all(ids.slice(8, 40).map((id, i) => delivered(id, 8 + i)));
    for (const id of ids.slice(0, 40)) {
      expect(await repository.deliveryStatus('ACME', id, 'a')).toBe('delivered');
    }
    const again = await single.connect();
    try {
      expect(await pendingEntriesRead(again, schema)).toBe(before);
    } finally {
      again.release();
    }
    await repository.close();
  } finally {
    await single.end();
  }
});
