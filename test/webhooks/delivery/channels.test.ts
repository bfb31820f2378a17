/**
 * Webhook delivery's diagnostics channels, through real deliveries to a local receiver on a fake
 * clock: every attempt, and the end of each delivery.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type DeliveryAttemptMessage,
  type DeliveryEndMessage,
  webhookChannels,
} from '../../../src/index.js';
import { ChannelLog } from '../../support/channel-log.js';
import { deliverToEnd } from '../../support/delivery-run.js';
import { startReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const log = new ChannelLog();
afterEach(log.stop);

describe('the webhook channels', () => {
  it('publish every attempt, and the delivery once, when it is delivered', async () => {
    const attempts = log.listen<DeliveryAttemptMessage>(webhookChannels.attempt);
    const deliveries = log.listen<DeliveryEndMessage>(webhookChannels.delivery);

    const { report } = await deliverToEnd(receiver, [500, 503]);

    expect(attempts.map((m) => [m.attempt.attempt, m.attempt.outcome, m.attempt.status])).toEqual([
      [1, 'retry', 500],
      [2, 'retry', 503],
      [3, 'delivered', 204],
    ]);
    expect(deliveries).toEqual([{ outcome: 'delivered', reason: undefined, attempt: report }]);
  });

  it('publish a delivery disabled by a 410, and one failed for want of a secret, with the reason', async () => {
    const deliveries = log.listen<DeliveryEndMessage>(webhookChannels.delivery);

    await deliverToEnd(receiver, [410]);
    await deliverToEnd(receiver, [], { secrets: () => [] });

    expect(deliveries.map((m) => [m.outcome, m.reason])).toEqual([
      ['disabled', 'gone'],
      ['failed', 'no_secret'],
    ]);
  });

  it('publish a job the queue gave up as a lost delivery', async () => {
    const attempts = log.listen<DeliveryAttemptMessage>(webhookChannels.attempt);
    const deliveries = log.listen<DeliveryEndMessage>(webhookChannels.delivery);
    const { deliverer, job } = await deliverToEnd(receiver);

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

  it('publish nothing to a listener once it unsubscribed', async () => {
    const attempts = log.listen<DeliveryAttemptMessage>(webhookChannels.attempt);
    log.stop();

    await deliverToEnd(receiver);

    expect(attempts).toEqual([]);
  });
});
