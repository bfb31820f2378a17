/**
 * The RateLimit fields as the middleware writes them: the text kept per policy and per list of
 * policies is the text written afresh, whatever the policies, their order and their states.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { writeCompactFields, writeFields } from '../../src/http/rate-limit-fields.js';
import {
  concurrency,
  createLimiter,
  type Policy,
  type PolicyStatus,
  presets,
  rate,
  window,
} from '../../src/index.js';
import { compactStatuses } from '../../src/limits/decision.js';
import { request } from '../support/limits.js';

// The oracle, from draft-ietf-httpapi-ratelimit-headers-10 and RFC 9651 as docs/http.md words
// them: a name is an sf-string of printable ASCII with `"` and `\` escaped and anything else `?`;
// every number an sf-integer of at most 15 digits, anything but a finite number counting as 0.
const MAX_INTEGER = 999_999_999_999_999;
const integer = (value: number, min: number): number => {
  const n = Number.isFinite(value) ? Math.floor(value) : 0;
  return Math.min(Math.max(n, min), MAX_INTEGER);
};
const sfString = (name: string): string =>
  `"${Array.from(name, (c) => {
    if (c === '"' || c === '\\') return `\\${c}`;
    const code = c.codePointAt(0) as number;
    return code >= 0x20 && code <= 0x7e ? c : '?';
  }).join('')}"`;
const quotaOf = (policy: Policy): string => {
  switch (policy.kind) {
    case 'window':
      return `q=${integer(policy.limit, 1)};w=${integer(Math.ceil(policy.windowMs / 1000), 1)}`;
    case 'rate':
      return `q=${integer(policy.burst, 1)};w=${integer(Math.ceil(policy.burst / policy.perSecond), 1)}`;
    case 'concurrency':
      return `q=${integer(policy.max, 1)};qu="concurrent-requests"`;
  }
};
const secondsOf = (ms: number): number => (Number.isFinite(ms) ? Math.ceil(ms / 1000) : 0);
const left = (s: PolicyStatus): number => integer(s.remaining, 0);
const reset = (s: PolicyStatus): number => integer(secondsOf(s.resetAfterMs), 0);
// `'nearest'`, as docs/http.md words it: of the policies that count requests over time, the one
// with the fewest left, then the latest reset, then the first in order; the throttle instead when
// it has no slot left while each of those has some left, or when there are none of those (then
// the throttle with the fewest slots left, the first among equals).
const nearestOf = (statuses: readonly PolicyStatus[]): PolicyStatus[] => {
  const ranked = statuses
    .map((status, order) => ({ status, order }))
    .sort(
      (a, b) =>
        left(a.status) - left(b.status) || reset(b.status) - reset(a.status) || a.order - b.order,
    );
  const timed = ranked.filter((r) => r.status.policy.kind !== 'concurrency');
  const throttles = ranked
    .filter((r) => r.status.policy.kind === 'concurrency')
    .sort((a, b) => left(a.status) - left(b.status) || a.order - b.order);
  if (statuses.length === 0) return [];
  if (timed.length === 0) return [throttles[0]!.status];
  const full = throttles.find((r) => left(r.status) === 0);
  if (full !== undefined && left(timed[0]!.status) > 0) return [full.status];
  return [timed[0]!.status];
};
const expected = (statuses: readonly PolicyStatus[], which: 'nearest' | 'all') => {
  const named = which === 'all' ? statuses : nearestOf(statuses);
  return {
    'ratelimit-policy': named
      .map((s) => `${sfString(s.policy.name)};${quotaOf(s.policy)}`)
      .join(', '),
    ratelimit: named.map((s) => `${sfString(s.policy.name)};r=${left(s)};t=${reset(s)}`).join(', '),
  };
};
const WHICH = ['all', 'nearest'] as const;

// A policy's name is never only spaces (the policy factories refuse one).
const policyName = fc.oneof(
  fc.string({ minLength: 1, maxLength: 30 }).filter((name) => name.trim() !== ''),
  fc.constantFrom('global: 3500 per 60 s', 'say "hi" \\ é', 'tab\there', '日本'),
);
const policyOf: fc.Arbitrary<Policy> = fc.oneof(
  fc
    .tuple(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 7_200_000 }), policyName)
    .map(([limit, ms, name]) => window(limit, ms, { name })),
  fc
    .tuple(fc.double({ min: 0.01, max: 10_000, noNaN: true }), fc.integer({ min: 1, max: 500 }))
    .map(([perSecond, burst]) => rate(perSecond, burst)),
  fc
    .tuple(fc.integer({ min: 1, max: 1_000 }), policyName)
    .map(([max, name]) => concurrency(max, { name })),
);
const count = fc.oneof(
  fc.integer({ min: 0, max: 4_000 }),
  fc.integer({ min: -10, max: Number.MAX_SAFE_INTEGER }),
  fc.double({ min: -1e6, max: 1e22 }),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0),
);

describe.each(WHICH)('RateLimit fields written by the middleware, naming %s', (which) => {
  it('kept text equals text made afresh: any frozen policies, in any lists and order, in any states, written again and again', () => {
    fc.assert(
      fc.property(
        // A pool of policies, frozen as a limiter's are, that the responses below share.
        fc.uniqueArray(policyOf, { minLength: 1, maxLength: 6, selector: (p) => p.name }),
        fc.array(
          fc.tuple(
            fc.array(fc.nat(), { minLength: 0, maxLength: 6 }),
            fc.array(fc.tuple(count, count), { minLength: 6, maxLength: 6 }),
          ),
          { minLength: 1, maxLength: 12 },
        ),
        (pool, responses) => {
          const frozen = pool.map((policy) => Object.freeze({ ...policy }));
          for (const [picks, states] of responses) {
            const policies = [...new Set(picks.map((i) => frozen[i % frozen.length] as Policy))];
            const statuses = policies.map((policy, k) => {
              const [remaining, resetAfterMs] = states[k] as [number, number];
              return { policy, remaining, resetAfterMs };
            });
            expect(writeFields(statuses, undefined, which)).toEqual(expected(statuses, which));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('writes a policy that is not frozen from what it holds at each response, never from what it held', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(policyName, fc.integer({ min: 1, max: 10_000 })), {
          minLength: 2,
          maxLength: 8,
        }),
        (changes) => {
          const policy = { kind: 'window', name: 'first', limit: 1, windowMs: 1_000 } as {
            kind: 'window';
            name: string;
            limit: number;
            windowMs: number;
          };
          for (const [name, limit] of changes) {
            policy.name = name;
            policy.limit = limit;
            const statuses = [{ policy, remaining: limit - 1, resetAfterMs: 1_000 }];
            expect(writeFields(statuses, undefined, which)).toEqual(expected(statuses, which));
          }
        },
      ),
    );
  });

  it("writes the Live preset's fields from a limiter's decisions, its policies the same objects each time", () => {
    const limiter = createLimiter({ preset: presets.live });
    for (let i = 0; i < 3; i++) {
      const decision = limiter.check({ ...request, clientId: `c${i}` });
      expect(decision.allowed).toBe(true);
      expect(decision.statuses.every((s) => Object.isFrozen(s.policy))).toBe(true);
      expect(writeFields(decision.statuses, undefined, which)).toEqual(
        expected(decision.statuses, which),
      );
    }
    const [first, second] = [0, 1].map(() => limiter.check({ ...request, clientId: 'same' }));
    expect(writeFields(second!.statuses, undefined, which)['ratelimit-policy']).toBe(
      writeFields(first!.statuses, undefined, which)['ratelimit-policy'],
    );
  });

  it("writes a store's compact statuses as their statuses: any policies, frozen or not, in lists frozen or not, again and again", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(policyOf, { minLength: 1, maxLength: 6, selector: (p) => p.name }),
        fc.boolean(),
        fc.array(
          fc.tuple(
            fc.array(fc.nat(), { minLength: 0, maxLength: 6 }),
            fc.array(fc.tuple(count, count), { minLength: 6, maxLength: 6 }),
            fc.boolean(),
          ),
          { minLength: 1, maxLength: 12 },
        ),
        (pool, freezePolicies, responses) => {
          const policiesOf = pool.map((policy) =>
            freezePolicies ? Object.freeze({ ...policy }) : { ...policy },
          );
          // One list object per distinct pick, reused as a limiter reuses its lists.
          const lists = new Map<string, Policy[]>();
          for (const [picks, states, freezeList] of responses) {
            const chosen = [...new Set(picks.map((i) => policiesOf[i % policiesOf.length]!))];
            const key = `${chosen.map((p) => p.name).join('\n')}|${freezeList}`;
            let list = lists.get(key);
            if (list === undefined) {
              list = freezeList ? (Object.freeze(chosen) as Policy[]) : chosen;
              lists.set(key, list);
            }
            const values = list.flatMap((_, k) => states[k] as [number, number]);
            const statuses = list.map((policy, k) => ({
              policy,
              remaining: values[2 * k] as number,
              resetAfterMs: values[2 * k + 1] as number,
            }));
            expect(writeCompactFields(list, values, which)).toEqual(expected(statuses, which));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("reads a limiter's admissions compactly, to the same fields as their statuses; a decision made elsewhere has none", () => {
    const limiter = createLimiter({ preset: presets.live });
    for (let i = 0; i < 3; i++) {
      const decision = limiter.check({ ...request, clientId: `c${i % 2}` });
      const compact = compactStatuses(decision);
      expect(compact).toBeDefined();
      expect(writeCompactFields(compact!.policies, compact!.values, which)).toEqual(
        expected(decision.statuses, which),
      );
    }
    expect(compactStatuses({ allowed: true, statuses: [] })).toBeUndefined();
  });
});
