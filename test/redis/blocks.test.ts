/**
 * A block never moves once announced (Redis store, against a real redis-server): the same rule and
 * the same specification's oracle as test/limits/blocks.test.ts, through the decision script.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLimiter,
  FakeClock,
  type LimitPreset,
  presets,
  rate,
  window,
} from '../../src/index.js';
import { RedisStore } from '../../src/redis/index.js';
import { arbitraryTraffic, type LibraryTarget, runLockstep } from '../support/block-traffic.js';
import { connect, RedisServer, type TestClient } from '../support/redis-server.js';
import {
  SPEC_DEVELOPMENT,
  SPEC_LIVE,
  type SpecAccount,
  SpecOracle,
} from '../support/spec-oracle.js';

let server: RedisServer;
let client: TestClient;
let run = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  client = await connect('ioredis', server.port);
});

afterAll(async () => {
  await client.close();
  await server.stop();
});

const who = { clientId: 'client-1', accountCode: 'ACME' };

/** A store on a key prefix of its own, timed by the caller's fake clock. */
function freshStore(): RedisStore {
  return new RedisStore({
    client: client.client,
    prefix: `blocks${++run}:`,
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

function redisTarget(preset: LimitPreset): LibraryTarget {
  const clock = new FakeClock(0);
  const limiter = createLimiter({ preset, clock, store: freshStore() });
  return {
    check: async (method, path, t) => {
      clock.set(t);
      const d = await limiter.check({ ...who, method, path });
      return d.allowed
        ? { allowed: true, retryAfterSeconds: undefined, reason: undefined, release: d.release }
        : { allowed: false, retryAfterSeconds: d.retryAfterSeconds, reason: d.reason };
    },
  };
}

/** Steps of each role and answer seen by the properties, so that none of them is vacuous. */
const seen = new Map<string, number>();
const tally = (
  steps: ReadonlyArray<{
    role: string;
    library: { allowed: boolean; reason?: string | undefined };
  }>,
) => {
  for (const s of steps) {
    const key = `${s.role} ${s.library.allowed ? 'admitted' : s.library.reason}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
};

const accounts: ReadonlyArray<[string, LimitPreset, SpecAccount]> = [
  ['Live', presets.live, SPEC_LIVE],
  ['Development', presets.development, SPEC_DEVELOPMENT],
];

describe('a block never moves once announced (Redis store)', () => {
  it('Live: 200 at t = 0, the 201st refused for 1 s, an early call at 999 ms leaves the block, the call at 1 s is admitted', async () => {
    // Arrange
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.live, clock, store: freshStore() });
    const call = () => limiter.check({ ...who, method: 'GET', path: '/booking/v1/reservations' });
    for (let i = 0; i < 200; i++) {
      const d = await call();
      expect(d.allowed).toBe(true);
      if (d.allowed) d.release();
    }

    // Act
    const refused = await call();
    clock.set(999);
    const early = await call();
    clock.set(1_000);
    const onTime = await call();

    // Assert
    expect(refused).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 1 });
    expect(early).toMatchObject({ allowed: false, reason: 'blocked', retryAfterSeconds: 1 });
    expect(onTime.allowed).toBe(true);
  });

  it('Development: refused at 40 s for 20 s, other workers calling early every second, admitted at 60 s', async () => {
    // Arrange: 5 a second from 0 s, 200 in the minute by 39.8 s.
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.development, clock, store: freshStore() });
    const call = () => limiter.check({ ...who, method: 'GET', path: '/booking/v1/reservations' });
    for (let i = 0; i < 200; i++) {
      clock.set(i * 200);
      const d = await call();
      expect(d.allowed).toBe(true);
      if (d.allowed) d.release();
    }

    // Act
    clock.set(40_000);
    const refused = await call();
    const early: Array<[number, unknown]> = [];
    for (let at = 40_500; at < 60_000; at += 1_000) {
      clock.set(at);
      const d = await call();
      early.push([at, d.allowed ? 'admitted' : [d.reason, d.retryAfterSeconds]]);
    }
    clock.set(60_000);
    const onTime = await call();

    // Assert: each early call is told the time left to 60 s, and 60 s holds.
    expect(refused).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 20 });
    expect(early).toEqual(
      early.map(([at]) => [at, ['blocked', Math.ceil((60_000 - (at as number)) / 1_000)]]),
    );
    expect(onTime.allowed).toBe(true);
  });

  for (const [name, preset, account] of accounts) {
    it(`${name}: every decision equals the specification's oracle, early retries and requests in flight included`, async () => {
      await fc.assert(
        fc.asyncProperty(arbitraryTraffic({ holds: true, maxLength: 250 }), async (traffic) => {
          // Arrange
          const oracle = new SpecOracle(account);

          // Act
          const steps = await runLockstep(traffic, redisTarget(preset), oracle);

          // Assert
          tally(steps);
          for (const step of steps) expect(step.library, JSON.stringify(step)).toEqual(step.oracle);
        }),
        { numRuns: 15 },
      );
    });

    it(`${name}: a client that waits exactly what it was told is admitted, however many early calls came in between`, async () => {
      await fc.assert(
        fc.asyncProperty(arbitraryTraffic({ holds: false, maxLength: 250 }), async (traffic) => {
          // Arrange
          const oracle = new SpecOracle(account);

          // Act
          const steps = await runLockstep(traffic, redisTarget(preset), oracle);

          // Assert: every retry at the announced instant after nothing else was admitted.
          tally(steps);
          let admittedSinceRefusal = false;
          for (const step of steps) {
            expect(step.library, JSON.stringify(step)).toEqual(step.oracle);
            if (step.role === 'exact' && !admittedSinceRefusal) {
              expect(step.library.allowed, JSON.stringify(step)).toBe(true);
            }
            if (step.role === 'first') admittedSinceRefusal = false;
            else if (step.library.allowed) admittedSinceRefusal = true;
          }
        }),
        { numRuns: 15 },
      );
    });
  }

  it('the traffic of the properties above reaches refusals, blocks and retries at the announced instant', () => {
    for (const key of ['first limit', 'first blocked', 'early blocked', 'exact admitted']) {
      expect(seen.get(key) ?? 0, key).toBeGreaterThan(0);
    }
  });

  it('a clock with sub-microsecond fractions and fractional rates: every Retry-After is honoured at its own instant', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          [rate(0.2, 2, { name: 'r' })],
          [rate(3, 4, { name: 'r' }), window(5, '1s', { name: 'w' })],
          [rate(0.7, 1, { name: 'r' }), window(3, '2.5s', { name: 'w' })],
        ),
        fc.array(
          fc.record({
            gap: fc.double({ min: 0, max: 3_000, noNaN: true }),
            early: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
          }),
          { maxLength: 30, size: 'max' },
        ),
        async (policies, arrivals) => {
          // Arrange
          const clock = new FakeClock(0);
          const limiter = createLimiter({ policies, clock, store: freshStore() });
          const request = { ...who, method: 'GET', path: '/x' };
          let t = 0;
          for (const { gap, early } of arrivals) {
            // Act
            t += gap;
            clock.set(t);
            const first = await limiter.check(request);
            if (first.allowed) continue;
            const announced = first.retryAt;
            const waited = t + first.retryAfterSeconds * 1_000;
            const before = t + early * (announced - t);
            if (before < announced) {
              clock.set(before);
              const d = await limiter.check(request);
              // Assert: an early call is refused as blocked and told an instant not before it.
              expect(d).toMatchObject({ allowed: false, reason: 'blocked' });
              if (!d.allowed) expect(d.retryAt).toBeGreaterThanOrEqual(announced);
            }
            t = waited;
            clock.set(t);
            expect((await limiter.check(request)).allowed).toBe(true);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
