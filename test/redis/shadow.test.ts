/**
 * Shadow mode on the Redis store: the suite the memory store passes (test/limits/shadow.test.ts),
 * and the same decisions as the memory store for shadow limiters of the presets.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  FakeClock,
  type LimitRequest,
  MemoryStore,
  presets,
} from '../../src/index.js';
import { comparable } from '../support/limits.js';
import { equivalence, pairs, routes, variants } from '../support/redis-equivalence.js';
import { shadowSuite } from '../support/shadow-suite.js';

const { store: freshStore } = equivalence();

shadowSuite('the Redis store', () => freshStore('ioredis'), 40);

const presetPolicies = Object.values(presets.byAccountType).flatMap((p) => [
  ...p.policies,
  ...(p.rules ?? []).flatMap((r) => r.policies ?? []),
]);

/** Shadow settings of the presets by account type: all, the one-second windows, the rest. */
const shadowOptions = [
  true,
  ['global: 200 per 1 s', 'global: 5 per 1 s'],
  presetPolicies
    .filter((p) => p.kind === 'concurrency' || !p.name.startsWith('global'))
    .map((p) => p.name),
] as const;

describe.each(variants)('RedisStore with %s, shadow mode against the memory store', (kind) => {
  it('decides as the memory store for shadow limiters of the presets: checks and peeks of any cost, statuses or not, leases given back', async () => {
    const seen = { escaped: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...shadowOptions),
        fc.array(
          fc.record({
            peek: fc.boolean(),
            gap: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2_000 }), fc.constant(61_000)),
            who: fc.integer({ min: 0, max: pairs.length - 1 }),
            type: fc.constantFrom('live' as const, 'development' as const),
            route: fc.integer({ min: 0, max: routes.length - 1 }),
            cost: fc.oneof(
              { weight: 3, arbitrary: fc.constant(1) },
              fc.integer({ min: 2, max: 4 }),
            ),
            times: fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, fc.constantFrom(5, 25)),
            statuses: fc.boolean(),
            release: fc.boolean(),
          }),
          { minLength: 1, maxLength: 30 },
        ),
        async (option, steps) => {
          const shadow = option === true ? true : [...new Set(option)];
          const clock = new FakeClock(1_000_000);
          const settings = { preset: presets.byAccountType, clock, shadow } as const;
          const memory = createLimiter({ ...settings, store: new MemoryStore() });
          const redis = createLimiter({ ...settings, store: await freshStore(kind) });
          for (const step of steps) {
            clock.advance(step.gap);
            const [clientId, accountCode] = pairs[step.who]!;
            const [method, path] = routes[step.route]!;
            const request: LimitRequest<'live' | 'development'> = {
              clientId,
              accountCode,
              accountType: step.type,
              method,
              path,
            };
            for (let i = 0; i < step.times; i++) {
              const expected = step.peek
                ? memory.peek(request, { cost: step.cost })
                : memory.check(request, { cost: step.cost, statuses: step.statuses });
              const actual = step.peek
                ? await redis.peek(request, { cost: step.cost })
                : await redis.check(request, { cost: step.cost, statuses: step.statuses });
              expect(comparable(actual)).toEqual(comparable(expected));
              if (!expected.allowed) seen.refused++;
              else if (expected.shadow !== undefined) seen.escaped++;
              if (step.release && expected.allowed && actual.allowed) {
                expected.release();
                await actual.release();
              }
            }
          }
        },
      ),
      {
        numRuns: 40,
        // Besides the drawn runs, one that surely escapes and refuses, so that the checks below
        // never depend on what the draws held: the throttles shadowed, the windows not; 25
        // requests of a Live client that keep their leases pass its throttle of 20 (escaped),
        // and 25 of a Development client pass its 5 a second (refused).
        examples: [
          [
            shadowOptions[2],
            (['live', 'development'] as const).map((type, who) => ({
              peek: false,
              gap: 0,
              who,
              type,
              route: 0,
              cost: 1,
              times: 25 as const,
              statuses: true,
              release: false,
            })),
          ],
        ],
      },
    );
    expect(seen.escaped).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(0);
  }, 240_000);
});
