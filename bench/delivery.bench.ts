/**
 * Delivery figures: signing and verifying a 1 KB payload, against the standardwebhooks package,
 * and deliveries per second through the memory queue to a local node:http receiver (keep-alive).
 */
import { Agent, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createDeliverer,
  deliveryJob,
  generateWebhookSecret,
  httpTransport,
  MemoryDeliveryQueue,
  signWebhook,
  verifyWebhook,
} from 'api-conventions';
import { Webhook } from 'standardwebhooks';
import { rate } from './support.js';

const DELIVERIES = 5_000;

export async function run(): Promise<Record<string, unknown>> {
  const secret = generateWebhookSecret();
  const body = JSON.stringify({ type: 'folio/created', data: { padding: 'x'.repeat(960) } });
  const timestamp = Math.floor(Date.now() / 1000);
  const reference = new Webhook(secret);
  const ids = ['msg_1', 'msg_2', 'msg_3', 'msg_4'];
  const signed = ids.map((id) => signWebhook({ id, timestamp, body }, secret));
  const sign = rate(ids, (id) => signWebhook({ id, timestamp, body }, secret));
  const signReference = rate(ids, (id) => reference.sign(id, new Date(timestamp * 1000), body));
  const verify = rate(signed, (headers) => verifyWebhook(body, headers, { secrets: secret }));
  const verifyReference = rate(signed, (headers) =>
    reference.verify(body, { ...headers }, { jsonParse: false }),
  );
  console.error(
    `sign 1 KB: ${Math.round(sign)}/s (standardwebhooks ${Math.round(signReference)}/s); verify: ${Math.round(verify)}/s (standardwebhooks ${Math.round(verifyReference)}/s)`,
  );

  let received = 0;
  let allIn: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    allIn = resolve;
  });
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(204).end();
      received += 1;
      if (received === DELIVERIES) allIn();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`;
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const queue = new MemoryDeliveryQueue({
    deliverer: createDeliverer({
      secrets: () => [secret],
      transport: httpTransport({ allow: ['127.0.0.1'], agent: { http: agent } }),
    }),
    concurrency: 32,
    capacity: 1_000,
  });
  const start = performance.now();
  for (let n = 0; n < DELIVERIES; n++) {
    await queue.enqueue(deliveryJob({ id: `msg_${n}`, body }, { id: 'sub', endpointUrl: url }));
  }
  await done;
  const seconds = (performance.now() - start) / 1000;
  await queue.close();
  agent.destroy();
  server.close();
  const perSecond = DELIVERIES / seconds;
  console.error(
    `memory queue to a local receiver: ${Math.round(perSecond)} deliveries/s (concurrency 32, keep-alive)`,
  );
  return {
    signPerSecond: Math.round(sign),
    signStandardWebhooksPerSecond: Math.round(signReference),
    verifyPerSecond: Math.round(verify),
    verifyStandardWebhooksPerSecond: Math.round(verifyReference),
    memoryQueueDeliveriesPerSecond: Math.round(perSecond),
  };
}
