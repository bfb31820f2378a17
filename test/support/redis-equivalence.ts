/**
 * What the files comparing the Redis store with the memory store (invariant 5 of docs/invariants.md) share:
 * the store variants, both clients on a database of the shared redis-server, fresh stores, and
 * the routes and client-account pairs the properties draw from.
 */
import { afterAll, beforeAll } from 'vitest';
import {
  concurrency,
  type Plan,
  type PlanScope,
  type Policy,
  type StoreOutcome,
} from '../../src/index.js';
import { RedisStore } from '../../src/redis/index.js';
import { type ClientKind, clientKinds, connect, type TestClient } from './redis-server.js';
import { type SharedRedis, sharedRedis } from './shared-redis.js';

/**
 * The stores compared with the memory store: each client, and ioredis with every argument and reply
 * in text (the form a client that cannot send or read bytes gets).
 */
export const variants = [...clientKinds, 'ioredis, in text'] as const;
export type Variant = (typeof variants)[number];

/**
 * Connect both clients, for the file that calls it, to a database of the shared server of its own;
 * returns the function that makes a fresh store on them.
 */
export function equivalenceStores(): (variant: Variant, maxBatch?: number) => Promise<RedisStore> {
  let redis: SharedRedis;
  const clients = new Map<ClientKind, TestClient>();
  let run = 0;

  beforeAll(async () => {
    redis = await sharedRedis();
    for (const kind of clientKinds) clients.set(kind, await connect(kind, redis.port, redis.db));
  });

  afterAll(async () => {
    for (const c of clients.values()) await c.close();
    await redis.release();
  });

  /**
   * A store on a key prefix of its own, timed by the caller's clock, with its scripts loaded; with
   * `maxBatch`, sending the decisions of one turn together.
   */
  return async function freshStore(variant: Variant, maxBatch = 1): Promise<RedisStore> {
    const text = variant === 'ioredis, in text';
    const client = clients.get(text ? 'ioredis' : variant)!.client;
    const store = new RedisStore({
      client: text ? { ...client, binaryArguments: false, binaryReplies: false } : client,
      prefix: `eq${++run}:`,
      timeSource: 'clock',
      // Real time passes while the fake clock stands still: keep keys well past their horizon.
      expiryMarginMs: 600_000,
      timeoutMs: 10_000,
      maxBatch,
      onError: (error) => {
        throw error;
      },
    });
    // Load both scripts first, so that no NOSCRIPT fallback reorders a release and a decision.
    const warm: Plan = {
      scopes: [scope('warm', 'warm', '', [concurrency(1, { name: 'w' })], [0])],
    };
    const outcome = await store.apply(warm, 0);
    if (outcome.allowed && outcome.lease !== undefined) await store.release(outcome.lease);
    return store;
  };
}

export function scope(
  clientId: string,
  accountCode: string,
  resource: string,
  policies: readonly Policy[],
  active: readonly number[],
): PlanScope {
  return { clientId, accountCode, resource, policies, active };
}

export function comparableOutcome(o: StoreOutcome) {
  const { lease, ...rest } = o as StoreOutcome & { lease?: unknown };
  return { ...rest, leased: lease !== undefined };
}

/** Routes that hit the presets' resource limits, the Live throttle exemptions, and neither. */
export const routes = [
  ['GET', '/booking/v1/reservations'],
  ['GET', '/booking/v1/offers'],
  ['GET', '/booking/v2/reservations/R7/service-offers'],
  ['PUT', '/rateplan/v1/rate-plans/P1/rates'],
  ['PUT', '/rateplan/v0-nsfh/rate-plans/P1/rates'],
  ['PUT', '/rateplan/v1/rate-plans/P2/rates'],
  ['PATCH', '/rateplan/v1/rates'],
  ['PATCH', '/booking/v1/bookings/B1'],
  ['PATCH', '/booking/v3/reservations/R1'],
] as const;

export const pairs = [
  ['client-1', 'ACME'],
  ['client-1', 'OTHER'],
  ['client-{2}', '%7B'],
] as const;
