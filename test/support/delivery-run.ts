/**
 * One webhook message delivered to the end to a local receiver, on a fake clock started at the
 * real time (so that a verifier accepts its timestamp), the receiver answering given statuses.
 */
import {
  createDeliverer,
  createWebhookMessage,
  type DeliveryOptions,
  deliver,
  deliveryJob,
  FakeClock,
  generateWebhookSecret,
  httpTransport,
} from '../../src/index.js';
import type { WebhookReceiver } from './webhook-receiver.js';

const secret = generateWebhookSecret();

/**
 * Deliver one message to `receiver` until it is delivered, disabled or given up.
 * @param statuses - the receiver's answers in turn, then 204
 * @param options - the deliverer's options over the defaults (no jitter, the receiver allowed)
 */
export async function deliverToEnd(
  receiver: WebhookReceiver,
  statuses: readonly number[] = [],
  options: Partial<DeliveryOptions> = {},
) {
  const queue = [...statuses];
  receiver.respond(() => ({ status: queue.shift() ?? 204 }));
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
