/**
 * Invariant 5 (docs/invariants.md) for peek, reset and cost: random sequences with checks of any cost, peeks
 * and resets interleaved decide the same on the Redis store and the memory store, through the
 * limiter with the presets, and on multi-scope plans sent one by one and in batches.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  FakeClock,
  type LeaseToken,
  type LimitPreset,
  MemoryStore,
  type Plan,
  presets,
  rate,
  type StoreOutcome,
  window,
} from '../../src/index.js';
import { comparable } from '../support/limits.js';
import {
  comparableOutcome,
  equivalenceStores,
  pairs,
  routes,
  scope,
  variants,
} from '../support/redis-equivalence.js';

const freshStore = equivalenceStores();

/** A step of the limiter sequences: a check or a peek of some cost, or a reset. */
const limiterStep = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constantFrom('check' as const, 'check' as const, 'peek' as const),
      gap: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 700 }),
        fc.integer({ min: 701, max: 400_000 }),
      ),
      who: fc.integer({ min: 0, max: pairs.length - 1 }),
      route: fc.integer({ min: 0, max: routes.length - 1 }),
      cost: fc.oneof({ weight: 2, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 5 })),
      statuses: fc.boolean(),
      release: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('reset' as const),
      who: fc.integer({ min: 0, max: pairs.length - 1 }),
      route: fc.option(fc.constantFrom(3, 4, 6, 7, 8), { nil: undefined }),
    }),
  },
);

/** The Live policies on the account, a rate and a throttle, two resources. */
const account = [
  window(8, '1s', { name: 'w' }),
  rate(4, 6, { name: 'r' }),
  concurrency(3, { name: 'c', leaseTtl: '2s' }),
];
const rates = [window(6, '20s', { name: 'x' }), window(9, '60s', { name: 'y' })];
const plansOf = (c: string, a: string): Plan[] => [
  { scopes: [scope(c, a, '', account, [0, 1, 2])] },
  { scopes: [scope(c, a, '', account, [0, 1])] },
  { scopes: [scope(c, a, '', account, [0, 1, 2]), scope(c, a, 'PUT /r/{1}', rates, [0, 1])] },
  { scopes: [scope(c, a, '', account, [0, 1]), scope(c, a, 'PUT /r/{2}', rates, [0, 1])] },
];
const plans = pairs.map(([c, a]) => plansOf(c, a));

/** A step of the store sequences: a plan (checked or peeked, of some cost), a release, a reset. */
const storeStep = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('apply' as const),
      gap: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 900 }),
        fc.integer({ min: 901, max: 60_000 }),
      ),
      who: fc.integer({ min: 0, max: pairs.length - 1 }),
      route: fc.integer({ min: 0, max: 3 }),
      cost: fc.oneof({ weight: 2, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 6 })),
      peek: fc.boolean(),
      statuses: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('reset' as const),
      who: fc.integer({ min: 0, max: pairs.length - 1 }),
      resource: fc.option(fc.constantFrom('PUT /r/{1}', 'PUT /r/{2}'), { nil: undefined }),
    }),
  },
);

type StoreStep = typeof storeStep extends fc.Arbitrary<infer T> ? T : never;

function planOf(step: Extract<StoreStep, { kind: 'apply' }>): Plan {
  const base = plans[step.who]![step.route]!;
  return step.peek
    ? { ...base, statuses: step.statuses, cost: step.cost, peek: true }
    : { ...base, statuses: step.statuses, cost: step.cost };
}

describe.each(variants)('RedisStore with %s: peek, reset and cost', (kind) => {
  it.each([
    ['live', presets.live],
    ['development', presets.development],
  ] as const)(
    'the Redis store and the memory store give identical decisions (invariant 5): %s preset, checks of any cost, peeks and resets interleaved',
    async (_, preset: LimitPreset) => {
      await fc.assert(
        fc.asyncProperty(fc.array(limiterStep, { maxLength: 300, size: 'max' }), async (steps) => {
          // Arrange
          const clock = new FakeClock(1_000_000);
          const memory = createLimiter({ preset, clock, store: new MemoryStore() });
          const redis = createLimiter({ preset, clock, store: await freshStore(kind) });
          // Act and assert, step by step
          for (const step of steps) {
            const [clientId, accountCode] = pairs[step.who]!;
            if (step.kind === 'reset') {
              const route = step.route === undefined ? undefined : routes[step.route]!;
              const target =
                route === undefined
                  ? { clientId, accountCode }
                  : { clientId, accountCode, method: route[0], path: route[1] };
              memory.reset(target);
              await redis.reset(target);
              continue;
            }
            clock.advance(step.gap);
            const [method, path] = routes[step.route]!;
            const request = { clientId, accountCode, method, path };
            if (step.kind === 'peek') {
              const expected = memory.peek(request, { cost: step.cost });
              const actual = await redis.peek(request, { cost: step.cost });
              expect(comparable(actual)).toEqual(comparable(expected));
              continue;
            }
            const options = { cost: step.cost, statuses: step.statuses };
            const expected = memory.check(request, options);
            const actual = await redis.check(request, options);
            expect(comparable(actual)).toEqual(comparable(expected));
            if (step.release) {
              if (expected.allowed) expected.release();
              if (actual.allowed) actual.release();
            }
          }
        }),
        { numRuns: 20 },
      );
    },
  );

  it('the Redis store and the memory store give identical decisions (invariant 5): multi-scope plans of any cost, peeks, releases and resets of a client and account or of a resource', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(storeStep, { maxLength: 250, size: 'max' }), async (steps) => {
        const memory = new MemoryStore();
        const redis = await freshStore(kind);
        const held: [LeaseToken, LeaseToken][] = [];
        let t = 5_000_000;
        for (const step of steps) {
          if (step.kind === 'release') {
            if (held.length === 0) continue;
            const [m, r] = held[step.pick % held.length]!;
            memory.release(m);
            await redis.release(r);
            continue;
          }
          if (step.kind === 'reset') {
            const [clientId, accountCode] = pairs[step.who]!;
            const target =
              step.resource === undefined
                ? { clientId, accountCode }
                : { clientId, accountCode, resource: step.resource };
            memory.reset(target);
            await redis.reset(target);
            continue;
          }
          t += step.gap;
          const plan = planOf(step);
          const expected = memory.apply(plan, t);
          const actual = await redis.apply(plan, t);
          expect(comparableOutcome(actual)).toEqual(comparableOutcome(expected));
          if (expected.allowed && expected.lease && actual.allowed && actual.lease) {
            held.push([expected.lease, actual.lease]);
          }
        }
      }),
      { numRuns: 30 },
    );
  });

  it('the Redis store and the memory store give identical decisions (invariant 5): plans of any cost and peeks in batches, with resets between the turns', async () => {
    const turn = fc.array(storeStep, { minLength: 1, maxLength: 25 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ pause: fc.integer({ min: 0, max: 30_000 }), turn }), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.integer({ min: 2, max: 8 }),
        async (turns, maxBatch) => {
          const memory = new MemoryStore();
          const redis = await freshStore(kind, maxBatch);
          // Every variant's scripts loaded first: a call sent again with EVAL after NOSCRIPT runs
          // after the calls sent meanwhile.
          for (const cost of [1, 2]) {
            for (const peek of [false, true]) {
              for (const route of [0, 1, 2, 3]) {
                for (const statuses of [true, false]) {
                  const warm = [0, 1, 2, 3].map((w) => {
                    const base = plansOf(`warm-${w}`, 'warm')[route]!;
                    return peek
                      ? { ...base, statuses, cost, peek: true }
                      : { ...base, statuses, cost };
                  });
                  await Promise.all(warm.map((plan) => redis.apply(plan, 0)));
                }
              }
            }
          }
          const held: [LeaseToken, LeaseToken][] = [];
          let t = 5_000_000;
          for (const { pause, turn } of turns) {
            t += pause;
            // Act: the turn's decisions, releases and resets in order, none awaited before the next.
            const expected: StoreOutcome[] = [];
            const actual: Promise<StoreOutcome>[] = [];
            const others: Promise<unknown>[] = [];
            for (const step of turn) {
              if (step.kind === 'release') {
                if (held.length === 0) continue;
                const [m, r] = held[step.pick % held.length]!;
                memory.release(m);
                others.push(redis.release(r));
                continue;
              }
              if (step.kind === 'reset') {
                const [clientId, accountCode] = pairs[step.who]!;
                const target =
                  step.resource === undefined
                    ? { clientId, accountCode }
                    : { clientId, accountCode, resource: step.resource };
                memory.reset(target);
                others.push(redis.reset(target));
                continue;
              }
              t += step.gap;
              const plan = planOf(step);
              expected.push(memory.apply(plan, t));
              actual.push(redis.apply(plan, t));
            }
            // Assert: each decision as the memory store made it.
            const outcomes = await Promise.all(actual);
            await Promise.all(others);
            expect(outcomes.map(comparableOutcome)).toEqual(expected.map(comparableOutcome));
            for (const [i, e] of expected.entries()) {
              const a = outcomes[i]!;
              if (e.allowed && e.lease && a.allowed && a.lease) held.push([e.lease, a.lease]);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
