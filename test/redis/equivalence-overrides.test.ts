/**
 * Invariant 5 (docs/invariants.md) under overridden limits (PlanScope.state): plans that decide with a
 * client's limits raised or lowered, counting in the default list's state, decide the same on the
 * Redis store and the memory store, refusals, Retry-After, blocks, costs, peeks, releases and
 * resets included, one by one and in batches.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { concurrency, type Plan, type Policy, rate, window } from '../../src/index.js';
import { override, overrideScope } from '../support/override-lists.js';
import {
  equivalence,
  pairs,
  releaseStep,
  resetStep,
  turnsOf,
  variants,
  who,
} from '../support/redis-equivalence.js';

const { twins: twinsOf } = equivalence();

const multipliers = [1, 0.5, 2, 3] as const;

/** The account's list and a resource's, small enough that refusals happen, and their overrides. */
const account: readonly Policy[] = [
  window(8, '1s', { name: 'w' }),
  rate(4, 6, { name: 'r' }),
  window(20, '10s', { name: 'm' }),
  concurrency(3, { name: 'c', leaseTtl: '2s', retryAfter: 700 }),
];
const resource: readonly Policy[] = [window(6, '20s', { name: 'x' }), rate(2.5, 3, { name: 'y' })];
const accountLists = multipliers.map((m) => (m === 1 ? account : override(account, m)));
const resourceLists = multipliers.map((m) => (m === 1 ? resource : override(resource, m)));

/** A plan's shape: its scopes' active positions and resources (0 to 3). */
function scopesOf(
  c: string,
  a: string,
  route: number,
  accountList: number,
  resourceList: number,
): Plan['scopes'] {
  const mine = accountLists[accountList]!;
  const theirs = resourceLists[resourceList]!;
  const all = [0, 1, 2, 3];
  const exempt = [0, 1, 2];
  switch (route) {
    case 0:
      return [overrideScope(c, a, '', mine, account, all)];
    case 1:
      return [overrideScope(c, a, '', mine, account, exempt)];
    case 2:
      return [
        overrideScope(c, a, '', mine, account, all),
        overrideScope(c, a, 'PUT /r/{1}', theirs, resource, [0, 1]),
      ];
    default:
      return [
        overrideScope(c, a, '', mine, account, exempt),
        overrideScope(c, a, 'PUT /r/{2}', theirs, resource, [0, 1]),
      ];
  }
}

/** The largest cost a plan may have: each active window's limit and rate's burst (the engine's check). */
function costCap(scopes: Plan['scopes']): number {
  let cap = Number.POSITIVE_INFINITY;
  for (const { policies, active } of scopes) {
    for (const i of active) {
      const p = policies[i]!;
      if (p.kind === 'window') cap = Math.min(cap, p.limit);
      else if (p.kind === 'rate') cap = Math.min(cap, p.burst);
    }
  }
  return cap;
}

const step = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('apply' as const),
      gap: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 900 }),
        fc.integer({ min: 901, max: 30_000 }),
      ),
      who,
      route: fc.integer({ min: 0, max: 3 }),
      // 0 the default lists; 1 to 3 overrides by 0.5, 2 and 3.
      accountList: fc.integer({ min: 0, max: multipliers.length - 1 }),
      resourceList: fc.integer({ min: 0, max: multipliers.length - 1 }),
      cost: fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 6 })),
      peek: fc.boolean(),
      statuses: fc.boolean(),
      // Retry just before, at or after the instant the latest refusal announced.
      retry: fc.option(fc.integer({ min: -2, max: 1 }), { nil: undefined, freq: 4 }),
    }),
  },
  { weight: 2, arbitrary: releaseStep },
  { weight: 1, arbitrary: resetStep(['PUT /r/{1}', 'PUT /r/{2}']) },
);

type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;
type ApplyStep = Extract<Step, { kind: 'apply' }>;

function planOf(s: ApplyStep): Plan {
  const [c, a] = pairs[s.who]!;
  const scopes = scopesOf(c, a, s.route, s.accountList, s.resourceList);
  const cost = Math.min(s.cost, costCap(scopes));
  return s.peek
    ? { scopes, statuses: s.statuses, cost, peek: true }
    : { scopes, statuses: s.statuses, cost };
}

/** Live-like lists: the store's hot shapes, overridden. */
const liveLike: readonly Policy[] = [
  window(200, '1s', { name: 'live: 200 per s' }),
  rate(100, 200, { name: 'live: 100 per s' }),
  window(3500, '60s', { name: 'live: 3500 per min' }),
  concurrency(20, { name: 'live: 20 at once', leaseTtl: '60s', retryAfter: 1_000 }),
];
const liveLists = multipliers.map((m) => (m === 1 ? liveLike : override(liveLike, m)));

describe.each(variants)('RedisStore with %s, under overridden limits', (kind) => {
  it('the Redis store and the memory store give identical decisions (invariant 5): plans whose limits are overridden (PlanScope.state) and back, multi-scope, of any cost, with peeks, releases, resets and retries at Retry-After', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 250, size: 'max' }), async (steps) => {
        const twins = await twinsOf(kind);
        await twins.run(steps, planOf, 5_000_000);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it('the Redis store and the memory store give identical decisions (invariant 5): a Live-like list and its overrides by 0.5, 2 and 3, bursts at one instant', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            gap: fc.constantFrom(0, 1, 7, 250, 1_000, 61_000),
            list: fc.integer({ min: 0, max: liveLists.length - 1 }),
            times: fc.constantFrom(1, 3, 40, 120),
            release: fc.boolean(),
            peek: fc.boolean(),
          }),
          { maxLength: 40 },
        ),
        async (steps) => {
          const twins = await twinsOf(kind);
          await twins.run(
            steps,
            (s, i) => {
              const scopes = [overrideScope('c', 'a', '', liveLists[s.list]!, liveLike)];
              return s.peek && i === 0 ? { scopes, peek: true } : { scopes };
            },
            1_000_000,
          );
        },
      ),
      { numRuns: 15 },
    );
  }, 120_000);
});

describe.each(variants)('RedisStore with %s and maxBatch, under overridden limits', (kind) => {
  it('the Redis store and the memory store give identical decisions (invariant 5): overridden plans of any cost and peeks in batches, with releases and resets between them', async () => {
    await fc.assert(
      fc.asyncProperty(
        turnsOf(step, { pause: 30_000, steps: 25, turns: 6 }),
        fc.integer({ min: 2, max: 8 }),
        async (turns, maxBatch) => {
          const twins = await twinsOf(kind, { maxBatch });
          // Every shape's scripts loaded first: a call sent again with EVAL after NOSCRIPT runs
          // after the calls sent meanwhile.
          await twins.warm(warmPlans(), [
            { cost: 1, statuses: true },
            { cost: 1, statuses: false },
            { cost: 2, statuses: true },
            { cost: 2, statuses: false },
            { cost: 1, peek: true, statuses: true },
            { cost: 2, peek: true, statuses: true },
          ]);
          // Act and assert: the turn's decisions, releases and resets in order, none awaited
          // before the next; each decision as the memory store made it.
          await twins.runTurns(turns, planOf, 5_000_000);
        },
      ),
      { numRuns: 30 },
    );
  }, 240_000);
});

/** Every plan shape the batched property draws. */
function warmPlans(): Plan[] {
  const plans: Plan[] = [];
  for (let route = 0; route < 4; route++) {
    for (let accountList = 0; accountList < multipliers.length; accountList++) {
      for (let resourceList = 0; resourceList < multipliers.length; resourceList++) {
        if (route < 2 && resourceList > 0) continue;
        plans.push({ scopes: scopesOf('warm', 'warm', route, accountList, resourceList) });
      }
    }
  }
  return plans;
}
