/**
 * Peek, reset and cost on the Redis store, against a real redis-server and through its scripts:
 * the properties of test/support/verbs-suite.ts, each store on a key prefix of its own, with fewer
 * runs than in memory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, FakeClock, presets } from '../../src/index.js';
import { RedisStore } from '../../src/redis/index.js';
import { connect, type TestClient } from '../support/redis-server.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';
import { verbsSuite } from '../support/verbs-suite.js';

let redis: SharedRedis;
let client: TestClient;
let run = 0;

beforeAll(async () => {
  redis = await sharedRedis();
  client = await connect('ioredis', redis.port, redis.db);
});

afterAll(async () => {
  await client.close();
  await redis.release();
});

/** A store on a key prefix of its own, timed by the caller's fake clock. */
function freshStore(): RedisStore {
  return new RedisStore({
    client: client.client,
    prefix: `verbs${++run}:`,
    timeSource: 'clock',
    // Real time passes while the fake clock stands still: keep keys well past their horizon.
    expiryMarginMs: 600_000,
    timeoutMs: 10_000,
    // A script that fails must fail the test, never admit: the store rejects with its error and
    // the limiter's default outage ('reject') passes it on.
    onError: (error) => {
      throw error;
    },
  });
}

verbsSuite('Redis store', freshStore, { numRuns: 15, maxLength: 200 });

describe('reset on Redis', () => {
  it('clears exactly the keys of its client and account, whatever glob characters their ids hold', async () => {
    // Arrange: clients whose ids a glob pattern would mix up, each 5 requests at 0 (Development).
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.development, clock, store: freshStore() });
    const ids = ['a*', 'ab', 'a?', 'a[b]', 'a\\', 'a{1}'];
    const call = (clientId: string) =>
      limiter.check({
        clientId,
        accountCode: 'ACME',
        method: 'PATCH',
        path: '/booking/v1/bookings/B1',
      });
    for (const id of ids) {
      for (let i = 0; i < 5; i++) {
        const d = await call(id);
        if (d.allowed) d.release();
      }
    }
    // Act
    const cleared = await limiter.reset({ clientId: 'a*', accountCode: 'ACME' });
    const resource = await limiter.reset({
      clientId: 'a?',
      accountCode: 'ACME',
      method: 'PATCH',
      path: '/booking/v2/bookings/B1',
    });
    // Assert: 'a*' afresh (its global and resource keys), 'a?' afresh on the resource only.
    expect(cleared.cleared).toBe(2);
    expect(resource.cleared).toBe(1);
    const after = await Promise.all(ids.map(async (id) => [id, (await call(id)).allowed]));
    expect(after).toEqual(ids.map((id) => [id, id === 'a*']));
    clock.set(1_000);
    expect((await call('a?')).allowed).toBe(true);
    expect((await call('ab')).allowed).toBe(false);
  });
});
