/**
 * Invariant 5 (docs/invariants.md) for peek, reset and cost: random sequences with checks of any cost, peeks
 * and resets interleaved decide the same on the Redis store and the memory store, through the
 * limiter with the presets, and on multi-scope plans sent one by one and in batches.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import {
  concurrency,
  type LimitPreset,
  type Plan,
  presets,
  rate,
  window,
} from '../../src/index.js';
import {
  equivalence,
  pairs,
  releaseStep,
  resetStep,
  routes,
  scope,
  turnsOf,
  variants,
  who,
} from '../support/redis-equivalence.js';

const { twins: twinsOf } = equivalence();

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
      who,
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
      who,
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
      who,
      route: fc.integer({ min: 0, max: 3 }),
      cost: fc.oneof({ weight: 2, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 6 })),
      peek: fc.boolean(),
      statuses: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: releaseStep },
  { weight: 1, arbitrary: resetStep(['PUT /r/{1}', 'PUT /r/{2}']) },
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
          const twins = await twinsOf(kind, { preset });
          // Act and assert, step by step
          for (const step of steps) {
            const [clientId, accountCode] = pairs[step.who]!;
            if (step.kind === 'reset') {
              const route = step.route === undefined ? undefined : routes[step.route]!;
              await twins.reset(
                route === undefined
                  ? { clientId, accountCode }
                  : { clientId, accountCode, method: route[0], path: route[1] },
              );
              continue;
            }
            twins.clock.advance(step.gap);
            const [method, path] = routes[step.route]!;
            const request = { clientId, accountCode, method, path };
            if (step.kind === 'peek') {
              await twins.check(request, { cost: step.cost }, 'peek');
              continue;
            }
            const decision = await twins.check(request, {
              cost: step.cost,
              statuses: step.statuses,
            });
            if (step.release) await twins.release(decision);
          }
          await twins.settle();
        }),
        { numRuns: 20 },
      );
    },
  );

  it('the Redis store and the memory store give identical decisions (invariant 5): multi-scope plans of any cost, peeks, releases and resets of a client and account or of a resource', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(storeStep, { maxLength: 250, size: 'max' }), async (steps) => {
        const twins = await twinsOf(kind);
        await twins.run(steps, planOf, 5_000_000);
      }),
      { numRuns: 30 },
    );
  });

  it('the Redis store and the memory store give identical decisions (invariant 5): plans of any cost and peeks in batches, with resets between the turns', async () => {
    await fc.assert(
      fc.asyncProperty(
        turnsOf(storeStep, { pause: 30_000, steps: 25, turns: 6 }),
        fc.integer({ min: 2, max: 8 }),
        async (turns, maxBatch) => {
          const twins = await twinsOf(kind, { maxBatch });
          // Every variant's scripts loaded first: a call sent again with EVAL after NOSCRIPT runs
          // after the calls sent meanwhile.
          await twins.warm(
            plansOf('warm', 'warm'),
            [1, 2].flatMap((cost) =>
              [true, false].flatMap((statuses) => [
                { statuses, cost },
                { statuses, cost, peek: true },
              ]),
            ),
          );
          // Act and assert: the turn's decisions, releases and resets in order, none awaited
          // before the next; each decision as the memory store made it.
          await twins.runTurns(turns, planOf, 5_000_000);
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
