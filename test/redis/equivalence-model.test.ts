/**
 * Invariant 5 (docs/invariants.md) against a model: the Redis store and the memory store, each behind a
 * limiter on one fake clock, give identical decisions for a sequence of checks of both account
 * types, leases given back in any order, and a clock that stands still, jumps and goes back.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Decision,
  FakeClock,
  type LeaseToken,
  type LimitRequest,
  MemoryStore,
  type Plan,
  type PlanScope,
  presets,
  type StoreOutcome,
  type SyncLimitStore,
} from '../../src/index.js';
import type { RedisStore } from '../../src/redis/index.js';
import { comparable } from '../support/limits.js';
import { equivalenceStores, pairs, routes, variants } from '../support/redis-equivalence.js';

const freshStore = equivalenceStores();

/** One step of the model-based property: a request, a lease given back, or the clock moved. */
type Command =
  | {
      readonly kind: 'check';
      readonly who: number;
      readonly type: 'live' | 'development';
      readonly route: number;
      readonly statuses: boolean;
      readonly times: number;
    }
  | {
      readonly kind: 'release';
      readonly pick: number;
      readonly via: 'decision' | 'store' | 'awaited';
    }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'retry'; readonly offset: number }
  | { readonly kind: 'back'; readonly ms: number };

const commands: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      who: fc.integer({ min: 0, max: pairs.length - 1 }),
      type: fc.constantFrom('live' as const, 'development' as const),
      route: fc.integer({ min: 0, max: routes.length - 1 }),
      statuses: fc.boolean(),
      // Sometimes enough at one instant to fill the Live throttle or its 200 per second.
      times: fc.oneof(
        { weight: 8, arbitrary: fc.constant(1) },
        { weight: 4, arbitrary: fc.integer({ min: 2, max: 8 }) },
        { weight: 1, arbitrary: fc.constantFrom(21, 201) },
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: fc.nat(),
      via: fc.constantFrom('decision' as const, 'store' as const, 'awaited' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      // Standing still, a little, across the presets' window lengths (1 s, 60 s, 5 and 20 min)
      // and a lease's TTL (60 s), and a rate plan's hour.
      ms: fc.oneof(
        fc.constantFrom(0, 1, 999, 1_000, 1_001, 59_999, 60_000, 60_001, 300_001, 1_200_001),
        fc.integer({ min: 1, max: 400 }),
        fc.constant(3_600_001),
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('retry' as const),
      offset: fc.integer({ min: -1, max: 1 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('back' as const),
      ms: fc.constantFrom(1, 500, 5_000, 70_000),
    }),
  },
);

/** A memory store that remembers the lease of its latest admission. */
function leaseKeeping(store: MemoryStore): SyncLimitStore & { last: LeaseToken | undefined } {
  const keeper = {
    synchronous: true as const,
    last: undefined as LeaseToken | undefined,
    apply(plan: Plan, now: number): StoreOutcome {
      const outcome = store.apply(plan, now);
      keeper.last = outcome.allowed ? outcome.lease : undefined;
      return outcome;
    },
    release: (lease: LeaseToken) => store.release(lease),
  };
  return keeper;
}

/** A Redis store wrapped the same way. */
function redisLeaseKeeping(store: RedisStore) {
  const keeper = {
    synchronous: false as const,
    last: undefined as LeaseToken | undefined,
    async apply(plan: Plan, now: number): Promise<StoreOutcome> {
      const outcome = await store.apply(plan, now);
      keeper.last = outcome.allowed ? outcome.lease : undefined;
      return outcome;
    },
    release: (lease: LeaseToken) => store.release(lease),
  };
  return keeper;
}

function scopeKey(s: PlanScope): string {
  return `${s.clientId}\u0000${s.accountCode}\u0000${s.resource}\u0000${JSON.stringify(s.policies)}`;
}

describe.each(variants)('RedisStore with %s, against a memory store model', (kind) => {
  let comparedBehind = 0;

  it('the Redis store and the memory store give identical decisions (invariant 5): checks of both account types, leases given back in any order, twice and late, and a clock that stands still, jumps to Retry-After and goes back', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(commands, { minLength: 10, maxLength: 200, size: 'max' }),
        async (steps) => {
          // Arrange: one fake clock for both limiters, and a third limiter that only shows the
          // scopes a request's plan touches.
          const clock = new FakeClock(1_000_000);
          const memory = leaseKeeping(new MemoryStore());
          const redis = redisLeaseKeeping(await freshStore(kind));
          const model = createLimiter({ preset: presets.byAccountType, clock, store: memory });
          const real = createLimiter({ preset: presets.byAccountType, clock, store: redis });
          let planned: Plan | undefined;
          const planner = new MemoryStore();
          const plans = createLimiter({
            preset: presets.byAccountType,
            clock,
            store: {
              synchronous: true,
              apply: (plan: Plan, now: number) => {
                planned = plan;
                return planner.apply(plan, now);
              },
              release: (lease: LeaseToken) => planner.release(lease),
            },
          });
          const leases: { memory: Decision; redis: Decision; m: LeaseToken; r: LeaseToken }[] = [];
          // The memory store decides at the latest time it has seen; the Redis store at the latest
          // time of the request's own scopes (docs/redis.md, Differences). Behind the clock's
          // latest time the two agree when one of the scopes was written at that time.
          let latest = Number.NEGATIVE_INFINITY;
          const written = new Map<string, number>();
          let retryAt: number | undefined;
          // Act and assert, step by step
          for (const step of steps) {
            switch (step.kind) {
              case 'advance':
                clock.advance(step.ms);
                break;
              case 'back':
                clock.set(clock.now() - step.ms);
                break;
              case 'retry':
                if (retryAt !== undefined) clock.set(retryAt + step.offset);
                break;
              case 'release': {
                if (leases.length === 0) break;
                const held = leases[step.pick % leases.length]!;
                if (step.via === 'decision') {
                  if (held.memory.allowed) held.memory.release();
                  if (held.redis.allowed) held.redis.release();
                } else {
                  memory.release(held.m);
                  const done = redis.release(held.r);
                  if (step.via === 'awaited') await done;
                }
                break;
              }
              case 'check': {
                const [clientId, accountCode] = pairs[step.who]!;
                const [method, path] = routes[step.route]!;
                const request: LimitRequest<'live' | 'development'> = {
                  clientId,
                  accountCode,
                  accountType: step.type,
                  method,
                  path,
                };
                plans.check(request);
                const scopes = planned!.scopes;
                const behind = clock.now() < latest;
                if (behind && !scopes.some((s) => written.get(scopeKey(s)) === latest)) break;
                const options = { statuses: step.statuses };
                for (let i = 0; i < step.times; i++) {
                  const expected = model.check(request, options);
                  const m = memory.last;
                  const actual = await real.check(request, options);
                  const r = redis.last;
                  expect(comparable(actual)).toEqual(comparable(expected));
                  if (behind) comparedBehind++;
                  latest = Math.max(latest, expected.now);
                  if (expected.allowed) {
                    for (const s of scopes)
                      if (s.active.length > 0) written.set(scopeKey(s), expected.now);
                    if (m !== undefined && r !== undefined) {
                      leases.push({ memory: expected, redis: actual, m, r });
                    }
                  } else retryAt = expected.retryAt;
                }
                break;
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
    // The clock went back behind the latest decision, and decisions were compared there.
    expect(comparedBehind).toBeGreaterThan(0);
    // 300 sequences of up to 200 steps, some checks repeated up to 201 times at one instant, each
    // check a round trip to Redis: 20 s to 80 s on a 2-core machine, by the sizes fast-check draws
    // and what else runs. The suite's 60 s would fail it by its draw, not by a decision.
  }, 240_000);
});
