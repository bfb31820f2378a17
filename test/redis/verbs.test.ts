/**
 * Peek, reset and cost on the Redis store, against a real redis-server and through its scripts:
 * the properties of test/support/verbs-suite.ts, each store on a key prefix of its own, with fewer
 * runs than in memory.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter, FakeClock, presets } from '../../src/index.js';
import { clockRedisStores } from '../support/clock-redis-store.js';
import { verbsSuite } from '../support/verbs-suite.js';

const freshStore = clockRedisStores('verbs');

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
