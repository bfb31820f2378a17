/**
 * What a Redis outage does, decided in one place, against a real redis-server that is stopped
 * (then restarted) and paused with SIGSTOP (commands time out, then it resumes). Every row of the
 * table in docs/limits.md ("Store outages"): over real HTTP through the node:http middleware, and
 * with the limiter alone, with both Redis clients. The store only reports an outage; the
 * middleware's `failure` or the limiter's `outage` decides it. The figures are the
 * specification's Development limits (5 calls per second), on a fake clock shared by Redis
 * (`timeSource: 'clock'`) and the fallback store, so that no window slides during a run.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeRateLimit } from '../../src/adapters/node.js';
import type { RateLimitErrorEvent } from '../../src/http/rate-limit-gate.js';
import {
  createLimiter,
  type Decision,
  FakeClock,
  type LimiterOptions,
  MemoryStore,
  type OutageEvent,
  presets,
} from '../../src/index.js';
import { RedisStore, RedisStoreError } from '../../src/redis/index.js';
import { type ClientKind, clientKinds, connect, RedisServer } from '../support/redis-server.js';

// The specification's Development limits: 5 calls per 1 s window.
const PER_SECOND = 5;
// Requests sent while Redis is away, more than the window allows.
const DURING = 8;
// The store's deadline: short, so that a paused Redis fails each request soon, and long enough
// for a Redis that is up to answer on a busy machine (reloading its script after a restart too).
const DEADLINE_MS = 250;

/**
 * A check that Redis decided, with no outage reported. The store's deadline is short
 * (`DEADLINE_MS`), so that a paused Redis fails fast; on a very busy machine a call can miss it
 * with Redis up, which the store reports as a timeout and the limiter treats as an outage. Such
 * calls are tried again: each may report timeouts only, taken out of `errors` and `events`, so
 * that the outages asserted are those made while Redis was away.
 */
async function decidedInRedis(
  check: () => Promise<Decision>,
  errors: RedisStoreError[],
  events: OutageEvent[],
): Promise<Decision> {
  for (let tries = 1; ; tries++) {
    const [errorsBefore, eventsBefore] = [errors.length, events.length];
    const outcome = await check().then(
      (d) => d,
      (e: unknown) => e,
    );
    const reported = errors.splice(errorsBefore);
    events.splice(eventsBefore);
    if (reported.length === 0) return outcome as Decision;
    expect(reported.map((e) => e.code)).toEqual(['redis_timeout']);
    if (tries === 20) throw new Error(`Redis did not answer within ${DEADLINE_MS} ms in 20 tries`);
  }
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

/** How Redis goes away and comes back. */
const disruptions = {
  stopped: {
    away: (redis: RedisServer) => redis.stop(),
    back: (redis: RedisServer) => redis.restart(),
  },
  paused: {
    away: async (redis: RedisServer) => redis.pause(),
    back: async (redis: RedisServer) => redis.resume(),
  },
} as const;

type Disruption = keyof typeof disruptions;

/** Where the outage is decided, and what the middleware must answer while Redis is away. */
interface Row {
  readonly name: string;
  readonly failure?: 'open' | 'closed';
  readonly outage?: 'open' | 'closed' | 'fallback';
  /** Statuses of the DURING requests sent while Redis is away. */
  readonly during: readonly number[];
}

const repeat = <T>(value: T, times: number): T[] => Array.from({ length: times }, () => value);

const rows: readonly Row[] = [
  { name: "middleware failure: 'open' (default)", during: repeat(200, DURING) },
  { name: "middleware failure: 'closed'", failure: 'closed', during: repeat(503, DURING) },
  { name: "limiter outage: 'open'", outage: 'open', during: repeat(200, DURING) },
  { name: "limiter outage: 'closed'", outage: 'closed', during: repeat(503, DURING) },
  {
    name: "limiter outage: 'fallback'",
    outage: 'fallback',
    during: [...repeat(200, PER_SECOND), ...repeat(429, DURING - PER_SECOND)],
  },
];

interface Service {
  readonly url: string;
  readonly gateEvents: RateLimitErrorEvent<unknown>[];
  readonly outageEvents: OutageEvent[];
  close(): Promise<void>;
}

async function serve(row: Row, store: RedisStore, clock: FakeClock): Promise<Service> {
  const gateEvents: RateLimitErrorEvent<unknown>[] = [];
  const outageEvents: OutageEvent[] = [];
  const fallback = new MemoryStore();
  const limiter = createLimiter({
    preset: presets.development,
    store,
    clock,
    ...(row.outage === undefined
      ? {}
      : {
          outage: row.outage,
          onOutage: (event: OutageEvent) => void outageEvents.push(event),
          ...(row.outage === 'fallback' ? { fallbackStore: fallback } : {}),
          ...(row.outage === 'closed' ? { outageRetryAfterSeconds: 3 } : {}),
        }),
  });
  const limit = nodeRateLimit({
    limiter,
    identify: (req) => ({ clientId: String(req.headers['x-client']), accountCode: 'ACME' }),
    ...(row.failure === undefined ? {} : { failure: row.failure, failureRetryAfterSeconds: 2 }),
    onError: (event) => void gateEvents.push(event),
  });
  const service: Server = createServer((req, res) =>
    limit(req, res, () => res.writeHead(200).end('ok')),
  );
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(service.address() as AddressInfo).port}/booking/v1/x`,
    gateEvents,
    outageEvents,
    close: async () => {
      service.closeAllConnections();
      await new Promise<void>((resolve) => service.close(() => resolve()));
    },
  };
}

/** Send `count` requests of one client, one after another. */
async function burst(url: string, client: string, count: number) {
  const responses: Response[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(url, { headers: { 'x-client': client } });
    await response.arrayBuffer();
    responses.push(response);
  }
  return responses;
}

describe.each(clientKinds)('a Redis outage behind the node:http middleware (%s)', (kind) => {
  let redis: RedisServer;
  let connection: Awaited<ReturnType<typeof connect>>;
  beforeAll(async () => {
    redis = await RedisServer.start();
    connection = await connect(kind, redis.port);
  });
  afterAll(async () => {
    await connection.close();
    await redis.stop();
  });

  describe.each(Object.keys(disruptions) as Disruption[])('Redis %s', (disruption) => {
    it.each(rows)('$name', async (row) => {
      // Arrange: limited through Redis, on a fake clock.
      const clock = new FakeClock(1_000_000);
      const store = new RedisStore({
        client: connection.client,
        timeSource: 'clock',
        timeoutMs: DEADLINE_MS,
        onError: () => undefined,
      });
      const service = await serve(row, store, clock);
      const { away, back } = disruptions[disruption];
      const tag = `${kind}-${disruption}-${row.name}`;
      try {
        const before = await burst(service.url, `before ${tag}`, PER_SECOND + 1);
        expect(before.map((r) => r.status)).toEqual([...repeat(200, PER_SECOND), 429]);
        // Act: Redis goes away.
        await away(redis);
        let during: Response[];
        try {
          during = await burst(service.url, `during ${tag}`, DURING);
        } finally {
          await back(redis);
          await connection.ready();
        }
        // Assert: what the one place that decides chose; never a 429 that no limit explains.
        expect(during.map((r) => r.status)).toEqual(row.during);
        for (const response of during.filter((r) => r.status === 503)) {
          expect(response.headers.get('content-type')).toBe(
            'application/problem+json; charset=utf-8',
          );
          expect(response.headers.get('retry-after')).toBe(row.outage === 'closed' ? '3' : '2');
        }
        if (row.outage === undefined) {
          // The middleware decided and reported each outage.
          expect(service.gateEvents.map((e) => [e.phase, e.failure])).toEqual(
            repeat(['limiter', row.failure ?? 'open'], DURING),
          );
          expect(service.gateEvents.every((e) => e.error instanceof RedisStoreError)).toBe(true);
        } else {
          // The limiter decided and reported each outage; the middleware had nothing to decide.
          expect(service.gateEvents).toEqual([]);
          expect(service.outageEvents.map((e) => e.outage)).toEqual(repeat(row.outage, DURING));
          expect(service.outageEvents.every((e) => e.error instanceof RedisStoreError)).toBe(true);
        }
        // And limited through Redis again once it is back.
        const reported = service.gateEvents.length + service.outageEvents.length;
        clock.advance(2_000);
        const after = await burst(service.url, `after ${tag}`, PER_SECOND + 1);
        expect(after.map((r) => r.status)).toEqual([...repeat(200, PER_SECOND), 429]);
        expect(service.gateEvents.length + service.outageEvents.length).toBe(reported);
      } finally {
        await service.close();
      }
    });
  });

  it('refuses the middleware failure option with a limiter that decides outages itself: one place decides', () => {
    const store = new RedisStore({ client: connection.client });
    for (const outage of ['open', 'closed', 'fallback'] as const) {
      const limiter = createLimiter({ preset: presets.development, store, outage });
      expect(() =>
        nodeRateLimit({
          limiter,
          identify: () => ({ clientId: 'c', accountCode: 'ACME' }),
          failure: 'closed',
        }),
      ).toThrow(/decide in one place/);
    }
  });
});

/** The limiter alone: its `outage` option decides; without one, check rejects with the outage. */
describe.each(clientKinds)('a Redis outage with the limiter alone (%s)', (kind: ClientKind) => {
  let redis: RedisServer;
  let connection: Awaited<ReturnType<typeof connect>>;
  beforeAll(async () => {
    redis = await RedisServer.start();
    connection = await connect(kind, redis.port);
  });
  afterAll(async () => {
    await connection.close();
    await redis.stop();
  });

  const modes = ['reject', 'open', 'closed', 'fallback'] as const;
  describe.each(Object.keys(disruptions) as Disruption[])('Redis %s', (disruption) => {
    it.each(modes)("outage: '%s'", async (outage) => {
      // Arrange
      const clock = new FakeClock(1_000_000);
      const errors: RedisStoreError[] = [];
      const store = new RedisStore({
        client: connection.client,
        timeSource: 'clock',
        timeoutMs: DEADLINE_MS,
        onError: (e) => void errors.push(e),
      });
      const events: OutageEvent[] = [];
      const fallback = new MemoryStore();
      const options: LimiterOptions<RedisStore> = {
        preset: presets.development,
        store,
        clock,
        outage,
        ...(outage === 'reject' ? {} : { onOutage: (e: OutageEvent) => void events.push(e) }),
        ...(outage === 'fallback' ? { fallbackStore: fallback } : {}),
      };
      const limiter = createLimiter(options);
      expect(limiter.outage).toBe(outage);
      const request = (client: string) => ({
        clientId: `${kind}-${disruption}-${outage}-${client}`,
        accountCode: 'ACME',
        method: 'GET',
        path: '/booking/v1/x',
      });
      const inRedis = (client: string) =>
        decidedInRedis(() => limiter.check(request(client)), errors, events);
      expect((await inRedis('before')).statuses).toHaveLength(3);
      // Act
      await disruptions[disruption].away(redis);
      const during: Array<Decision | unknown> = [];
      try {
        for (let i = 0; i < DURING; i++) {
          during.push(
            await limiter.check(request('during')).then(
              (d) => d,
              (e: unknown) => e,
            ),
          );
        }
      } finally {
        await disruptions[disruption].back(redis);
        await connection.ready();
      }
      // Assert: the store reported every outage; the limiter did what it was told.
      expect(errors).toHaveLength(DURING);
      const decisions = during as Decision[];
      switch (outage) {
        case 'reject':
          expect(during).toEqual(errors);
          expect(events).toEqual([]);
          break;
        case 'open':
          expect(decisions.map((d) => d.allowed && d.statuses.length)).toEqual(repeat(0, DURING));
          break;
        case 'closed':
          expect(
            decisions.map((d) => !d.allowed && [d.reason, d.retryAfterSeconds, d.policy]),
          ).toEqual(repeat(['unavailable', 1, undefined], DURING));
          break;
        case 'fallback': {
          expect(decisions.map((d) => d.allowed)).toEqual([
            ...repeat(true, PER_SECOND),
            ...repeat(false, DURING - PER_SECOND),
          ]);
          for (const d of decisions) if (d.allowed) d.release();
          break;
        }
      }
      if (outage !== 'reject') {
        expect(events.map((e) => e.outage)).toEqual(repeat(outage, DURING));
        expect(events.map((e) => e.error)).toEqual(errors);
      }
      // Decided in Redis again once it is back, with every status.
      clock.advance(2_000);
      expect((await inRedis('after')).statuses).toHaveLength(3);
      expect(errors).toHaveLength(DURING);
    });
  });

  it('gives the leases of the fallback back to the fallback, so its throttle frees up', async () => {
    // Development's throttle: 5 concurrent.
    const clock = new FakeClock(0);
    const fallback = new MemoryStore();
    const store = new RedisStore({
      client: connection.client,
      timeSource: 'clock',
      timeoutMs: DEADLINE_MS,
      onError: () => undefined,
    });
    const limiter = createLimiter({
      policies: presets.development.policies.slice(2), // the throttle alone
      store,
      clock,
      outage: 'fallback',
      fallbackStore: fallback,
      onOutage: () => undefined,
    });
    await redis.stop();
    try {
      const request = { clientId: `${kind}-held`, accountCode: 'ACME', method: 'GET', path: '/' };
      // Five held at once, given back, then five more: ten admissions where five may be in flight
      // only if the first five leases came back to the fallback that took them.
      for (let round = 0; round < 2; round++) {
        const held: Decision[] = [];
        for (let i = 0; i < PER_SECOND; i++) held.push(await limiter.check(request));
        expect(held.map((d) => d.allowed)).toEqual(repeat(true, PER_SECOND));
        for (const d of held) if (d.allowed) d.release();
      }
    } finally {
      await redis.restart();
      await connection.ready();
    }
  });
});
