/**
 * The PostgreSQL repository's methods, the same test body on a pg Pool (a real server) and on
 * PGlite: what the SubscriptionRepository interface promises, and the same answers as the memory
 * repository for the same calls.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isConfigurationError } from '../../src/errors/index.js';
import { PostgresSubscriptionRepository } from '../../src/postgres/index.js';
import { aesGcmSecretCipher } from '../../src/webhooks/signing/secret-cipher.js';
import { MemorySubscriptionRepository } from '../../src/webhooks/store/memory-repository.js';
import type { SubscriptionRepository } from '../../src/webhooks/store/repository.js';
import { DATABASES, subscription, TestDatabases } from './databases.js';

const dbs = new TestDatabases();
beforeAll(() => dbs.start());
afterAll(() => dbs.stop());

const LIMITS = { at: 1_000, maxPerAccount: 100 };

describe.each(DATABASES)('PostgresSubscriptionRepository on %s', (name) => {
  it('creates, reads and lists in the order of creation, whatever createdAt says, with totalItems', async () => {
    const repo = await dbs.open(name);
    const created = await repo.create(subscription('ACME', 'b'), 'whsec_b', LIMITS);
    expect(created).toEqual({
      ...subscription('ACME', 'b'),
      signatureType: 'hmac-sha256',
      status: 'enabled',
      updatedAt: new Date(1_000).toISOString(),
      revision: 1,
    });
    await repo.create(subscription('ACME', 'a'), 'whsec_a', LIMITS);
    await repo.create(subscription('ACME', 'c', '2024-12-31T00:00:00.000Z'), 'whsec_c', LIMITS);
    await repo.create(subscription('OTHER', 'd'), 'whsec_d', LIMITS);
    expect(await repo.get('ACME', 'b')).toEqual(created);
    expect(await repo.get('OTHER', 'b')).toBeUndefined();
    expect(await repo.get('ACME', 'nope')).toBeUndefined();
    const all = await repo.list('ACME', { offset: 0, limit: 10 });
    expect(all.items.map((s) => s.id)).toEqual(['b', 'a', 'c']);
    expect(all.totalItems).toBe(3);
    const second = await repo.list('ACME', { offset: 1, limit: 1 });
    expect(second).toEqual({ items: [all.items[1]], totalItems: 3 });
    expect(await repo.list('ACME', { offset: 5, limit: 10 })).toEqual({ items: [], totalItems: 3 });
    expect(await repo.list('NOBODY', { offset: 0, limit: 10 })).toEqual({
      items: [],
      totalItems: 0,
    });
  });

  it('keeps property ids, or none for every property, and copies what it was given', async () => {
    const repo = await dbs.open(name);
    const given = { ...subscription('ACME', 'p'), propertyIds: ['h1', 'h2'] };
    const created = await repo.create(given, 's', LIMITS);
    expect(created?.propertyIds).toEqual(['h1', 'h2']);
    expect(Object.isFrozen(created)).toBe(true);
    expect((await repo.get('ACME', 'p'))?.propertyIds).toEqual(['h1', 'h2']);
    expect(await repo.get('ACME', 'p')).not.toHaveProperty('propertyIds', undefined);
    const all = await repo.create(subscription('ACME', 'q'), 's', LIMITS);
    expect(all).not.toHaveProperty('propertyIds');
  });

  it('refuses a create beyond maxPerAccount, counting only the live subscriptions of the account', async () => {
    const repo = await dbs.open(name);
    const limits = { at: 1, maxPerAccount: 2 };
    expect(await repo.create(subscription('ACME', 'a'), 's', limits)).toBeDefined();
    expect(await repo.create(subscription('ACME', 'b'), 's', limits)).toBeDefined();
    expect(await repo.create(subscription('ACME', 'c'), 's', limits)).toBeUndefined();
    expect(await repo.create(subscription('OTHER', 'c'), 's', limits)).toBeDefined();
    expect(await repo.create(subscription('NONE', 'z'), 's', { at: 1, maxPerAccount: 0 })).toBe(
      undefined,
    );
    expect(await repo.delete('ACME', 'a', 2)).toBe(true);
    expect(await repo.create(subscription('ACME', 'c'), 's', limits)).toBeDefined();
    expect((await repo.list('ACME', { offset: 0, limit: 10 })).totalItems).toBe(2);
  });

  it('updates each field, null property ids meaning every property again, scoped by account', async () => {
    const repo = await dbs.open(name);
    await repo.create({ ...subscription('ACME', 's'), propertyIds: ['h1'] }, 'x', LIMITS);
    expect(await repo.update('OTHER', 's', { status: 'disabled' }, 2_000)).toBeUndefined();
    expect(await repo.update('ACME', 'missing', { status: 'disabled' }, 2_000)).toBeUndefined();
    const changed = await repo.update(
      'ACME',
      's',
      { endpointUrl: 'https://new.example.com/', events: ['folio/*'], status: 'disabled' },
      2_000,
    );
    expect(changed).toMatchObject({
      endpointUrl: 'https://new.example.com/',
      events: ['folio/*'],
      propertyIds: ['h1'],
      status: 'disabled',
      updatedAt: new Date(2_000).toISOString(),
      createdAt: '2025-01-01T00:00:00.000Z',
      revision: 2,
    });
    const all = await repo.update('ACME', 's', { propertyIds: null }, 3_000);
    expect(all).not.toHaveProperty('propertyIds');
    expect(all?.status).toBe('disabled');
    const some = await repo.update('ACME', 's', { propertyIds: ['h9'] }, 4_000);
    expect(some?.propertyIds).toEqual(['h9']);
    expect(await repo.get('ACME', 's')).toEqual(some);
  });

  it('deletes, scoped by account, and tells the delete in changesSince', async () => {
    const repo = await dbs.open(name);
    await repo.create(subscription('ACME', 'a'), 'x', LIMITS);
    await repo.create(subscription('ACME', 'b'), 'x', LIMITS);
    expect(await repo.delete('OTHER', 'a', 5)).toBe(false);
    expect(await repo.delete('ACME', 'a', 5)).toBe(true);
    expect(await repo.delete('ACME', 'a', 6)).toBe(false);
    expect(await repo.get('ACME', 'a')).toBeUndefined();
    expect(await repo.signingSecrets('ACME', 'a', 5)).toEqual([]);
    const changes = await repo.changesSince(0, 10);
    expect(changes.map((c) => [c.revision, c.id, c.subscription === undefined])).toEqual([
      [2, 'b', false],
      [3, 'a', true],
    ]);
    expect(changes[1]).toEqual({ revision: 3, id: 'a', accountCode: 'ACME' });
    expect(await repo.changesSince(2, 10)).toEqual([changes[1]]);
    expect(await repo.changesSince(0, 1)).toEqual([changes[0]]);
    expect(await repo.changesSince(3, 10)).toEqual([]);
  });

  it('rotates secrets: newest first, older ones signing until at + grace, none for another account', async () => {
    const repo = await dbs.open(name);
    await repo.create(subscription('ACME', 's'), 'first', { at: 0, maxPerAccount: 10 });
    expect(await repo.signingSecrets('ACME', 's', 0)).toEqual(['first']);
    expect(await repo.rotateSecret('OTHER', 's', 'evil', { at: 10, graceMs: 100 })).toBe(false);
    expect(await repo.signingSecrets('OTHER', 's', 10)).toEqual([]);
    expect(await repo.rotateSecret('ACME', 's', 'second', { at: 10, graceMs: 100 })).toBe(true);
    expect(await repo.signingSecrets('ACME', 's', 109)).toEqual(['second', 'first']);
    expect(await repo.signingSecrets('ACME', 's', 110)).toEqual(['second']);
    // A later rotation with a longer grace keeps the earlier expiry of the first secret.
    expect(await repo.rotateSecret('ACME', 's', 'third', { at: 20, graceMs: 1_000 })).toBe(true);
    expect(await repo.signingSecrets('ACME', 's', 50)).toEqual(['third', 'second', 'first']);
    expect(await repo.signingSecrets('ACME', 's', 500)).toEqual(['third', 'second']);
    expect(await repo.signingSecrets('ACME', 's', 1_020)).toEqual(['third']);
    // A rotation with no grace retires every older secret at once.
    expect(await repo.rotateSecret('ACME', 's', 'fourth', { at: 30, graceMs: 0 })).toBe(true);
    expect(await repo.signingSecrets('ACME', 's', 30)).toEqual(['fourth']);
    expect(await repo.rotateSecret('ACME', 'missing', 'x', { at: 30, graceMs: 0 })).toBe(false);
  });

  it('keeps the delivery log per account, oldest first, by growing sequence', async () => {
    const repo = await dbs.open(name);
    const attempt = {
      id: 'msg_1',
      subscriptionId: 's',
      endpointUrl: 'https://hooks.example.com/s',
      attempt: 1,
      at: 1_000,
      outcome: 'retry' as const,
      error: { code: 'timeout', message: 'no answer in 15 s' },
      nextAttemptAt: 6_000,
    };
    const { entry: first } = await repo.recordAttempt('ACME', attempt);
    await repo.recordAttempt('OTHER', { ...attempt, id: 'msg_other' });
    const { entry: second } = await repo.recordAttempt('ACME', {
      ...attempt,
      attempt: 2,
      at: 6_000,
      status: 410,
      outcome: 'disabled',
      reason: 'gone',
      error: undefined,
      nextAttemptAt: undefined,
    } as never);
    expect(first).toEqual({ ...attempt, sequence: first.sequence });
    expect(second.sequence).toBeGreaterThan(first.sequence);
    const log = await repo.attempts('ACME', { limit: 10 });
    expect(log).toEqual([
      {
        id: 'msg_1',
        subscriptionId: 's',
        endpointUrl: 'https://hooks.example.com/s',
        attempt: 2,
        at: 6_000,
        status: 410,
        outcome: 'disabled',
        reason: 'gone',
        sequence: second.sequence,
      },
      first,
    ]);
    expect(await repo.attempts('ACME', { beforeSequence: second.sequence, limit: 10 })).toEqual([
      first,
    ]);
    expect(await repo.attempts('ACME', { limit: 1 })).toEqual([log[0]]);
    expect((await repo.attempts('OTHER', { limit: 10 })).map((e) => e.id)).toEqual(['msg_other']);
  });

  it('answers as the memory repository does for the same calls', async () => {
    const repo = await dbs.open(name);
    const memory = new MemorySubscriptionRepository();
    const run = async (r: SubscriptionRepository) => {
      const out: unknown[] = [];
      const limits = { at: 100, maxPerAccount: 3 };
      for (const [account, id, at] of [
        ['A', 'x', '2025-01-02T00:00:00.000Z'],
        ['A', 'y', '2025-01-01T00:00:00.000Z'],
        ['B', 'z', '2025-01-01T00:00:00.000Z'],
        ['A', 'w', '2025-01-01T00:00:00.000Z'],
        ['A', 'v', '2025-01-01T00:00:00.000Z'],
      ] as const) {
        out.push(await r.create(subscription(account, id, at), `sec_${id}`, limits));
      }
      out.push(await r.update('A', 'x', { events: ['folio/*'], propertyIds: ['p'] }, 200));
      out.push(await r.update('B', 'x', { status: 'disabled' }, 200));
      out.push(await r.delete('A', 'y', 300));
      out.push(await r.rotateSecret('A', 'x', 'sec_x2', { at: 400, graceMs: 50 }));
      out.push(await r.signingSecrets('A', 'x', 420), await r.signingSecrets('A', 'x', 450));
      out.push(
        await r.list('A', { offset: 0, limit: 10 }),
        await r.list('A', { offset: 1, limit: 1 }),
      );
      out.push(await r.changesSince(0, 100), await r.changesSince(2, 2));
      out.push(await r.create(subscription('A', 'y'), 'sec_y2', { at: 500, maxPerAccount: 3 }));
      out.push(await r.changesSince(3, 100));
      return out;
    };
    expect(await run(repo)).toEqual(await run(memory));
  });

  it('says how secrets are kept: plain without keys', async () => {
    const repo = await dbs.open(name);
    expect(repo.secretsAtRest).toBe('plain');
    await repo.close();
  });
});

describe('PostgresSubscriptionRepository options', () => {
  const refused = async (options: unknown, message: RegExp) => {
    const error = await PostgresSubscriptionRepository.open(options as never).catch((e) => e);
    expect(isConfigurationError(error)).toBe(true);
    expect(error.message).toMatch(message);
  };

  it('refuses what is not a database, a bad schema, keys and bounds, saying what to change', async () => {
    await refused(undefined, /options must be an object/);
    await refused({}, /database must be a pg Pool .* or a PGlite instance/);
    await refused({ database: { query() {} } }, /database must be a pg Pool/);
    const database = dbs.database('pglite');
    await refused({ database, schema: 'Bad-Name' }, /schema must be a lowercase identifier/);
    await refused({ database, schema: 'x'.repeat(49) }, /schema must be/);
    await refused({ database, secretKeys: [] }, /secretKeys must be an array of at least 1/);
    await refused(
      { database, secretKeys: [{ id: 'k1', key: 'c2hvcnQ=' }] },
      /secretKeys\[0\]\.key must be 32 bytes.*got base64 of 5 bytes/,
    );
    await refused(
      { database, secretKeys: [{ id: 'k1', key: Buffer.alloc(32) }], cipher: {} },
      /cipher must be a SecretCipher/,
    );
    await refused({ database, reconnectDelayMs: 0 }, /reconnectDelayMs must be a whole number/);
    await refused({ database, schemaa: 'x' }, /no option "schemaa"; did you mean "schema"/);
    await refused({ database, preparedStatements: 'yes' }, /preparedStatements must be/);
    await refused(
      { database, groupCommit: { maxBatch: 0 } },
      /^groupCommit\.maxBatch must be a whole number from 1 to 10000, got 0\.$/,
    );
    await refused({ database, groupCommit: { maxWaitMs: -1 } }, /groupCommit\.maxWaitMs must be/);
    await refused(
      { database, groupCommit: { concurrency: 1.5 } },
      /groupCommit\.concurrency must be/,
    );
    await refused(
      { database, groupCommit: { minBatch: 0 } },
      /^groupCommit\.minBatch must be a whole number from 1 to 10000, got 0\.$/,
    );
    await refused({ database, groupCommit: 'fast' }, /groupCommit must be/);
    await refused(
      { database, groupCommit: { maxBatc: 3 } },
      /^groupCommit has no option "maxBatc"; did you mean "maxBatch"\?/,
    );
    const cipher = aesGcmSecretCipher({ keys: [{ id: 'k1', key: Buffer.alloc(32) }] });
    await refused(
      { database, secretKeys: [{ id: 'k1', key: Buffer.alloc(32) }], cipher },
      /^cipher must be left out when secretKeys is given \(pass the keys alone\), got an object\.$/,
    );
  });

  it('refuses a pool whose connect() gives no client, naming it', async () => {
    for (const [client, got] of [
      [{}, 'an object'],
      [null, 'null'],
      [{ query: async () => ({ rows: [] }) }, 'an object'],
    ] as const) {
      const database = { query: async () => ({ rows: [] }), connect: async () => client };
      const error = await PostgresSubscriptionRepository.open({
        database: database as never,
      }).catch((e) => e);
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect(error.message).toBe(
        `database.connect() must be a client with query() and release() (pass a pg Pool, not a pg Client), got ${got}.`,
      );
    }
  });

  it('on a pool, prepares each statement once per connection by name, unless told not to', async () => {
    const postgres = dbs.postgres!;
    const prepared = async (preparedStatements: boolean) => {
      // One connection, so that the prepared statements read are the repository's.
      const pool = new pg.Pool({ connectionString: postgres.url, max: 1 });
      try {
        const repository = await PostgresSubscriptionRepository.open({
          database: pool,
          schema: dbs.schema(),
          preparedStatements,
        });
        for (let i = 0; i < 3; i++) {
          await repository.create(subscription('ACME', `s${i}`), 'whsec_x', LIMITS);
          expect((await repository.get('ACME', `s${i}`))?.id).toBe(`s${i}`);
        }
        const { rows } = await pool.query(
          "SELECT name FROM pg_prepared_statements WHERE name LIKE 'api_conventions_%'",
        );
        return rows.length;
      } finally {
        await pool.end();
      }
    };
    // create and get: two statements, each prepared once however often it runs.
    expect(await prepared(true)).toBe(2);
    expect(await prepared(false)).toBe(0);
  });

  it('does not show a refused key in the message', async () => {
    const key = 'A'.repeat(40);
    const error = await PostgresSubscriptionRepository.open({
      database: dbs.database('pglite'),
      secretKeys: [{ id: 'k', key }],
    }).catch((e: Error) => e);
    expect((error as Error).message).not.toContain(key);
  });
});
