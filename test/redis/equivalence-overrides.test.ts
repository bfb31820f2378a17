/**
 * Invariant 5 (docs/invariants.md) under overridden limits (PlanScope.state): plans that decide with a
 * client's limits raised or lowered, counting in the default list's state, decide the same on the
 * Redis store and the memory store, refusals, Retry-After, blocks, costs, peeks, releases and
 * resets included, one by one and in batches.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  type LeaseToken,
  MemoryStore,
  type Plan,
  type Policy,
  rate,
  type StoreOutcome,
  window,
} from '../../src/index.js';
import type { RedisStore } from '../../src/redis/index.js';
import { override, overrideScope } from '../support/override-lists.js';
import {
  comparableOutcome,
  equivalenceStores,
  pairs,
  variants,
} from '../support/redis-equivalence.js';

const freshStore = equivalenceStores();

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
      who: fc.integer({ min: 0, max: pairs.length - 1 }),
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

type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;
type ApplyStep = Extract<Step, { kind: 'apply' }>;

function planOf(s: ApplyStep, c: string, a: string): Plan {
  const scopes = scopesOf(c, a, s.route, s.accountList, s.resourceList);
  const cost = Math.min(s.cost, costCap(scopes));
  return s.peek
    ? { scopes, statuses: s.statuses, cost, peek: true }
    : { scopes, statuses: s.statuses, cost };
}

/** The memory store and a Redis store, and the leases both hold. */
interface Pair {
  readonly memory: MemoryStore;
  readonly redis: RedisStore;
  readonly held: [LeaseToken, LeaseToken][];
}

/** Reset both stores alike; the Redis reset's promise. */
function resetBoth(stores: Pair, s: Extract<Step, { kind: 'reset' }>): Promise<unknown> {
  const [clientId, accountCode] = pairs[s.who]!;
  const target =
    s.resource === undefined
      ? { clientId, accountCode }
      : { clientId, accountCode, resource: s.resource };
  stores.memory.reset(target);
  return stores.redis.reset(target);
}

/** Give back one held lease on both stores; the Redis release's promise. */
function releaseBoth(stores: Pair, pick: number): Promise<unknown> {
  if (stores.held.length === 0) return Promise.resolve();
  const [m, r] = stores.held[pick % stores.held.length]!;
  stores.memory.release(m);
  return stores.redis.release(r);
}

function keepLeases(stores: Pair, expected: StoreOutcome, actual: StoreOutcome): void {
  if (expected.allowed && expected.lease && actual.allowed && actual.lease) {
    stores.held.push([expected.lease, actual.lease]);
  }
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
        // Arrange
        const stores: Pair = { memory: new MemoryStore(), redis: await freshStore(kind), held: [] };
        let t = 5_000_000;
        let retryAt: number | undefined;
        // Act and assert, step by step
        for (const s of steps) {
          if (s.kind === 'release') await releaseBoth(stores, s.pick);
          else if (s.kind === 'reset') await resetBoth(stores, s);
          else {
            t =
              s.retry !== undefined && retryAt !== undefined
                ? Math.max(t, retryAt + s.retry)
                : t + s.gap;
            const [c, a] = pairs[s.who]!;
            const plan = planOf(s, c, a);
            const expected = stores.memory.apply(plan, t);
            const actual = await stores.redis.apply(plan, t);
            expect(comparableOutcome(actual)).toEqual(comparableOutcome(expected));
            if (!expected.allowed) retryAt = t + expected.retryAfterSeconds * 1000;
            keepLeases(stores, expected, actual);
          }
        }
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
          const memory = new MemoryStore();
          const redis = await freshStore(kind);
          let t = 1_000_000;
          for (const s of steps) {
            t += s.gap;
            const scopes = [overrideScope('c', 'a', '', liveLists[s.list]!, liveLike)];
            for (let i = 0; i < s.times; i++) {
              const plan: Plan = s.peek && i === 0 ? { scopes, peek: true } : { scopes };
              const expected = memory.apply(plan, t);
              const actual = await redis.apply(plan, t);
              expect(comparableOutcome(actual)).toEqual(comparableOutcome(expected));
              if (s.release && expected.allowed && expected.lease && actual.allowed) {
                memory.release(expected.lease);
                if (actual.lease) await redis.release(actual.lease);
              }
            }
          }
        },
      ),
      { numRuns: 15 },
    );
  }, 120_000);
});

describe.each(variants)('RedisStore with %s and maxBatch, under overridden limits', (kind) => {
  let warmed = false;

  it('the Redis store and the memory store give identical decisions (invariant 5): overridden plans of any cost and peeks in batches, with releases and resets between them', async () => {
    const turn = fc.array(step, { minLength: 1, maxLength: 25 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ pause: fc.integer({ min: 0, max: 30_000 }), turn }), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.integer({ min: 2, max: 8 }),
        async (turns, maxBatch) => {
          const stores: Pair = {
            memory: new MemoryStore(),
            redis: await freshStore(kind, maxBatch),
            held: [],
          };
          // Every shape's scripts loaded first, once: a call sent again with EVAL after NOSCRIPT
          // runs after the calls sent meanwhile.
          if (!warmed) await warm(stores.redis);
          warmed = true;
          let t = 5_000_000;
          for (const { pause, turn } of turns) {
            t += pause;
            // Act: the turn's decisions, releases and resets in order, none awaited before the next.
            const expected: StoreOutcome[] = [];
            const actual: Promise<StoreOutcome>[] = [];
            const others: Promise<unknown>[] = [];
            for (const s of turn) {
              if (s.kind === 'release') others.push(releaseBoth(stores, s.pick));
              else if (s.kind === 'reset') others.push(resetBoth(stores, s));
              else {
                t += s.gap;
                const [c, a] = pairs[s.who]!;
                const plan = planOf(s, c, a);
                expected.push(stores.memory.apply(plan, t));
                actual.push(stores.redis.apply(plan, t));
              }
            }
            // Assert: each decision as the memory store made it.
            const outcomes = await Promise.all(actual);
            await Promise.all(others);
            expect(outcomes.map(comparableOutcome)).toEqual(expected.map(comparableOutcome));
            for (const [i, e] of expected.entries()) keepLeases(stores, e, outcomes[i]!);
          }
        },
      ),
      { numRuns: 30 },
    );
  }, 240_000);
});

/** Load the script of every plan shape the batched property draws, alone and in a batch. */
async function warm(redis: RedisStore): Promise<void> {
  for (let route = 0; route < 4; route++) {
    for (let accountList = 0; accountList < multipliers.length; accountList++) {
      for (let resourceList = 0; resourceList < multipliers.length; resourceList++) {
        if (route < 2 && resourceList > 0) continue;
        for (const [cost, peek, statuses] of [
          [1, false, true],
          [1, false, false],
          [2, false, true],
          [2, false, false],
          [1, true, true],
          [2, true, true],
        ] as const) {
          const w = [0, 1, 2, 3].map((n): Plan => {
            const scopes = scopesOf(`warm-${n}`, 'warm', route, accountList, resourceList);
            return peek ? { scopes, cost, peek, statuses } : { scopes, cost, statuses };
          });
          // Four at once: two go alone (nothing, then one, in Redis), two together.
          await Promise.all(w.map((plan) => redis.apply(plan, 0)));
        }
      }
    }
  }
}
