/**
 * Idempotent publish across instances and restarts. Two services, each with a repository and a
 * pg Pool of its own, on one real PostgreSQL schema, publish the same keys at the same moment, many
 * at once: one message per key, both calls answer it, one delivery each. And a keyed publish that
 * resolved on PGlite in a folder is on record after a restart: the key answers it again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/index.js';
import { PostgresSubscriptionRepository } from '../../../src/postgres/index.js';
import { TestDatabases } from '../../postgres/databases.js';
import { pgliteFolder } from '../../support/pglite-template.js';
import {
  call,
  heldQueue,
  START,
  serviceSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const databases = new TestDatabases();
let second: pg.Pool;
beforeAll(async () => {
  await databases.start();
  second = new pg.Pool({ connectionString: databases.postgres?.url, max: 20 });
}, 120_000);
afterAll(async () => {
  await second?.end();
  await databases.stop();
});

const KEYS = 50;
const ROUNDS = 4;

describe('two instances on one PostgreSQL', () => {
  it(`publishing ${KEYS} keys at once on both, ${ROUNDS} times: one message per key, both answers equal, one delivery each`, async () => {
    const schema = databases.schema();
    const [repositoryA, repositoryB] = await Promise.all([
      PostgresSubscriptionRepository.open({ database: databases.database('pg'), schema }),
      PostgresSubscriptionRepository.open({ database: second, schema }),
    ]);
    const clock = new FakeClock(START);
    const queueA = heldQueue();
    const queueB = heldQueue();
    const a = serviceSetup({ repository: repositoryA, clock, queue: queueA.make });
    const b = serviceSetup({ repository: repositoryB, clock, queue: queueB.make });
    try {
      const created = await call(a.service, 'POST', '/v1/subscriptions', {
        body: subscriptionBody(),
      });
      expect(created.status).toBe(201);
      await b.service.start(); // loads the subscription
      for (let round = 0; round < ROUNDS; round++) {
        const keys = Array.from({ length: KEYS }, (_, i) => `round-${round}-key-${i}`);
        const publish = (service: typeof a.service, key: string) =>
          service.publish(
            { accountCode: 'ACME', kind: 'reservation/created', data: { key } },
            { idempotencyKey: key },
          );
        // B takes the keys in the reverse order: batches of the two meet in opposite orders.
        const [onA, onB] = await Promise.all([
          Promise.all(keys.map((key) => publish(a.service, key))),
          Promise.all([...keys].reverse().map((key) => publish(b.service, key))),
        ]);
        onB.reverse();
        const answers = onA.map((fromA, i) => [fromA, onB[i]] as const);
        for (const [fromA, fromB] of answers) {
          expect(fromB).toEqual(fromA);
          expect(fromA?.deliveries).toEqual([created.body.id]);
        }
      }
      const { rows } = await second.query(
        `SELECT (SELECT count(*) FROM "${schema}".messages)::integer AS messages,
          (SELECT count(*) FROM "${schema}".deliveries)::integer AS deliveries,
          (SELECT count(*) FROM "${schema}".idempotency_keys)::integer AS keys`,
      );
      expect(rows[0]).toEqual({
        messages: KEYS * ROUNDS,
        deliveries: KEYS * ROUNDS,
        keys: KEYS * ROUNDS,
      });
      // Queued by the instance that recorded it, once.
      const queued = [...queueA.held.jobs, ...queueB.held.jobs].map((job) => job.id);
      expect(queued).toHaveLength(KEYS * ROUNDS);
      expect(new Set(queued).size).toBe(KEYS * ROUNDS);
    } finally {
      await Promise.all([a.service.close(), b.service.close()]);
      await Promise.all([repositoryA.close(), repositoryB.close()]);
    }
  }, 120_000);
});

describe('a restart', () => {
  it('keeps a keyed publish that resolved: after it, the key answers the same message, which is on record', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'pglite-idempotent-'));
    const open = async () => {
      const database = new PGlite(folder);
      const repository = await PostgresSubscriptionRepository.open({ database });
      return { database, repository };
    };
    try {
      await pgliteFolder(folder);
      const clock = new FakeClock(START);
      const event = { accountCode: 'ACME', kind: 'reservation/created', data: { n: 1 } };
      const before = await open();
      const first = serviceSetup({ repository: before.repository, clock, queue: heldQueue().make });
      const created = await call(first.service, 'POST', '/v1/subscriptions', {
        body: subscriptionBody(),
      });
      const published = await first.service.publish(event, { idempotencyKey: 'k' });
      await first.service.close();
      await before.repository.close();
      await before.database.close();
      const after = await open();
      const next = serviceSetup({ repository: after.repository, clock, queue: heldQueue().make });
      try {
        expect(await next.service.publish(event, { idempotencyKey: 'k' })).toEqual(published);
        expect(await after.repository.deliveryStatus('ACME', published.id, created.body.id)).toBe(
          'pending',
        );
      } finally {
        await next.service.close();
        await after.repository.close();
        await after.database.close();
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }, 120_000);
});
