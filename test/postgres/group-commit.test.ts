/**
 * Publishes under group commit on a real PostgreSQL, whose connection fails when the test says: a
 * statement refused before it runs (the connection lost on the way), or one that committed but
 * whose answer was lost. Against the outbox's promise: a publish resolves only once its message
 * and deliveries are committed (so a crash after it loses nothing: each is read back the moment it
 * resolves), and a publish whose rows were not recorded is told to its caller, never dropped in
 * silence; a failed batch fails its own publishes only, and the next batch goes. And attempts
 * recorded in one batch leave what the memory repository leaves recording them one by one.
 */
import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  createWebhookService,
  type DeliveryAttempt,
  MemorySubscriptionRepository,
} from '../../src/index.js';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { arrayElements, PreparedTexts } from '../support/prepared-exec.js';
import { type SharedPostgres, sharedPostgres } from '../support/shared-postgres.js';
import { T0 } from '../support/subscription-repository-fixtures.js';

let postgres: SharedPostgres;
let pool: pg.Pool;
beforeAll(async () => {
  postgres = await sharedPostgres();
  pool = new pg.Pool({ connectionString: postgres.url, max: 10 });
});
afterAll(async () => {
  await pool?.end();
  await postgres?.release();
});

type Fault = 'none' | 'before' | 'after';

/**
 * The pool as the repository sees it, failing the statements that record messages as told, and
 * the record of each: how many messages it held, and its fault.
 */
function faulty(inner: pg.Pool, faults: Fault[]) {
  let armed = false;
  const statements: Array<{ messages: number; fault: Fault }> = [];
  const query = async (config: unknown, params?: unknown[]) => {
    const text = typeof config === 'string' ? config : (config as { text: string }).text;
    const values = params ?? (config as { values?: unknown[] }).values ?? [];
    const records = armed && text.includes('.messages (account_code');
    const fault = records ? (faults.shift() ?? 'none') : 'none';
    if (records) statements.push({ messages: (values[1] as unknown[]).length, fault });
    if (fault === 'before') throw new Error('connection lost before the statement ran');
    const result = await (inner.query as (c: unknown, v?: unknown[]) => Promise<unknown>)(
      config,
      params,
    );
    if (fault === 'after') throw new Error('connection lost after the statement committed');
    return result;
  };
  return {
    database: { query, connect: () => inner.connect() },
    statements,
    arm: (on = true) => {
      armed = on;
    },
  };
}

let schemas = 0;

it('a publish resolves only with its rows committed; one not recorded is refused to its caller; a failed batch fails its own', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 5 }),
      fc.array(fc.constantFrom<Fault>('none', 'none', 'before', 'after'), { maxLength: 30 }),
      // The defaults, and batches beside one in flight from a few writes on.
      fc.constantFrom(undefined, { minBatch: 2 }, { concurrency: 3, minBatch: 1 }),
      async (turns, faults, groupCommit) => {
        const schema = `group_commit_${++schemas}`;
        const { database, arm, statements } = faulty(pool, [...faults]);
        const repository = await PostgresSubscriptionRepository.open({
          database: database as unknown as pg.Pool,
          schema,
          ...(groupCommit === undefined ? {} : { groupCommit }),
        });
        const service = createWebhookService({
          repository,
          identify: () => ({ clientId: 'app', accountCode: 'ACME' }),
          pollIntervalMs: 0,
          onWarning: () => undefined,
          onError: () => undefined,
          queue: () => ({ enqueue: async () => undefined, close: async () => [] }),
        });
        try {
          const created = await service.fetch(
            new Request('http://api.test/v1/subscriptions', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                endpointUrl: 'https://hooks.example.com/a',
                events: ['folio/*'],
              }),
            }),
          );
          expect(created.status).toBe(201);
          const subscription = ((await created.json()) as { id: string }).id;
          const recorded = async (id: string) => {
            const { rows } = await pool.query(
              `SELECT d.subscription_id FROM ${schema}.messages AS m
                JOIN ${schema}.deliveries AS d ON d.account_code = m.account_code AND d.message_id = m.id
                WHERE m.account_code = 'ACME' AND m.id = $1`,
              [id],
            );
            return rows.map((row: { subscription_id: string }) => row.subscription_id);
          };
          arm();
          const outcomes: Array<{ resolved: boolean; id?: string; presentAtOnce?: string[] }> = [];
          for (const size of turns) {
            // One turn's publishes share batches.
            await Promise.all(
              Array.from({ length: size }, async () => {
                const outcome: (typeof outcomes)[number] = { resolved: false };
                outcomes.push(outcome);
                try {
                  const { id, deliveries } = await service.publish({
                    accountCode: 'ACME',
                    kind: 'folio/created',
                  });
                  expect(deliveries).toEqual([subscription]);
                  outcome.resolved = true;
                  outcome.id = id;
                  // Read back the moment it resolves: a crash now would find it.
                  outcome.presentAtOnce = await recorded(id);
                } catch (error) {
                  expect((error as Error).message).toMatch(/^connection lost/);
                }
              }),
            );
          }
          for (const outcome of outcomes) {
            if (outcome.resolved) expect(outcome.presentAtOnce).toEqual([subscription]);
          }
          // Every message on record was published: nothing made up, each with its delivery.
          const { rows } = await pool.query(
            `SELECT count(*)::integer AS n FROM ${schema}.messages`,
          );
          const resolved = outcomes.filter((o) => o.resolved).length;
          expect((rows[0] as { n: number }).n).toBeGreaterThanOrEqual(resolved);
          expect((rows[0] as { n: number }).n).toBeLessThanOrEqual(outcomes.length);
          // A batch that failed had each of its messages recorded alone: as many publishes failed
          // as statements of one message that failed, none without a fault of its own.
          const failedAlone = statements.filter((s) => s.fault !== 'none' && s.messages === 1);
          expect(outcomes.filter((o) => !o.resolved)).toHaveLength(failedAlone.length);
          const failedBatches = statements.filter((s) => s.fault !== 'none' && s.messages > 1);
          const alone = statements.filter((s) => s.messages === 1).length;
          expect(alone).toBeGreaterThanOrEqual(
            failedBatches.reduce((sum, s) => sum + s.messages, 0),
          );
          // What failed held nothing back: with no fault left, a publish goes through.
          arm(false);
          const after = await service.publish({ accountCode: 'ACME', kind: 'folio/created' });
          expect(await recorded(after.id)).toEqual([subscription]);
        } finally {
          await service.close();
          await repository.close();
          await pool.query(`DROP SCHEMA ${schema} CASCADE`);
        }
      },
    ),
    { numRuns: 25 },
  );
});

type Outcome = 'delivered' | 'retry' | 'failed';

it('attempts recorded in one batch leave what recording them one by one leaves, in the batch’s order for each subscription', async () => {
  const attempt = fc.record({
    subscription: fc.nat(2),
    message: fc.nat(3),
    outcome: fc.constantFrom<Outcome>('delivered', 'delivered', 'retry', 'failed'),
    sent: fc.boolean(),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(attempt, { minLength: 1, maxLength: 12 }), async (batch) => {
      const schema = `group_commit_${++schemas}`;
      const postgresRepository = await PostgresSubscriptionRepository.open({
        database: pool,
        schema,
      });
      const memory = new MemorySubscriptionRepository();
      try {
        const subscriptions = ['s0', 's1', 's2'];
        const messages = ['m0', 'm1', 'm2', 'm3'];
        for (const repository of [postgresRepository, memory]) {
          for (const id of subscriptions) {
            await repository.create(
              {
                id,
                accountCode: 'ACME',
                endpointUrl: `https://hooks.example.com/${id}`,
                events: ['folio/*'],
                createdAt: new Date(T0).toISOString(),
              },
              `whsec_${id}`,
              { at: T0, maxPerAccount: 10 },
            );
          }
          for (const id of messages) {
            await repository.recordMessage(
              { accountCode: 'ACME', id, kind: 'folio/created', body: '{}', createdAt: T0 },
              subscriptions.map((s) => ({
                subscriptionId: s,
                endpointUrl: `https://hooks.example.com/${s}`,
              })),
              { leaseUntil: T0 + 60_000 },
            );
          }
        }
        const attempts = batch.map((a, i): DeliveryAttempt => {
          const base = {
            id: messages[a.message]!,
            subscriptionId: subscriptions[a.subscription]!,
            endpointUrl: `https://hooks.example.com/${subscriptions[a.subscription]}`,
            attempt: 1,
            at: T0 + 1_000 * (i + 1),
            ...(a.sent ? { durationMs: 5 } : {}),
          };
          if (a.outcome === 'delivered')
            return { ...base, durationMs: 5, status: 204, outcome: 'delivered' };
          if (a.outcome === 'retry') {
            return { ...base, status: 500, outcome: 'retry', nextAttemptAt: base.at + 60_000 };
          }
          return { ...base, status: 500, outcome: 'failed', reason: 'attempts_exhausted' };
        });
        // One turn: one batch on PostgreSQL; one by one on the memory repository (the model).
        const together = await Promise.all(
          attempts.map((a) => postgresRepository.recordAttempt('ACME', a)),
        );
        const oneByOne = [];
        for (const a of attempts) oneByOne.push(await memory.recordAttempt('ACME', a));
        // Each attempt's health is its subscription's after it: the same only within one
        // subscription's order, which the batch keeps.
        expect(together.map((r) => r.health)).toEqual(oneByOne.map((r) => r.health));
        // And the streak each delivered attempt ended, as it stood before it.
        expect(together.map((r) => r.ended)).toEqual(oneByOne.map((r) => r.ended));
        for (const m of messages) {
          for (const s of subscriptions) {
            expect(await postgresRepository.deliveryStatus('ACME', m, s), `${m} to ${s}`).toBe(
              await memory.deliveryStatus('ACME', m, s),
            );
          }
        }
        const logged = await postgresRepository.attempts('ACME', { limit: 100 });
        expect(logged).toHaveLength(attempts.length);
      } finally {
        await postgresRepository.close();
        await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      }
    }),
    { numRuns: 40 },
  );
});

it('by default, many writes made together share two statements on a pool, and one on PGlite (one statement at a time on this thread)', async () => {
  const messageOf = (n: number) => ({
    accountCode: 'ACME',
    id: `msg_${n}`,
    kind: 'folio/created',
    body: '{}',
    createdAt: T0,
  });
  const recordForty = (repository: PostgresSubscriptionRepository) =>
    Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        repository.recordMessage(
          messageOf(n),
          [{ subscriptionId: 'sub_1', endpointUrl: 'https://hooks.example.com/a' }],
          { leaseUntil: T0 + 60_000 },
        ),
      ),
    );
  const schema = `group_commit_${++schemas}`;
  const { database, arm, statements } = faulty(pool, []);
  const onPool = await PostgresSubscriptionRepository.open({
    database: database as unknown as pg.Pool,
    schema,
  });
  try {
    arm();
    await recordForty(onPool);
    expect(statements.map((s) => s.messages)).toEqual([20, 20]);
  } finally {
    await onPool.close();
    await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  }
  const pglite = new PGlite();
  const batches: number[] = [];
  const query = pglite.query.bind(pglite);
  const exec = pglite.exec.bind(pglite);
  const prepared = new PreparedTexts();
  // Counted where the repository sends its statements (prepared, through exec; or through
  // query); the rest of PGlite as it is.
  pglite.query = ((text: string, params?: unknown[]) => {
    if (text.includes('.messages (account_code'))
      batches.push((params as unknown[][])[1]?.length ?? 0);
    return query(text, params);
  }) as typeof pglite.query;
  pglite.exec = ((text: string) => {
    const run = prepared.read(text);
    if (run?.statement.includes('.messages (account_code') === true) {
      batches.push(arrayElements(run.params[1] ?? null)?.length ?? 0);
    }
    return exec(text);
  }) as typeof pglite.exec;
  const onPglite = await PostgresSubscriptionRepository.open({ database: pglite });
  try {
    await recordForty(onPglite);
    expect(batches).toEqual([40]);
  } finally {
    await onPglite.close();
    await pglite.close();
  }
});
