/**
 * The memory store under overridden limits (PlanScope.state): a scope that decides with another
 * list's limits counts in that list's state, counters, leases and blocks carried over both ways,
 * and a rate's backlog carried over to the new emission interval.
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
} from '../../../src/index.js';
import { carriedArrival } from '../../../src/limits/quota.js';
import { override, overrideScope } from '../../support/override-lists.js';
import { OverrideOracle } from '../../support/override-oracle.js';

/** One scope of client `c`, account `a`, deciding with `list` in the state of `state`. */
function plan(list: readonly Policy[], state: readonly Policy[], extra: Partial<Plan> = {}): Plan {
  return { scopes: [overrideScope('c', 'a', '', list, state)], ...extra };
}

/** Remaining of each policy, in order. */
function remaining(outcome: StoreOutcome): number[] {
  return outcome.values.filter((_, i) => i % 2 === 0);
}

const live: readonly Policy[] = Object.freeze([
  window(10, '1s', { name: 'w: 10 per s' }),
  rate(5, 10, { name: 'r: 5 per s, burst 10' }),
  window(40, '60s', { name: 'w: 40 per min' }),
  concurrency(8, { name: 't: 8 at once', leaseTtl: '60s', retryAfter: 1_000 }),
]);

describe('MemoryStore with overridden limits (PlanScope.state)', () => {
  it('under limits twice the default after N admissions under the default, each policy has 2L - N remaining (windows, rate, throttle leases)', () => {
    // Arrange: 6 admissions at one instant, their leases held.
    const store = new MemoryStore();
    const doubled = override(live, 2);
    for (let i = 0; i < 6; i++) expect(store.apply(plan(live, live), 1_000).allowed).toBe(true);
    // Act
    const peeked = store.apply(plan(doubled, live, { peek: true }), 1_000);
    const checked = store.apply(plan(doubled, live), 1_000);
    // Assert: 20 - 6 and 80 - 6 in the windows, 20 - 6 of the rate's burst, 16 - 6 leases; then
    // one more.
    expect(peeked.allowed).toBe(true);
    expect(remaining(peeked)).toEqual([14, 14, 74, 10]);
    expect(peeked.policies).toBe(doubled);
    expect(checked.allowed).toBe(true);
    expect(remaining(checked)).toEqual([13, 13, 73, 9]);
  });

  it('a lowered override refuses until enough admissions have left, with a truthful Retry-After, naming its own policy', () => {
    const base = [window(4, '10s', { name: 'w4' })];
    const half = override(base, 0.5);
    const store = new MemoryStore();
    for (const t of [0, 1_000, 2_000, 3_000]) {
      expect(store.apply(plan(base, base), t).allowed).toBe(true);
    }
    // Limit 2 with 4 inside: two must leave, the second of them (at 2 000) leaves at 12 000.
    const refused = store.apply(plan(half, base), 3_000);
    expect(refused).toMatchObject({
      allowed: false,
      reason: 'limit',
      retryAfterSeconds: 9,
      policy: half[0],
    });
    expect(store.apply(plan(half, base), 11_999)).toMatchObject({ allowed: false });
    expect(store.apply(plan(half, base), 12_000).allowed).toBe(true);
    // 3 000 and 12 000 inside: full under the override, room under the default.
    expect(store.apply(plan(half, base), 12_001).allowed).toBe(false);
  });

  it('a throttle lowered below the leases held refuses until enough are given back', () => {
    const base = [concurrency(4, { name: 't4', retryAfter: 2_000 })];
    const quarter = override(base, 0.25);
    const store = new MemoryStore();
    const leases: LeaseToken[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = store.apply(plan(base, base), 0);
      if (outcome.allowed && outcome.lease) leases.push(outcome.lease);
    }
    expect(store.apply(plan(quarter, base), 0)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 2,
      policy: quarter[0],
    });
    for (const lease of leases) store.release(lease);
    expect(store.apply(plan(quarter, base), 2_000).allowed).toBe(true);
    // The override's lease is counted under the default too.
    expect(remaining(store.apply(plan(base, base, { peek: true }), 2_000))).toEqual([3]);
  });

  it('blocks carry over both ways: a block started under the default refuses under a raised override, and back', () => {
    const base = [window(2, '10s', { name: 'w2' })];
    const triple = override(base, 3);
    const store = new MemoryStore();
    store.apply(plan(base, base), 0);
    store.apply(plan(base, base), 0);
    expect(store.apply(plan(base, base), 0)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 10,
    });
    // Room under the override (2 of 6), but blocked until 10 000: the override's policy named.
    expect(store.apply(plan(triple, base), 1)).toMatchObject({
      allowed: false,
      reason: 'blocked',
      retryAfterSeconds: 10,
      policy: triple[0],
    });
    expect(store.apply(plan(triple, base), 10_000).allowed).toBe(true);
    // A block started under the override holds under the default.
    for (let i = 0; i < 5; i++) store.apply(plan(triple, base), 10_000);
    expect(store.apply(plan(triple, base), 10_000)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 10,
    });
    expect(store.apply(plan(base, base), 19_999)).toMatchObject({
      allowed: false,
      reason: 'blocked',
      policy: base[0],
    });
  });

  it('back to the default after an override, every admission under the override is counted', () => {
    const base = [window(3, '10s', { name: 'w3' }), rate(10, 3, { name: 'r' })];
    const doubled = override(base, 2);
    const store = new MemoryStore();
    for (let i = 0; i < 6; i++) expect(store.apply(plan(doubled, base), 0).allowed).toBe(true);
    // 6 in the window of 3; 6 admissions of backlog at 100 ms each, so the burst of 3 frees one
    // admission at 400 ms, and the window at 10 s.
    const refused = store.apply(plan(base, base), 0);
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 10, policy: base[0] });
    expect(refused.values).toEqual([0, 10_000, 0, 600]);
  });

  it('a peek under an override changes nothing: checks with peeks under other lists interleaved decide as without them', () => {
    const small = [
      window(3, '1s', { name: 'w3' }),
      rate(3, 2, { name: 'r3' }),
      concurrency(2, { name: 't2', leaseTtl: '5s', retryAfter: 700 }),
    ];
    const lists = [small, override(small, 0.5), override(small, 2), override(small, 3)];
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            gap: fc.constantFrom(0, 0, 1, 150, 400, 1_000, 6_000),
            list: fc.integer({ min: 0, max: lists.length - 1 }),
            peekList: fc.option(fc.integer({ min: 0, max: lists.length - 1 }), { nil: undefined }),
          }),
          { maxLength: 80 },
        ),
        (steps) => {
          const plain = new MemoryStore();
          const peeked = new MemoryStore();
          let t = 0;
          for (const step of steps) {
            t += step.gap;
            if (step.peekList !== undefined) {
              peeked.apply(plan(lists[step.peekList]!, small, { peek: true }), t);
            }
            const p = plan(lists[step.list]!, small);
            const { lease: a, ...expected } = plain.apply(p, t) as StoreOutcome & {
              lease?: unknown;
            };
            const { lease: b, ...actual } = peeked.apply(p, t) as StoreOutcome & {
              lease?: unknown;
            };
            expect(actual).toEqual(expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('carries a rate backlog over at hand-computed points: t + ceil((tat - t) / previous * next * 1024) / 1024', () => {
    // 300 ms of backlog at 100 ms per admission is 3 admissions: 150 ms at 50.
    expect(carriedArrival(1_300, 1_000, 100, 50)).toBe(1_150);
    // 1 ms at 3 ms per admission, to 7: 7/3 ms, rounded up to 2 390 steps of 1/1024 ms.
    expect(carriedArrival(1_001, 1_000, 3, 7)).toBe(1_000 + 2_390 / 1_024);
    // No backlog, nothing carried.
    expect(carriedArrival(900, 1_000, 100, 50)).toBe(900);
    expect(carriedArrival(1_000, 1_000, 100, 50)).toBe(1_000);
    // Through the store: 2 admissions at 0 under 3 per s (333.333984375 ms each) leave a theoretical
    // arrival at 666.66796875; at 100 under 7 per s (142.857421875 ms) it is carried to
    // 100 + ceil(566.66796875 / 333.333984375 * 142.857421875 * 1024) / 1024 = 342.8583984375.
    const base = [rate(3, 5, { name: 'r3' })];
    const faster = [rate(7, 12, { name: 'r7' })];
    const store = new MemoryStore();
    store.apply(plan(base, base), 0);
    store.apply(plan(base, base), 0);
    const peeked = store.apply(plan(faster, base, { peek: true }), 100);
    expect(peeked.values).toEqual([10, 242.8583984375]);
    const checked = store.apply(plan(faster, base), 100);
    expect(checked.values).toEqual([9, 385.7158203125]);
    // Back under 3 per s at 100: 385.7158203125 ms of backlog at 142.857421875 ms each, carried.
    const back = store.apply(plan(base, base, { peek: true }), 100);
    const expected = Math.ceil((385.7158203125 / 142.857421875) * 333.333984375 * 1024) / 1024;
    expect(back.values[1]).toBe(expected);
  });

  it('reset clears the state an override counts in', () => {
    const store = new MemoryStore();
    const doubled = override(live, 2);
    for (let i = 0; i < 3; i++) store.apply(plan(doubled, live), 0);
    expect(store.reset({ clientId: 'c', accountCode: 'a' })).toEqual({ cleared: 1 });
    expect(remaining(store.apply(plan(live, live, { peek: true }), 0))).toEqual([10, 10, 40, 8]);
  });
});

/** Live-like lists and small ones (so refusals happen), each with overrides by 0.5, 2 and 3. */
const defaults: readonly (readonly Policy[])[] = [
  [
    window(200, '1s', { name: 'live: 200 per s' }),
    rate(100, 200, { name: 'live: 100 per s' }),
    window(3500, '60s', { name: 'live: 3500 per min' }),
    concurrency(20, { name: 'live: 20 at once', leaseTtl: '60s', retryAfter: 1_000 }),
  ],
  [
    window(4, '1s', { name: 'small: 4 per s' }),
    rate(3, 3, { name: 'small: 3 per s' }),
    window(9, '10s', { name: 'small: 9 per 10 s' }),
    concurrency(2, { name: 'small: 2 at once', leaseTtl: '3s', retryAfter: 700 }),
  ],
];
const multipliers = [0.5, 2, 3];

type Step =
  | { kind: 'check' | 'peek'; list: number; times: number }
  | { kind: 'release'; pick: number }
  | { kind: 'advance'; ms: number };

const steps: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constantFrom('check' as const, 'check' as const, 'peek' as const),
      // 0 the default list; 1 to 3 its overrides.
      list: fc.integer({ min: 0, max: multipliers.length }),
      times: fc.oneof(
        { weight: 6, arbitrary: fc.constant(1) },
        { weight: 2, arbitrary: fc.integer({ min: 2, max: 8 }) },
        { weight: 1, arbitrary: fc.constantFrom(25, 210, 450) },
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(
        fc.constantFrom(0, 1, 5, 10, 333, 999, 1_000, 3_000, 10_000, 60_000),
        fc.integer({ min: 1, max: 2_000 }),
      ),
    }),
  },
);

describe('MemoryStore with overridden limits, against an oracle written from the contract', () => {
  it.each(defaults.map((list, i) => [i === 0 ? 'Live-like' : 'small', list] as const))(
    'decides as the oracle (sliding logs of every admission, GCRA with the backlog carried over, leases counted): %s list and its overrides by 0.5, 2 and 3, with peeks and releases',
    (_, base) => {
      const lists = [base, ...multipliers.map((m) => override(base, m))];
      fc.assert(
        fc.property(fc.array(steps, { minLength: 1, maxLength: 150 }), (sequence) => {
          // Arrange
          const store = new MemoryStore();
          const oracle = new OverrideOracle(base.length);
          const held: { lease: LeaseToken; id: number }[] = [];
          let t = 1_000_000;
          // Act and assert, step by step
          for (const step of sequence) {
            if (step.kind === 'advance') t += step.ms;
            else if (step.kind === 'release') {
              if (held.length === 0) continue;
              const [given] = held.splice(step.pick % held.length, 1);
              store.release(given!.lease);
              oracle.release(given!.id);
            } else {
              const list = lists[step.list]!;
              const peek = step.kind === 'peek';
              for (let i = 0; i < step.times; i++) {
                const outcome = store.apply(plan(list, base, { peek }), t);
                const expected = oracle.decide(list, t, peek);
                expect(outcome.allowed).toBe(expected.allowed);
                expect(outcome.values).toEqual(expected.values);
                if (!outcome.allowed) {
                  expect(outcome.reason).toBe(expected.reason);
                  expect(outcome.retryAfterSeconds).toBe(expected.retryAfterSeconds);
                  expect(outcome.policy?.name).toBe(expected.policy);
                } else if (outcome.lease !== undefined && expected.leaseId !== undefined) {
                  held.push({ lease: outcome.lease, id: expected.leaseId });
                }
              }
            }
          }
        }),
        { numRuns: 150 },
      );
    },
  );
});
