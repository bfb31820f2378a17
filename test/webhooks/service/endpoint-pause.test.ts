/**
 * The webhook service pauses a subscription whose receiver asks to slow down: 429, 502, 503 and
 * 504 hold back its other deliveries until the next attempt of the one that was answered, which a
 * Retry-After sets within `delivery.maxEndpointPauseMs` (1 h by default) and the schedule sets
 * without one. On a memory repository and a fake clock.
 */
import { describe, expect, it } from 'vitest';
import type { DeliveryJob } from '../../../src/index.js';
import {
  call,
  closingSetup,
  heldQueue,
  type ServiceSetup,
  START,
  subscriptionBody,
} from '../../support/webhook-service.js';

const closing = closingSetup();
const HOUR = 3_600_000;
const TEN_YEARS_S = String(10 * 365 * 24 * 3_600);

async function subscribe(made: ServiceSetup): Promise<string> {
  const created = await call(made.service, 'POST', '/v1/subscriptions', {
    body: subscriptionBody(),
  });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

/** A service whose receiver answers `answer` to the first of two deliveries to one subscription. */
async function twoDeliveries(
  answer: ServiceSetup['answer'],
  delivery: { maxEndpointPauseMs?: number } = {},
) {
  const { held, make } = heldQueue();
  const made = closing({ queue: make, delivery: { ...delivery, random: () => 0 } });
  await subscribe(made);
  await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
  await made.service.publish({ accountCode: 'ACME', kind: 'reservation/created' });
  const [first, second] = held.jobs as [DeliveryJob, DeliveryJob];
  made.answer = answer;
  const step = await held.deliverer!.attempt(first);
  made.answer = { status: 200, headers: {} };
  const sent = made.sent.length;
  const other = await held.deliverer!.attempt(second);
  expect(made.sent.length).toBe(sent); // held back: no request
  return { step, other, second, made, deliverer: held.deliverer! };
}

describe('a subscription whose receiver asks to slow down', () => {
  it('502 and 504 without Retry-After hold back its other deliveries until the schedule’s next attempt, as 429 and 503 do', async () => {
    for (const status of [429, 502, 503, 504]) {
      const { step, other, second } = await twoDeliveries({ status, headers: {} });
      expect(step).toMatchObject({ done: false, at: START + 5_000 });
      expect(other).toEqual({ done: false, job: second, at: START + 5_000, deferred: true });
    }
  });

  it('a ten-year Retry-After pauses the subscription for 1 h; then its deliveries go again', async () => {
    const { step, other, second, made, deliverer } = await twoDeliveries({
      status: 504,
      headers: { 'retry-after': TEN_YEARS_S },
    });
    expect(step).toMatchObject({ done: false, at: START + HOUR });
    expect(other).toEqual({ done: false, job: second, at: START + HOUR, deferred: true });
    made.clock.set(START + HOUR);
    expect((await deliverer.attempt(second)).report?.outcome).toBe('delivered');
  });

  it('takes delivery.maxEndpointPauseMs as the bound', async () => {
    const { step, other } = await twoDeliveries(
      { status: 503, headers: { 'retry-after': TEN_YEARS_S } },
      { maxEndpointPauseMs: 10 * 60_000 },
    );
    expect(step).toMatchObject({ done: false, at: START + 10 * 60_000 });
    expect(other).toMatchObject({ deferred: true, at: START + 10 * 60_000 });
  });
});
