/**
 * Redis stores for property files that drive the limiter with a fake clock: one ioredis client on
 * a database of the shared redis-server for the file that calls it, and a fresh store per call on
 * a key prefix of its own.
 */
import { afterAll, beforeAll } from 'vitest';
import { RedisStore } from '../../src/redis/index.js';
import { connect, type TestClient } from './redis-server.js';
import { type SharedRedis, sharedRedis } from './shared-redis.js';

/**
 * Connect, for the file that calls it; returns the function that makes a fresh store whose keys
 * start with `prefix` and a number of their own.
 */
export function clockRedisStores(prefix: string): () => RedisStore {
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
  return function freshStore(): RedisStore {
    return new RedisStore({
      client: client.client,
      prefix: `${prefix}${++run}:`,
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
  };
}
