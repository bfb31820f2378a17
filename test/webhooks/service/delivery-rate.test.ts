/**
 * A subscription's `rateLimit` on a fake clock: no subscription is sent more than its rate in any
 * 1 s window, every due delivery is sent at the earliest instant the rate allows (an oracle's
 * sliding-window schedule), none is dropped, a delivery that waits makes no attempt, and the
 * subscriptions without a rate are sent at their due time whatever the others wait for.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createWebhookService,
  type DeliveryAttempt,
  FakeClock,
  MemoryDeliveryQueue,
  MemorySubscriptionRepository,
  type WebhookService,
} from '../../../src/index.js';
import { FakeTimers } from '../../support/fake-timers.js';
import { byAccountHeader, call, START } from '../../support/webhook-service.js';

const SECOND = 1000;

/** A service whose queue sleeps on fake timers; the transport records who was sent what, when. */
function rateSetup(accountConcurrency = 64) {
  const clock = new FakeClock(START);
  const timers = new FakeTimers(clock);
  const sent: Array<{ endpoint: string; at: number }> = [];
  const attempts: DeliveryAttempt[] = [];
  const errors: unknown[] = [];
  // Resolved once `sent` holds as many as asked.
  const waiting: Array<{ count: number; done: () => void }> = [];
  const sentAtLeast = (count: number) =>
    new Promise<void>((done) => {
      if (sent.length >= count) done();
      else waiting.push({ count, done });
    });
  const service = createWebhookService({
    repository: new MemorySubscriptionRepository(),
    identify: byAccountHeader,
    clock,
    pollIntervalMs: 0,
    redeliveryIntervalMs: 0,
    attemptRetentionIntervalMs: 0,
    onError: (error) => errors.push(error),
    queue: (deliverer) =>
      new MemoryDeliveryQueue({
        deliverer,
        clock,
        sleep: timers.sleep,
        concurrency: 64,
        accountConcurrency,
      }),
    delivery: {
      transport: async (request) => {
        sent.push({ endpoint: request.url, at: clock.now() });
        for (const wait of waiting) if (sent.length >= wait.count) wait.done();
        return { status: 200, headers: {} };
      },
      onAttempt: (attempt) => {
        attempts.push(attempt);
      },
    },
  });
  return { clock, timers, sent, sentAtLeast, attempts, errors, service };
}

/** Subscribe endpoint `i` to the events of property `P{i}`, with a rate or none. */
async function subscribe(service: WebhookService, i: number, rateLimit: number | undefined) {
  const created = await call(service, 'POST', '/v1/subscriptions', {
    body: {
      endpointUrl: endpointOf(i),
      events: ['reservation/*'],
      propertyIds: [`P${i}`],
      ...(rateLimit === undefined ? {} : { rateLimit }),
    },
  });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

const endpointOf = (i: number) => `https://hooks.example.com/s${i}`;

const publishTo = (service: WebhookService, i: number) =>
  service.publish({ accountCode: 'ACME', kind: 'reservation/created', propertyId: `P${i}` });

/**
 * The oracle, from the sentence "no subscription is sent more than rateLimit in any 1 s window,
 * and every due delivery is sent at the earliest instant the rate allows": in due order, the k-th
 * send is at its due time, or 1 s after the (k - rate)-th send if that is later.
 */
function oracleSchedule(due: readonly number[], rate: number | undefined): number[] {
  const sorted = [...due].sort((a, b) => a - b);
  if (rate === undefined) return sorted;
  const sends: number[] = [];
  for (const [k, at] of sorted.entries()) {
    sends.push(k < rate ? at : Math.max(at, (sends[k - rate] as number) + SECOND));
  }
  return sends;
}

/** The most sends of a sorted list in any half-open window [t, t + 1 s). */
function mostInAWindow(sends: readonly number[]): number {
  let most = 0;
  for (const [i, from] of sends.entries()) {
    let n = 0;
    for (let j = i; j < sends.length && (sends[j] as number) < from + SECOND; j++) n++;
    most = Math.max(most, n);
  }
  return most;
}

/** Publish each delivery at its due time, then run the fake timers until `count` were sent. */
async function deliverAll(
  setup: ReturnType<typeof rateSetup>,
  deliveries: ReadonlyArray<{ readonly sub: number; readonly due: number }>,
): Promise<void> {
  const { timers, sent, service } = setup;
  const count = sent.length + deliveries.length;
  for (const { sub, due } of [...deliveries].sort((a, b) => a.due - b.due)) {
    await timers.run(timers.at(START + due));
    await publishTo(service, sub);
  }
  // Each timer wakes a waiting delivery; run fails if one waits with no timer to wake it.
  await timers.run(setup.sentAtLeast(count));
}

describe('rateLimit of a subscription', () => {
  it('never sends a subscription more than its rate in any 1 s window, sends each delivery at the earliest instant the rate allows (the oracle), drops none, and attempts only once', async () => {
    const scenario = fc.record({
      rates: fc.array(fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }), {
        minLength: 1,
        maxLength: 4,
      }),
      deliveries: fc.array(fc.record({ sub: fc.nat(3), due: fc.integer({ min: 0, max: 3000 }) }), {
        minLength: 1,
        maxLength: 30,
      }),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async ({ rates, deliveries }) => {
        // Arrange
        const setup = rateSetup();
        const wanted = deliveries.map((d) => ({ ...d, sub: d.sub % rates.length }));
        try {
          for (const [i, rate] of rates.entries()) await subscribe(setup.service, i, rate);
          // Act
          await deliverAll(setup, wanted);
          // Assert
          expect(setup.sent).toHaveLength(wanted.length);
          for (const [i, rate] of rates.entries()) {
            const due = wanted.filter((d) => d.sub === i).map((d) => START + d.due);
            const sends = setup.sent
              .filter((s) => s.endpoint === endpointOf(i))
              .map((s) => s.at)
              .sort((a, b) => a - b);
            expect(sends).toEqual(oracleSchedule(due, rate));
            if (rate !== undefined) expect(mostInAWindow(sends)).toBeLessThanOrEqual(rate);
          }
          // One attempt per delivery, delivered at its first: waiting made none.
          expect(setup.attempts).toHaveLength(wanted.length);
          for (const attempt of setup.attempts) {
            expect(attempt).toMatchObject({ attempt: 1, outcome: 'delivered' });
          }
          expect(setup.errors).toEqual([]);
        } finally {
          await setup.service.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('holds no worker of the account while a delivery waits: a subscription without a rate is sent at its due time', async () => {
    // Arrange: one worker for the account; 10 deliveries wait for a rate of 1 a second.
    const setup = rateSetup(1);
    try {
      await subscribe(setup.service, 0, 1);
      await subscribe(setup.service, 1, undefined);
      const deliveries = [
        ...Array.from({ length: 10 }, () => ({ sub: 0, due: 0 })),
        ...Array.from({ length: 5 }, (_, k) => ({ sub: 1, due: 100 + k * 500 })),
      ];
      // Act
      await deliverAll(setup, deliveries);
      // Assert
      const at = (i: number) =>
        setup.sent.filter((s) => s.endpoint === endpointOf(i)).map((s) => s.at - START);
      expect(at(1)).toEqual([100, 600, 1100, 1600, 2100]);
      expect(at(0)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000]);
    } finally {
      await setup.service.close();
    }
  });

  it('applies a rate set by PATCH from the next deliveries, and none once PATCH sets it to null', async () => {
    // Arrange
    const setup = rateSetup();
    try {
      const id = await subscribe(setup.service, 0, undefined);
      const patch = async (rateLimit: number | null) => {
        const answer = await call(setup.service, 'PATCH', `/v1/subscriptions/${id}`, {
          body: { rateLimit },
        });
        expect(answer.status).toBe(200);
        expect(answer.body.rateLimit).toBe(rateLimit ?? undefined);
      };
      const burst = (due: number) => Array.from({ length: 4 }, () => ({ sub: 0, due }));
      const times = () => setup.sent.map((s) => s.at - START);
      // Act and assert: no rate, a rate of 2, no rate again.
      await deliverAll(setup, burst(0));
      expect(times()).toEqual([0, 0, 0, 0]);
      await patch(2);
      await deliverAll(setup, burst(10_000));
      expect(times().slice(4)).toEqual([10_000, 10_000, 11_000, 11_000]);
      await patch(null);
      await deliverAll(setup, burst(20_000));
      expect(times().slice(8)).toEqual([20_000, 20_000, 20_000, 20_000]);
    } finally {
      await setup.service.close();
    }
  });
});
