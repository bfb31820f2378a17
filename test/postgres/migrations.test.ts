/**
 * Migrations and concurrent writers on a real PostgreSQL: a fresh schema, a second run that applies
 * nothing, older schemas with their rows brought to the last, repositories starting together on
 * one fresh database (each migration applied once), and revisions that commit in order under
 * concurrent writers from a pool.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { migrate } from '../../src/postgres/migrations.js';
import { databaseKind } from '../../src/postgres/sql-database.js';
import { subscription, TestDatabases } from './databases.js';

const dbs = new TestDatabases();
beforeAll(() => dbs.start());
afterAll(() => dbs.stop());

const LAST = MIGRATIONS.at(-1)?.version ?? 0;

describe('migrations', () => {
  it.each(['pg', 'pglite'] as const)(
    'creates a fresh schema on %s, and a second run applies nothing',
    async (name) => {
      const schema = dbs.schema();
      const first = await PostgresSubscriptionRepository.open({
        database: dbs.database(name),
        schema,
      });
      expect(first.migration).toEqual({ applied: MIGRATIONS.map((m) => m.version), version: LAST });
      const again = await PostgresSubscriptionRepository.open({
        database: dbs.database(name),
        schema,
      });
      expect(again.migration).toEqual({ applied: [], version: LAST });
      const { rows } = await dbs
        .database(name)
        .query(`SELECT version, name FROM "${schema}".migrations ORDER BY version`);
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
      const tables = await dbs
        .database(name)
        .query(
          'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
          [schema],
        );
      expect(tables.rows.map((r) => (r as { table_name: string }).table_name)).toEqual([
        'accounts',
        'deliveries',
        'delivery_log',
        'idempotency_keys',
        'messages',
        'migrations',
        'replay_paces',
        'revision',
        'signing_secrets',
        'subscriptions',
      ]);
    },
  );

  it.each(['pg', 'pglite'] as const)(
    'brings a schema at version 2 with its rows to the last on %s: a disabled subscription was disabled on request, at its last change; old deliveries are due when their message was published',
    async (name) => {
      const schema = dbs.schema();
      const database = dbs.database(name);
      await migrate(databaseKind(database)!, schema, MIGRATIONS.slice(0, 2));
      const s = `"${schema}"`;
      await database.query(`INSERT INTO ${s}.subscriptions (account_code, id, endpoint_url, events,
          status, created_at, updated_at, revision, created_revision)
        VALUES ('ACME', 'off', 'https://hooks.example.com/off', '{folio/created}', 'disabled',
          '2025-01-01T00:00:00.000Z', '2025-02-01T00:00:00.000Z', 1, 1),
          ('ACME', 'on', 'https://hooks.example.com/on', '{folio/created}', 'enabled',
          '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 2, 2)`);
      await database.query(`INSERT INTO ${s}.messages (account_code, id, kind, body, created_ms)
        VALUES ('ACME', 'm', 'folio/created', '{}', 1000)`);
      await database.query(`INSERT INTO ${s}.deliveries (account_code, message_id, subscription_id)
        VALUES ('ACME', 'm', 'on')`);
      const repository = await PostgresSubscriptionRepository.open({ database, schema });
      expect(repository.migration.applied).toEqual(MIGRATIONS.slice(2).map((m) => m.version));
      expect(await repository.get('ACME', 'off')).toMatchObject({
        status: 'disabled',
        disabledReason: 'requested',
        disabledAt: '2025-02-01T00:00:00.000Z',
      });
      expect(await repository.get('ACME', 'on')).not.toHaveProperty('disabledReason');
      const [due] = await repository.claimDeliveries({ dueBy: 1000, leaseUntil: 2000, limit: 10 });
      expect(due).toMatchObject({ messageId: 'm', subscriptionId: 'on', nextAttemptAt: 1000 });
    },
  );

  it.each(['pg', 'pglite'] as const)(
    'brings a schema at version 7 with an endpoint failing to the last on %s: the delivered attempt that ends the streak tells it',
    async (name) => {
      const schema = dbs.schema();
      const database = dbs.database(name);
      await migrate(databaseKind(database)!, schema, MIGRATIONS.slice(0, 7));
      const s = `"${schema}"`;
      // The rows version 7 leaves after a failed attempt of m1 at 2000.
      await database.query(`INSERT INTO ${s}.subscriptions (account_code, id, endpoint_url, events,
          status, created_at, updated_at, revision, created_revision, failing_since_ms,
          failed_messages)
        VALUES ('ACME', 'x', 'https://hooks.example.com/x', '{folio/created}', 'enabled',
          '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 1, 1, 2000, 1)`);
      await database.query(`INSERT INTO ${s}.messages (account_code, id, kind, body, created_ms)
        VALUES ('ACME', 'm2', 'folio/created', '{}', 1000)`);
      await database.query(`INSERT INTO ${s}.deliveries (account_code, message_id,
          subscription_id, endpoint_url, published_ms, next_attempt_ms)
        VALUES ('ACME', 'm2', 'x', 'https://hooks.example.com/x', 1000, 1000)`);
      const repository = await PostgresSubscriptionRepository.open({ database, schema });
      try {
        expect(repository.migration).toEqual({ applied: [8, 9, 10], version: LAST });
        const record = await repository.recordAttempt('ACME', {
          id: 'm2',
          subscriptionId: 'x',
          endpointUrl: 'https://hooks.example.com/x',
          attempt: 1,
          at: 3_000,
          status: 204,
          durationMs: 5,
          outcome: 'delivered',
        });
        expect(record.ended).toEqual({ failingSince: 2_000, failedMessages: 1 });
        expect(record.health).toEqual({ failedMessages: 0 });
        expect(await repository.deliveryStatus('ACME', 'm2', 'x')).toBe('delivered');
      } finally {
        await repository.close();
      }
    },
  );

  it.each(['pg', 'pglite'] as const)(
    'brings a schema at version 9 with a pending delivery to the last on %s: record_attempts replaced in place, planned once a session, records the attempt',
    async (name) => {
      const schema = dbs.schema();
      const database = dbs.database(name);
      await migrate(databaseKind(database)!, schema, MIGRATIONS.slice(0, 9));
      const s = `"${schema}"`;
      await database.query(`INSERT INTO ${s}.subscriptions (account_code, id, endpoint_url, events,
          status, created_at, updated_at, revision, created_revision)
        VALUES ('ACME', 'x', 'https://hooks.example.com/x', '{folio/created}', 'enabled',
          '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', 1, 1)`);
      await database.query(`INSERT INTO ${s}.messages (account_code, id, kind, body, created_ms)
        VALUES ('ACME', 'm', 'folio/created', '{}', 1000)`);
      await database.query(`INSERT INTO ${s}.deliveries (account_code, message_id,
          subscription_id, endpoint_url, published_ms, next_attempt_ms)
        VALUES ('ACME', 'm', 'x', 'https://hooks.example.com/x', 1000, 1000)`);
      const repository = await PostgresSubscriptionRepository.open({ database, schema });
      try {
        expect(repository.migration).toEqual({ applied: [10], version: LAST });
        const { rows } = await database.query(
          `SELECT count(*)::integer AS n, min(array_to_string(p.proconfig, ' ')) AS config
          FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
          WHERE n.nspname = $1 AND p.proname = 'record_attempts'`,
          [schema],
        );
        expect(rows[0]).toEqual({
          n: 1,
          config: expect.stringContaining('plan_cache_mode=force_generic_plan'),
        });
        const record = await repository.recordAttempt('ACME', {
          id: 'm',
          subscriptionId: 'x',
          endpointUrl: 'https://hooks.example.com/x',
          attempt: 1,
          at: 2_000,
          status: 204,
          durationMs: 5,
          outcome: 'delivered',
        });
        expect(record.health).toEqual({ failedMessages: 0 });
        expect(await repository.deliveryStatus('ACME', 'm', 'x')).toBe('delivered');
      } finally {
        await repository.close();
      }
    },
  );

  it('lets repositories on separate pools migrate one fresh database at once, each migration once', async () => {
    const postgres = dbs.postgres;
    if (postgres === undefined) throw new Error('no server');
    const url = await postgres.createDatabase();
    const pools = Array.from({ length: 8 }, () => new pg.Pool({ connectionString: url, max: 2 }));
    try {
      const repos = await Promise.all(
        pools.map((database) => PostgresSubscriptionRepository.open({ database })),
      );
      const applied = repos.flatMap((r) => r.migration.applied);
      expect(applied.sort((a, b) => a - b)).toEqual(MIGRATIONS.map((m) => m.version));
      for (const repo of repos) expect(repo.migration.version).toBe(LAST);
      const pool = pools[0] as pg.Pool;
      const { rows } = await pool.query(
        'SELECT count(*)::int AS n FROM api_conventions.migrations',
      );
      expect(rows[0].n).toBe(MIGRATIONS.length);
      // Every instance works on the one schema.
      await repos[3]?.create(subscription('ACME', 'x'), 's', { at: 0, maxPerAccount: 5 });
      expect((await repos[5]?.get('ACME', 'x'))?.id).toBe('x');
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });
});

describe('concurrent writers on a pg Pool', () => {
  it('commits revisions in order: changesSince gives strictly increasing revisions and the final state', async () => {
    const repo = await dbs.open('pg');
    const ids = Array.from({ length: 10 }, (_, i) => `s${i}`);
    for (const id of ids)
      await repo.create(subscription('ACME', id), 'x', { at: 0, maxPerAccount: 100 });
    const seen: number[] = [];
    let after = 0;
    // A reader that follows the changes while the writers run must never see a revision appear
    // below one it has passed.
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const changes = await repo.changesSince(after, 1_000);
        for (const change of changes) {
          expect(change.revision).toBeGreaterThan(after);
          after = change.revision;
          seen.push(after);
        }
      }
    })();
    const updates = Array.from({ length: 50 }, (_, i) =>
      repo.update('ACME', ids[i % ids.length] as string, { events: [`kind${i}/created`] }, i + 1),
    );
    const results = await Promise.all(updates);
    writing = false;
    await reader;
    const revisions = results.map((r) => r?.revision ?? 0).sort((a, b) => a - b);
    expect(revisions).toEqual(Array.from({ length: 50 }, (_, i) => 11 + i));
    const changes = await repo.changesSince(0, 1_000);
    for (let i = 1; i < changes.length; i++) {
      expect(changes[i]?.revision).toBeGreaterThan(changes[i - 1]?.revision ?? 0);
    }
    // The newest change of each id is its final state.
    for (const change of changes) {
      expect(change.subscription).toEqual(await repo.get('ACME', change.id));
    }
    expect(changes).toHaveLength(ids.length);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('refuses creates beyond maxPerAccount atomically, however many run at once', async () => {
    const repo = await dbs.open('pg');
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        repo.create(subscription('ACME', `c${i}`), 'x', { at: 0, maxPerAccount: 7 }),
      ),
    );
    expect(results.filter((r) => r !== undefined)).toHaveLength(7);
    expect((await repo.list('ACME', { offset: 0, limit: 100 })).totalItems).toBe(7);
  });

  it('keeps one new secret per rotation when rotations of one subscription run at once', async () => {
    const repo = await dbs.open('pg');
    await repo.create(subscription('ACME', 'r'), 's0', { at: 0, maxPerAccount: 5 });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        repo.rotateSecret('ACME', 'r', `s${i + 1}`, { at: 100, graceMs: 1_000 }),
      ),
    );
    const during = await repo.signingSecrets('ACME', 'r', 100);
    expect(during).toHaveLength(11);
    // Past the grace, only the newest signs.
    expect(await repo.signingSecrets('ACME', 'r', 1_100)).toEqual([during[0]]);
  });
});
