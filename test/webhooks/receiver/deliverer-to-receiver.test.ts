/**
 * The library's sender and receiver together, over real HTTP on 127.0.0.1: a deliverer whose
 * secrets hook holds a signing key beside a secret (a move to asymmetric signatures) is received
 * by a receiver holding only the public key, and by one holding only the secret; a failed handle
 * is retried by the deliverer's schedule and handled once.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDeliverer,
  createWebhookReceiver,
  deliveryJob,
  generateWebhookKeyPair,
  generateWebhookSecret,
  httpTransport,
  type ReceivedWebhook,
} from '../../../src/index.js';
import type { StartedServer } from '../../support/adapter-suite.js';
import { listen } from '../../support/listen.js';

const pair = generateWebhookKeyPair();
const secret = generateWebhookSecret();
const handled: Record<string, ReceivedWebhook[]> = { publicKey: [], secret: [] };
const servers: Record<string, StartedServer> = {};
let failNext = false;

beforeAll(async () => {
  for (const [name, keys] of [
    ['publicKey', { publicKeys: pair.publicKey }],
    ['secret', { secrets: secret }],
  ] as const) {
    const receiver = createWebhookReceiver({
      ...keys,
      onError: () => undefined,
      handle: (delivery) => {
        if (failNext) {
          failNext = false;
          throw new Error('not now');
        }
        handled[name]!.push(delivery);
      },
    });
    servers[name] = await listen(createServer(receiver.node));
  }
});
afterAll(() => Promise.all(Object.values(servers).map((server) => server.close())));

describe('a deliverer signing with a signing key and a secret', () => {
  const deliverer = createDeliverer({
    secrets: () => [pair.signingKey, secret],
    transport: httpTransport({ allow: ['127.0.0.1'] }),
  });
  const message = { id: 'msg_e2e', body: '{"type":"folio/created","data":{"folioId":"F1"}}' };

  it('is received by a receiver holding either key, handled once each', async () => {
    for (const name of ['publicKey', 'secret']) {
      const job = deliveryJob(message, { id: 'sub_1', endpointUrl: `${servers[name]!.url}/in` });
      const step = await deliverer.attempt(job);
      expect(step.done && step.report.outcome).toBe('delivered');
      expect(handled[name]!.map((d) => [d.id, d.payload])).toEqual([
        ['msg_e2e', { type: 'folio/created', data: { folioId: 'F1' } }],
      ]);
    }
  });

  it('retries a delivery whose handle failed, and the retry is handled', async () => {
    failNext = true;
    const job = deliveryJob(
      { ...message, id: 'msg_retried' },
      { id: 'sub_1', endpointUrl: `${servers.publicKey!.url}/in` },
    );
    const first = await deliverer.attempt(job);
    expect(first.done).toBe(false);
    if (first.done) return;
    const second = await deliverer.attempt(first.job);
    expect(second.done && second.report.outcome).toBe('delivered');
    expect(handled.publicKey!.filter((d) => d.id === 'msg_retried')).toHaveLength(1);
  });
});
