/**
 * A property of the Redis queue with several deliveries a job, on a real redis-server: whatever
 * the turns the deliveries are enqueued in (the same delivery again, in one turn or another), the
 * jobs' size, the workers and the accounts' shares, each delivery is attempted in order, attempt
 * 1 to its last, each attempt once, never two of one delivery at a time, never more requests at
 * once than the workers (nor than an account's share of them); and once every delivery
 * is done, nothing is left in Redis: no job pending, no marker. Crashes are in the kill tests of
 * redis-delivery-queue.test.ts, which run in this mode too.
 */
import { randomUUID } from 'node:crypto';
import * as bullmq from 'bullmq';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AttemptOptions,
  type DeliveryJob,
  type DeliveryStep,
  FakeClock,
} from '../../src/index.js';
import { createRedisDeliveryQueue } from '../../src/queue-redis/index.js';
import { eventually } from '../support/eventually.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';

let redis: SharedRedis;
let keys: Redis;
beforeAll(async () => {
  redis = await sharedRedis();
  keys = new Redis({ host: '127.0.0.1', port: redis.port, db: redis.db });
});
afterAll(async () => {
  keys.disconnect();
  await redis.release();
});

const ACCOUNTS = ['acme', 'globex', ''] as const;

/** A delivery of the run: how many of its attempts fail before one is delivered, and its account. */
const deliveryArb = fc.record({
  failures: fc.integer({ min: 0, max: 2 }),
  account: fc.constantFrom(...ACCOUNTS),
});

const runArb = fc
  .record({
    deliveries: fc.array(deliveryArb, { minLength: 1, maxLength: 12 }),
    perJob: fc.integer({ min: 2, max: 8 }),
    concurrency: fc.integer({ min: 1, max: 8 }),
    share: fc.integer({ min: 1, max: 8 }),
    turns: fc.array(fc.array(fc.nat(), { minLength: 1, maxLength: 10 }), {
      minLength: 1,
      maxLength: 4,
    }),
  })
  .map((run) => ({
    ...run,
    // Each turn names deliveries of the run (some more than once, some in several turns); every
    // delivery is in the first turn or a later one.
    turns: [
      ...run.turns.map((turn) => turn.map((n) => n % run.deliveries.length)),
      run.deliveries.map((_, n) => n),
    ],
  }));

describe('createRedisDeliveryQueue with several deliveries a job: property', () => {
  it('attempts each delivery in order, each attempt once and one at a time, and leaves nothing in Redis', async () => {
    await fc.assert(
      fc.asyncProperty(runArb, async ({ deliveries, perJob, concurrency, share, turns }) => {
        const name = `prop-${randomUUID()}`;
        const clock = new FakeClock(Date.now());
        // The attempts made, by delivery: the `attempts` each was made with.
        const seen = new Map<string, number[]>();
        const inFlight = new Set<string>();
        let overlapped = false;
        // The attempts wait until every turn is enqueued: the queue holds each delivery meanwhile.
        let open: () => void = () => undefined;
        const gate = new Promise<void>((resolve) => {
          open = resolve;
        });
        // Requests in flight, in all and by account, and the most seen at once.
        const requests = new Map<string, number>();
        const most = new Map<string, number>();
        const count = (key: string, by: number) => {
          const now = (requests.get(key) ?? 0) + by;
          requests.set(key, now);
          most.set(key, Math.max(most.get(key) ?? 0, now));
        };
        const attempt = async (
          job: DeliveryJob,
          options?: AttemptOptions,
        ): Promise<DeliveryStep> => {
          if (inFlight.has(job.id)) overlapped = true;
          inFlight.add(job.id);
          count('', 1);
          count(`account ${job.accountCode ?? ''}`, 1);
          await gate;
          seen.set(job.id, [...(seen.get(job.id) ?? []), job.attempts]);
          await new Promise((resolve) => setImmediate(resolve));
          // The request ends; its record is written after, the slot no longer held.
          count('', -1);
          count(`account ${job.accountCode ?? ''}`, -1);
          options?.requestEnded?.();
          await new Promise((resolve) => setImmediate(resolve));
          inFlight.delete(job.id);
          const n = Number(job.id.slice(job.id.lastIndexOf('-') + 1));
          const attempts = job.attempts + 1;
          const report = {
            id: job.id,
            subscriptionId: job.subscriptionId,
            endpointUrl: job.endpointUrl,
            attempt: attempts,
            at: clock.now(),
          };
          if (job.attempts < deliveries[n]!.failures) {
            return {
              done: false,
              job: { ...job, attempts },
              at: clock.now(),
              report: { ...report, outcome: 'retry' },
            };
          }
          return { done: true, report: { ...report, outcome: 'delivered' } };
        };
        const queue = createRedisDeliveryQueue({
          bullmq,
          connection: { host: '127.0.0.1', port: redis.port, db: redis.db },
          name,
          clock,
          deliverer: { attempt },
          concurrency,
          accountConcurrency: Math.min(share, concurrency),
          // A delivery put back for its account's share is due again soon.
          accountDeferMs: 1,
          deliveriesPerJob: perJob,
        });
        const inspect = new bullmq.Queue(name, {
          connection: { host: '127.0.0.1', port: redis.port, db: redis.db },
        });
        const idOf = (n: number) => `${name}-${n}`;
        try {
          for (const turn of turns) {
            await Promise.all(
              turn.map((n) =>
                queue.enqueue({
                  id: idOf(n),
                  subscriptionId: 'sub',
                  endpointUrl: 'http://127.0.0.1/in',
                  body: '{}',
                  attempts: 0,
                  ...(deliveries[n]!.account === '' ? {} : { accountCode: deliveries[n]!.account }),
                }),
              ),
            );
          }
          open();
          const done = () =>
            deliveries.every((d, n) => (seen.get(idOf(n))?.length ?? 0) >= d.failures + 1);
          await eventually('every delivery done', done);
          await eventually('nothing left in Redis', async () => {
            const counts = await inspect.getJobCounts('waiting', 'active', 'delayed');
            const held = await keys.keys(`bull:${name}:held:*`);
            const pending = (counts.waiting ?? 0) + (counts.active ?? 0) + (counts.delayed ?? 0);
            return pending === 0 && held.length === 0;
          });
          // From the specification of a retry: attempt k + 1 follows attempt k, each made once.
          for (const [n, d] of deliveries.entries()) {
            expect(seen.get(idOf(n))).toEqual(Array.from({ length: d.failures + 1 }, (_, k) => k));
          }
          expect(overlapped).toBe(false);
          // At most `concurrency` requests at once, and an account's share of them (jobs of no
          // account are not held to one).
          expect(most.get('')).toBeLessThanOrEqual(concurrency);
          for (const account of ['acme', 'globex']) {
            expect(most.get(`account ${account}`) ?? 0).toBeLessThanOrEqual(
              Math.min(share, concurrency),
            );
          }
        } finally {
          open();
          await queue.close();
          await inspect.obliterate({ force: true });
          await inspect.close();
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
