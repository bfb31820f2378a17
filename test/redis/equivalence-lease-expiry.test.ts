/**
 * The Redis store and the memory store report the same lease expiries for the same sequence of
 * decisions and releases on a fake clock (docs/observability.md, "Leases"): each lease never given
 * back, once, with its expiry and the time of the decision that dropped it. Every throttle is
 * active in every plan, and the memory store's sweep is off: the sweep finds leases at its own
 * pace, which the Redis store does not follow (a throttle a request is exempt from is left out for
 * the same reason). Against a real redis-server, with both clients and with text replies.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  concurrency,
  type LeaseExpiryMessage,
  limitsChannels,
  MemoryStore,
  type Plan,
  type Policy,
  window,
} from '../../src/index.js';
import { ChannelLog } from '../support/channel-log.js';
import {
  comparableOutcome,
  equivalence,
  pairs,
  releaseStep,
  scope,
  variants,
  who,
} from '../support/redis-equivalence.js';

const { twins: twinsOf } = equivalence();
const log = new ChannelLog();
afterEach(log.stop);

const account: readonly Policy[] = [
  window(4, '5s', { name: 'w' }),
  concurrency(2, { name: 'c', leaseTtl: 1_000, retryAfter: 2_500 }),
];
const resource: readonly Policy[] = [
  window(2, '3s', { name: 'x' }),
  concurrency(1, { name: 'cx', leaseTtl: 700, retryAfter: 400 }),
];

/** A list longer than a script keeps in local variables: its variables live in a table. */
const long: readonly Policy[] = [
  ...Array.from({ length: 20 }, (_, i) => window(3 + (i % 4), 2_000 + 500 * i, { name: `l${i}` })),
  concurrency(2, { name: 'lc1', leaseTtl: 900, retryAfter: 1_200 }),
  concurrency(1, { name: 'lc2', leaseTtl: 1_500 }),
];

/** The account's limits doubled at runtime: they count in the account's state (`state`). */
const doubled: readonly Policy[] = [
  window(8, '5s', { name: 'w (x2)' }),
  concurrency(4, { name: 'c (x2)', leaseTtl: 1_000, retryAfter: 2_500 }),
];

const everyPosition = long.map((_, i) => i);

/**
 * Per pair: the account alone, with a resource scope, in shadow mode on its window, a long list,
 * and the account under doubled limits (the leases of one list found expired under the other).
 */
function plans(clientId: string, accountCode: string): readonly Plan[] {
  return [
    { scopes: [scope(clientId, accountCode, '', account, [0, 1])] },
    {
      scopes: [
        scope(clientId, accountCode, '', account, [0, 1]),
        scope(clientId, accountCode, 'PUT /r/{1}', resource, [0, 1]),
      ],
    },
    {
      shadow: true,
      scopes: [{ ...scope(clientId, accountCode, '', account, [0, 1]), shadow: [true, false] }],
    },
    { scopes: [scope(clientId, accountCode, '', long, everyPosition)] },
    { scopes: [{ ...scope(clientId, accountCode, '', doubled, [0, 1]), state: account }] },
  ];
}

const byPair = pairs.map(([c, a]) => plans(c, a));

/** The messages published so far, in an order both stores can be compared in. */
function drain(messages: LeaseExpiryMessage[]): LeaseExpiryMessage[] {
  return messages
    .splice(0)
    .sort((a, b) => a.policy.localeCompare(b.policy) || a.expiredAt - b.expiredAt);
}

const published = () => new Promise((resolve) => setImmediate(resolve));

describe.each(variants)('RedisStore with %s', (kind) => {
  it('the Redis store and the memory store report the same lease expiries, each once, found by the same decision', async () => {
    const decide = fc.record({
      kind: fc.constant('decide' as const),
      gap: fc.constantFrom(0, 1, 300, 700, 1_000, 2_600),
      who,
      route: fc.integer({ min: 0, max: 4 }),
      statuses: fc.boolean(),
      cost: fc.constantFrom(1, 1, 2),
    });
    const expiries = log.listen<LeaseExpiryMessage>(limitsChannels.leaseExpiry);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(decide, releaseStep), { maxLength: 120, size: 'max' }),
        async (steps) => {
          // Arrange
          const twins = await twinsOf(kind, {
            memory: new MemoryStore({ sweepInterval: 0 }),
          });
          expiries.splice(0);
          let t = 10_000;
          // Act and assert, step by step
          for (const step of steps) {
            // Any lease taken so far: still held, given back already, or dropped expired.
            if (step.kind === 'release') {
              await twins.give(step.pick);
              continue;
            }
            t += step.gap;
            const plan = {
              ...byPair[step.who]![step.route]!,
              statuses: step.statuses,
              cost: step.cost,
            };
            const expected = twins.memory.apply(plan, t);
            await published();
            const fromMemory = drain(expiries);
            const actual = await twins.redis.apply(plan, t);
            await published();
            const fromRedis = drain(expiries);
            expect(comparableOutcome(actual)).toEqual(comparableOutcome(expected));
            expect(fromRedis).toEqual(fromMemory);
            for (const message of fromRedis) expect(message.foundAt).toBe(t);
            if (expected.allowed && actual.allowed && expected.lease && actual.lease) {
              twins.held.push({ memory: expected.lease, redis: actual.lease });
            }
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});
