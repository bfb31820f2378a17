/**
 * Webhook delivery's diagnostics channels, through real deliveries to a local receiver on a fake
 * clock: every attempt, and the end of each delivery.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeliverer,
  createWebhookMessage,
  type DeliveryAttemptMessage,
  type DeliveryEndMessage,
  type DeliveryOptions,
  deliver,
  deliveryJob,
  FakeClock,
  generateWebhookSecret,
  httpTransport,
  webhookChannels,
} from '../../src/index.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const unsubscribers: Array<() => void> = [];
afterEach(() => {
  for (const stop of unsubscribers.splice(0)) stop();
});

/** Every message of a channel from now until the test ends. */
function listen<T>(name: string): T[] {
  const messages: T[] = [];
  const listener = (message: unknown) => void messages.push(message as T);
  subscribe(name, listener);
  unsubscribers.push(() => unsubscribe(name, listener));
  return messages;
}

/** Answer with these statuses in turn, then 204. */
function answers(...statuses: number[]) {
  const queue = [...statuses];
  receiver.respond(() => ({ status: queue.shift() ?? 204 }));
}

const secret = generateWebhookSecret();

/** Deliver one message to the receiver to the end, on a fake clock. */
async function deliverOne(options: Partial<DeliveryOptions> = {}) {
  const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000);
  const deliverer = createDeliverer({
    secrets: () => [secret],
    transport: httpTransport({ allow: ['127.0.0.1'] }),
    clock,
    random: () => 0,
    ...options,
  });
  const message = createWebhookMessage(
    { accountCode: 'ACME', kind: 'folio/created', data: { folioId: 'F1' } },
    { clock },
  );
  const job = deliveryJob(message, { id: 'sub-1', endpointUrl: `${receiver.url}/in` });
  const sleep = async (ms: number) => void clock.advance(ms);
  return { deliverer, job, report: await deliver(deliverer, job, sleep, clock) };
}

describe('the webhook channels', () => {
  it('publish every attempt, and the delivery once, when it is delivered', async () => {
    const attempts = listen<DeliveryAttemptMessage>(webhookChannels.attempt);
    const deliveries = listen<DeliveryEndMessage>(webhookChannels.delivery);
    answers(500, 503);

    const { report } = await deliverOne();

    expect(attempts.map((m) => [m.attempt.attempt, m.attempt.outcome, m.attempt.status])).toEqual([
      [1, 'retry', 500],
      [2, 'retry', 503],
      [3, 'delivered', 204],
    ]);
    expect(deliveries).toEqual([{ outcome: 'delivered', reason: undefined, attempt: report }]);
  });

  it('publish a delivery disabled by a 410, and one failed for want of a secret, with the reason', async () => {
    const deliveries = listen<DeliveryEndMessage>(webhookChannels.delivery);
    answers(410);

    await deliverOne();
    await deliverOne({ secrets: () => [] });

    expect(deliveries.map((m) => [m.outcome, m.reason])).toEqual([
      ['disabled', 'gone'],
      ['failed', 'no_secret'],
    ]);
  });

  it('publish a job the queue gave up as a lost delivery', async () => {
    const attempts = listen<DeliveryAttemptMessage>(webhookChannels.attempt);
    const deliveries = listen<DeliveryEndMessage>(webhookChannels.delivery);
    answers();
    const { deliverer, job } = await deliverOne();

    const report = await deliverer.lost?.(
      { ...job, attempts: 2 },
      {
        code: 'stalled',
        message: 'the worker died',
      },
    );

    expect(attempts.at(-1)?.attempt).toBe(report);
    expect(deliveries.map((m) => m.outcome)).toEqual(['delivered', 'lost']);
  });

  it('publish nothing once unsubscribed', async () => {
    const attempts: unknown[] = [];
    const listener = (message: unknown) => void attempts.push(message);
    subscribe(webhookChannels.attempt, listener);
    unsubscribe(webhookChannels.attempt, listener);
    answers();

    await deliverOne();

    expect(attempts).toEqual([]);
  });
});
