/**
 * A subscription's `rateLimit` held across two instances: real processes
 * (test/support/webhook-instance.ts) on one PostgreSQL, each delivering from its own memory queue,
 * counting the rate on one Redis (`delivery.rateLimitStore`). 200 messages published half on each
 * to a subscription with a rate of 20 all arrive, and no 1 s window holds more than 20 of their
 * attempts (a bound on counts, read from the delivery log both instances write).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.js';
import { type InstanceProcess, InstanceProcesses } from '../../support/instance-process.js';
import { type SharedPostgres, sharedPostgres } from '../../support/shared-postgres.js';
import { type SharedRedis, sharedRedis } from '../../support/shared-redis.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const RATE = 20;
const MESSAGES = 200;
// Each instance counts a delivery at the time its attempt is reported at (the attempt's `at` in
// the log), read before the decision goes to Redis; two instances' decisions can reach Redis in
// another order than their times, by as much as a busy machine delays one of them. The windows
// read in the log are shorter than a second by that much (SKEW_MS): two instances each sending at
// the rate, with no store shared, would put 30 deliveries in such a window, not 20. And the whole
// run cannot be quicker than the rate allows.
const SKEW_MS = 250;

const processes = new InstanceProcesses();
let postgres: SharedPostgres | undefined;
let redis: SharedRedis | undefined;
let receiver: WebhookReceiver | undefined;
/** When each request arrived, by the test process's clock. */
const arrivals: number[] = [];
let a: InstanceProcess;
let b: InstanceProcess;

beforeAll(async () => {
  [postgres, redis, receiver] = await Promise.all([
    sharedPostgres(),
    sharedRedis(),
    startReceiver(() => {
      arrivals.push(Date.now());
      return { status: 204 };
    }),
  ]);
  const env = {
    DATABASE_URL: postgres.url,
    SCHEMA: 'delivery_rate',
    SECRET_KEY: randomBytes(32).toString('base64'),
    RATE_REDIS_URL: `redis://127.0.0.1:${redis.port}/${redis.db}`,
  };
  [a, b] = await Promise.all([processes.start('A', env), processes.start('B', env)]);
});

afterAll(async () => {
  try {
    await processes.stopAll();
  } finally {
    try {
      await receiver?.close();
      await redis?.release();
    } finally {
      await postgres?.release();
    }
  }
});

/** The most arrivals in any half-open window [t, t + ms). */
function mostIn(times: readonly number[], ms: number): number {
  const sorted = [...times].sort((x, y) => x - y);
  let most = 0;
  let from = 0;
  for (const [to, at] of sorted.entries()) {
    while ((sorted[from] as number) <= at - ms) from++;
    most = Math.max(most, to - from + 1);
  }
  return most;
}

describe('rateLimit across two instances on one Redis', () => {
  it('delivers all 200 messages published on two instances, never more than the rate in a window', async () => {
    // Arrange: a subscription with a rate of 20 a second, known to both instances.
    const created = await a.call('POST', '/v1/subscriptions', {
      account: 'ACME',
      body: {
        endpointUrl: `${(receiver as WebhookReceiver).url}/in`,
        events: ['reservation/*'],
        rateLimit: RATE,
      },
    });
    expect(created.status).toBe(201);
    const event = { accountCode: 'ACME', kind: 'reservation/created' };
    // B has applied the create once a publish there delivers to it (that message counts too).
    let published = 0;
    await eventually('B delivering to the subscription', async () => {
      const result = await b.publish(event);
      published += result.deliveries.length;
      return result.deliveries.length === 1;
    });
    // Act: the rest, half on each instance, at once.
    const rest = MESSAGES - published;
    const results = await Promise.all(
      Array.from({ length: rest }, (_, i) => (i % 2 === 0 ? a : b).publish(event)),
    );
    expect(results.every((result) => result.deliveries.length === 1)).toBe(true);
    await eventually(`${MESSAGES} deliveries`, () => arrivals.length >= MESSAGES, 20);
    // Assert: all arrived, from both instances, never more than the rate in a window.
    expect(arrivals).toHaveLength(MESSAGES);
    const senders = new Set(
      (receiver as WebhookReceiver).received.map((d) =>
        String(d.headers['x-sender']).replace(/\/.*/, ''),
      ),
    );
    expect([...senders].sort()).toEqual(['A', 'B']);
    const log = await eventually(`${MESSAGES} attempts in the log`, async () => {
      const answer = await a.call('GET', '/v1/audit-logs?limit=500', { account: 'ACME' });
      // biome-ignore lint/suspicious/noExplicitAny: the audit log's parsed JSON items
      const items: any[] = answer.body.items;
      return items.length >= MESSAGES ? items : undefined;
    });
    expect(log).toHaveLength(MESSAGES);
    expect(log.every((attempt) => attempt.outcome === 'delivered')).toBe(true);
    const started = log.map((attempt) => Number(attempt.at));
    expect(started.every((at) => Number.isSafeInteger(at))).toBe(true);
    expect(mostIn(started, 1000 - SKEW_MS)).toBeLessThanOrEqual(RATE);
    // 200 deliveries at 20 a second: the last at least 9 s after the first.
    expect(Math.max(...started) - Math.min(...started)).toBeGreaterThanOrEqual(
      ((MESSAGES - RATE) / RATE) * 1000 - SKEW_MS,
    );
    expect(await a.errors()).toEqual([]);
    expect(await b.errors()).toEqual([]);
  });
});
