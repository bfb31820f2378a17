/**
 * Invariant 5 (docs/invariants.md): the Redis store and the memory store give identical decisions for the same
 * arrival sequence on a fake clock, with both Redis clients, against a real redis-server.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import {
  concurrency,
  type LimitPreset,
  type Plan,
  type Policy,
  presets,
  rate,
  window,
} from '../../src/index.js';
import { arbitraryGaps, burstyGaps } from '../support/arrivals.js';
import {
  equivalence,
  pairs,
  releaseStep,
  routes,
  scope,
  turnsOf,
  variants,
  who,
} from '../support/redis-equivalence.js';

const { twins: twinsOf } = equivalence();

describe.each(variants)('RedisStore with %s', (kind) => {
  it.each([
    ['live', presets.live, 25],
    ['development', presets.development, 25],
  ] as const)(
    'the Redis store and the memory store give identical decisions (invariant 5): %s preset with its resource rules and exemptions, through createLimiter',
    async (_, preset: LimitPreset, numRuns) => {
      const at = <T>(list: readonly T[], i: number) => list[i % list.length]!;
      const steps = fc
        .tuple(
          fc.oneof(
            arbitraryGaps(250),
            burstyGaps().map((g) => g.slice(0, 600)),
          ),
          fc.array(fc.integer({ min: 0, max: pairs.length - 1 }), { minLength: 1, maxLength: 600 }),
          fc.array(fc.boolean(), { minLength: 1, maxLength: 600 }),
          fc.array(fc.option(fc.integer({ min: -3, max: 1 }), { nil: undefined }), {
            minLength: 1,
            maxLength: 600,
          }),
          fc.array(fc.integer({ min: 0, max: routes.length - 1 }), {
            minLength: 1,
            maxLength: 600,
          }),
          // Decisions with and without statuses (as the middleware asks without RateLimit fields).
          fc.array(fc.boolean(), { minLength: 1, maxLength: 600 }),
        )
        .map(([gaps, who, releases, retryOffsets, paths, statuses]) =>
          gaps.map((gap, i) => ({
            gap,
            who: at(who, i),
            release: at(releases, i),
            retry: at(retryOffsets, i),
            route: at(paths, i),
            statuses: at(statuses, i),
          })),
        );
      await fc.assert(
        fc.asyncProperty(steps, async (steps) => {
          const twins = await twinsOf(kind, { preset });
          const { clock } = twins;
          let retryAt: number | undefined;
          for (const step of steps) {
            // Sometimes retry just before, at or after the instant the last refusal announced.
            if (step.retry !== undefined && retryAt !== undefined) {
              clock.set(Math.max(clock.now(), retryAt + step.retry));
            } else clock.advance(step.gap);
            const [clientId, accountCode] = pairs[step.who]!;
            const [method, path] = routes[step.route]!;
            const request = { clientId, accountCode, method, path };
            const decision = await twins.check(request, { statuses: step.statuses });
            const { expected } = decision;
            retryAt = expected.allowed ? retryAt : expected.retryAt;
            if (step.release) await twins.release(decision);
          }
          await twins.settle();
        }),
        { numRuns },
      );
    },
  );

  it('the Redis store and the memory store give identical decisions (invariant 5): multi-scope plans with resource scopes and exemptions', async () => {
    // The account's Live policies, and the specification's Development resource limits.
    const account = presets.live.policies;
    const rates = [
      window(30, '60min', { name: 'PUT rates: 30 per 60 min' }),
      window(10, '20min', { name: 'PUT rates: 10 per 20 min' }),
    ];
    const booking = [window(5, '5min', { name: 'PATCH booking: 5 per 5 min' })];
    const all = [0, 1, 2, 3];
    const exempt = [0, 1, 2]; // the throttle left out
    const routes = (clientId: string, accountCode: string): Plan[] => [
      { scopes: [scope(clientId, accountCode, '', account, all)] },
      { scopes: [scope(clientId, accountCode, '', account, exempt)] },
      {
        scopes: [
          scope(clientId, accountCode, '', account, all),
          scope(clientId, accountCode, 'PUT /rateplan/v*/rate-plans/R1/rates', rates, [0, 1]),
        ],
      },
      {
        scopes: [
          scope(clientId, accountCode, '', account, all),
          scope(clientId, accountCode, 'PUT /rateplan/v*/rate-plans/R2/rates', rates, [0, 1]),
        ],
      },
      {
        scopes: [
          scope(clientId, accountCode, '', account, exempt),
          scope(clientId, accountCode, 'PATCH /booking/v*/bookings/{B}', booking, [0]),
        ],
      },
    ];
    const plans = pairs.map(([c, a]) => routes(c, a));
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            gap: fc.oneof(
              fc.constant(0),
              fc.integer({ min: 1, max: 2_000 }),
              fc.integer({ min: 2_001, max: 400_000 }),
            ),
            who,
            route: fc.integer({ min: 0, max: 4 }),
            release: fc.boolean(),
            // Sometimes retry just before, at or after the instant the last refusal announced.
            retry: fc.option(fc.integer({ min: -3, max: 1 }), { nil: undefined }),
            statuses: fc.boolean(),
          }),
          { maxLength: 300, size: 'max' },
        ),
        async (steps) => {
          const twins = await twinsOf(kind);
          await twins.run(
            steps,
            (step) => ({ ...plans[step.who]![step.route]!, statuses: step.statuses }),
            5_000_000,
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it('the Redis store and the memory store give identical decisions (invariant 5): fractional rates and short leases', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          perSecond: fc.constantFrom(0.3, 1 / 3, 2.5, 7, 100),
          burst: fc.integer({ min: 1, max: 5 }),
          max: fc.integer({ min: 1, max: 3 }),
          ttl: fc.integer({ min: 1, max: 3_000 }),
        }),
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 1_500 }), release: fc.boolean() }), {
          maxLength: 200,
          size: 'max',
        }),
        async ({ perSecond, burst, max, ttl }, steps) => {
          const policies = [
            rate(perSecond, burst, { name: 'r' }),
            concurrency(max, { name: 'c', leaseTtl: ttl, retryAfter: 1_500 }),
          ];
          const plan: Plan = { scopes: [scope('c', 'a', '', policies, [0, 1])] };
          const twins = await twinsOf(kind);
          await twins.run(steps, () => plan, 0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('the Redis store and the memory store give identical decisions (invariant 5): leases given back late, twice, after they expired, and several taken at one instant', async () => {
    const take = fc.record({
      kind: fc.constant('take' as const),
      gap: fc.constantFrom(0, 0, 1, 400, 2_500),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        // A release gives back any lease taken so far: still held, given back already, or expired.
        fc.array(fc.oneof(take, releaseStep), { maxLength: 120, size: 'max' }),
        async (max, steps) => {
          const policies = [concurrency(max, { name: 'c', leaseTtl: 3_000, retryAfter: 1_000 })];
          const plan: Plan = { scopes: [scope('c', 'a', '', policies, [0])] };
          const twins = await twinsOf(kind);
          await twins.run(steps, () => plan, 0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('the Redis store and the memory store give identical decisions (invariant 5): policy lists longer than a script keeps in local variables, and two scopes on one key', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 700 }),
            exempt: fc.integer({ min: 0, max: 3 }),
            twice: fc.boolean(),
            release: fc.boolean(),
          }),
          { maxLength: 120, size: 'max' },
        ),
        async (steps) => {
          // Arrange: 23 policies on the account and 6 on a resource (the script keeps them in a
          // table), and a plan that names the resource scope twice (one key, one state).
          const account: Policy[] = [
            ...Array.from({ length: 20 }, (_, i) =>
              window(2 + (i % 5), 300 + 150 * i, { name: `w${i}` }),
            ),
            rate(3, 4, { name: 'r' }),
            concurrency(3, { name: 'c1', leaseTtl: 900, retryAfter: 1_200 }),
            concurrency(2, { name: 'c2', leaseTtl: 2_000 }),
          ];
          const resource: Policy[] = Array.from({ length: 6 }, (_, i) =>
            window(3 + i, 500 * (i + 1), { name: `x${i}` }),
          );
          const all = account.map((_, i) => i);
          const actives = [all, all.filter((i) => i !== 21), all.filter((i) => i % 3 !== 0), []];
          const twins = await twinsOf(kind);
          // Act and assert, step by step
          await twins.run(
            steps,
            (step) => {
              const scopes = [
                scope('c', 'a', '', account, actives[step.exempt]!),
                scope('c', 'a', 'PUT /r/{1}', resource, [0, 2, 5]),
              ];
              if (step.twice) scopes.push(scope('c', 'a', 'PUT /r/{1}', resource, [1, 5]));
              return { scopes };
            },
            0,
          );
        },
      ),
      { numRuns: 30 },
    );
  });
});

/**
 * The plan shapes of a batched store's test: a Live client's with all policies, with the throttle
 * exempt, and with resource scopes, a small throttled list's with both positions and one, and a
 * list too long for local variables.
 */
const live = presets.live.policies;
const rates = [
  window(3, '60min', { name: 'PUT rates: 3 per 60 min' }),
  window(2, '20min', { name: 'PUT rates: 2 per 20 min' }),
];
const booking = [window(2, '5min', { name: 'PATCH booking: 2 per 5 min' })];
const small = [
  window(4, '1s', { name: 'small: 4 per s' }),
  concurrency(2, { name: 'small throttle', leaseTtl: '1h', retryAfter: 1_000 }),
];
// More policies than the script keeps in local variables: it keeps them in a table.
const large = [
  ...Array.from({ length: 20 }, (_, i) => window(2 + (i % 5), 300 + 150 * i, { name: `w${i}` })),
  concurrency(2, { name: 'large throttle', leaseTtl: '1h', retryAfter: 1_000 }),
];
const everyLarge = large.map((_, i) => i);
const shapes = (c: string, a: string): Plan[] => [
  { scopes: [scope(c, a, '', live, [0, 1, 2, 3])] },
  { scopes: [scope(c, a, '', live, [0, 1, 2])] },
  {
    scopes: [
      scope(c, a, '', live, [0, 1, 2, 3]),
      scope(c, a, 'PUT /rateplan/v*/rate-plans/R1/rates', rates, [0, 1]),
    ],
  },
  {
    scopes: [
      scope(c, a, '', live, [0, 1, 2]),
      scope(c, a, 'PATCH /booking/v*/bookings/{B}', booking, [0]),
    ],
  },
  { scopes: [scope(c, a, '', small, [0, 1])] },
  { scopes: [scope(c, a, '', small, [1])] },
  { scopes: [scope(c, a, '', large, everyLarge)] },
];
const shapePlans = pairs.map(([c, a]) => shapes(c, a));

describe.each(variants)('RedisStore with %s and maxBatch', (kind) => {
  it('the Redis store and the memory store give identical decisions (invariant 5): decisions of several shapes and releases interleaved in one turn, batches full and not', async () => {
    const decision = fc.record({
      kind: fc.constant('decide' as const),
      gap: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })),
      who: fc.integer({ min: 0, max: shapePlans.length - 1 }),
      route: fc.integer({ min: 0, max: 6 }),
      statuses: fc.boolean(),
    });
    const step = fc.oneof({ weight: 3, arbitrary: decision }, releaseStep);
    await fc.assert(
      fc.asyncProperty(
        turnsOf(step, { pause: 90_000, steps: 30, turns: 8 }),
        fc.integer({ min: 2, max: 12 }),
        async (turns, maxBatch) => {
          // Arrange: every shape's scripts loaded first, the lone one and the one of several.
          const twins = await twinsOf(kind, { maxBatch });
          await twins.warm(shapes('warm', 'warm'), [{ statuses: true }, { statuses: false }]);
          await twins.runTurns(
            turns,
            (step) => ({ ...shapePlans[step.who]![step.route]!, statuses: step.statuses }),
            5_000_000,
          );
        },
      ),
      { numRuns: 100 },
    );
  }, 120_000);
});
