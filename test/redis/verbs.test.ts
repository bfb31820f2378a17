/**
 * Peek, reset and cost on the Redis store, against a real redis-server and through its scripts:
 * the properties of test/support/verbs-suite.ts, each store on a key prefix of its own, with fewer
 * runs than in memory.
 */
import { afterAll, beforeAll } from 'vitest';
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
