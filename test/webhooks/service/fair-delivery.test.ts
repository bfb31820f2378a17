/**
 * Fair, bounded delivery over real HTTP: one account whose receivers never answer, trickle their
 * headers or send an endless body holds at most its share of the memory queue's workers, so
 * another account's deliveries all arrive while its attempts are still held; and a publish never
 * waits on the queue's capacity: what does not fit is left to the sweeps and delivered once there
 * is room, `POST /v1/test-events` answering all along.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createWebhookService,
  type DeliveryAttempt,
  httpTransport,
  MemoryDeliveryQueue,
  MemorySubscriptionRepository,
  type WebhookService,
  type WebhookServiceOptions,
} from '../../../src/index.js';
import { eventLog } from '../../support/demo-service.js';
import { startHoldingReceiver } from '../../support/holding-receiver.js';
import { listen } from '../../support/listen.js';
import { startReceiver } from '../../support/webhook-receiver.js';
import { byAccountHeader, call } from '../../support/webhook-service.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  // In the order made: the receivers before the service, whose close waits for its attempts.
  for (const close of closers.splice(0)) await close();
});

/** A service over real HTTP to receivers on 127.0.0.1, attempts held up to 10 minutes. */
function startService(over: Partial<WebhookServiceOptions> = {}) {
  const attempts = eventLog<DeliveryAttempt>();
  const errors: unknown[] = [];
  const service = createWebhookService({
    repository: new MemorySubscriptionRepository(),
    identify: byAccountHeader,
    pollIntervalMs: 0,
    endpointUrl: { allowHttp: true, allow: ['127.0.0.1'] },
    delivery: {
      transport: httpTransport({ allow: ['127.0.0.1'] }),
      // Long: a hostile attempt stays in flight for the whole test.
      timeoutMs: 600_000,
      onAttempt: attempts.push,
    },
    onError: (error) => errors.push(error),
    ...over,
  });
  closers.push(() => service.close());
  return { service, attempts, errors };
}

async function subscribe(service: WebhookService, account: string, endpointUrl: string) {
  const created = await call(service, 'POST', '/v1/subscriptions', {
    account,
    body: { endpointUrl, events: ['reservation/*'] },
  });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

/** Receivers that hold their connections: never answer, trickle headers, or an endless body. */
async function hostileReceivers() {
  const open = new Set<unknown>();
  const never = createServer((req, res) => {
    req.resume();
    open.add(res);
    res.once('close', () => open.delete(res));
  });
  const endless = createServer((req, res: ServerResponse) => {
    req.resume();
    res.writeHead(200);
    const pour = () => {
      while (!res.destroyed)
        if (!res.write(Buffer.alloc(16 * 1024))) return res.once('drain', pour);
    };
    pour();
  });
  const sockets = new Set<Socket>();
  const trickle = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      open.add(socket);
      socket.write('HTTP/1.1 200 OK\r\nx-slow: ');
      // A byte of a header now and then: the headers never end.
      const drip = setInterval(() => socket.write('a'), 50);
      socket.once('close', () => {
        clearInterval(drip);
        open.delete(socket);
      });
    });
  });
  const servers = await Promise.all([never, endless].map((server: Server) => listen(server)));
  await new Promise<void>((resolve) => trickle.listen(0, '127.0.0.1', resolve));
  const tricklePort = (trickle.address() as { port: number }).port;
  closers.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => trickle.close(resolve));
    await Promise.all(servers.map((s) => s.close()));
  });
  return {
    urls: {
      never: servers[0]!.url,
      endless: servers[1]!.url,
      trickle: `http://127.0.0.1:${tricklePort}`,
    },
    /** Hostile requests whose connection is open now: attempts held. */
    get held() {
      return open.size;
    },
  };
}

describe('fair delivery', () => {
  it("an account whose receivers hold their connections holds at most its share of the workers: another account's deliveries all arrive meanwhile", async () => {
    const hostile = await hostileReceivers();
    const good = await startReceiver();
    closers.push(() => good.close());
    const { service } = startService();
    // 16 hostile endpoints: 6 that never answer, 5 that trickle their headers, 5 endless bodies.
    for (let i = 0; i < 16; i++) {
      const base =
        i < 6 ? hostile.urls.never : i < 11 ? hostile.urls.trickle : hostile.urls.endless;
      await subscribe(service, 'HOSTILE', `${base}/in/${i}`);
    }
    await subscribe(service, 'GOOD', `${good.url}/in`);
    for (let i = 0; i < 3; i++) {
      await service.publish({ accountCode: 'HOSTILE', kind: 'reservation/created' });
    }
    const published: string[] = [];
    for (let i = 0; i < 20; i++) {
      published.push(
        (await service.publish({ accountCode: 'GOOD', kind: 'reservation/created', data: i })).id,
      );
    }
    await good.waitFor(20);
    expect(new Set(good.received.map((d) => d.headers['webhook-id']))).toEqual(new Set(published));
    // The hostile attempts are still held, never more than the account's share (a quarter of 8).
    expect(hostile.held).toBeGreaterThanOrEqual(1);
    expect(hostile.held).toBeLessThanOrEqual(2);
  });

  it('a publish never waits on a full queue; POST /v1/test-events answers; every job is delivered once there is room', async () => {
    const blackHole = await startHoldingReceiver();
    blackHole.hold();
    const good = await startReceiver();
    closers.push(() => good.close());
    closers.push(() => blackHole.close());
    let queue: MemoryDeliveryQueue | undefined;
    const { service, attempts } = startService({
      queue: (deliverer) => {
        queue = new MemoryDeliveryQueue({ deliverer, capacity: 6, concurrency: 4 });
        return queue;
      },
    });
    // The demo's test events: the service's publish behind its own HTTP route.
    const api = await listen(
      createServer((req, res) => {
        let text = '';
        req.on('data', (chunk) => {
          text += chunk;
        });
        req.on('end', async () => {
          const { kind } = JSON.parse(text) as { kind: string };
          const accountCode = String(req.headers['x-account']);
          const result = await service.publish({ accountCode, kind });
          res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify(result));
        });
      }),
    );
    closers.push(() => api.close());
    for (let i = 0; i < 5; i++) await subscribe(service, 'HOSTILE', `${blackHole.url}/in/${i}`);
    await subscribe(service, 'GOOD', `${good.url}/in`);
    // 20 jobs to black holes over a capacity of 6: every publish resolves all the same.
    const keys = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const result = await service.publish({ accountCode: 'HOSTILE', kind: 'reservation/created' });
      for (const sub of result.deliveries) keys.add(`${result.id} ${sub}`);
    }
    expect(queue?.size).toBe(6);
    const other = await service.publish({ accountCode: 'GOOD', kind: 'reservation/created' });
    for (const sub of other.deliveries) keys.add(`${other.id} ${sub}`);
    const answer = await fetch(`${api.url}/v1/test-events`, {
      method: 'POST',
      headers: { 'x-account': 'GOOD', 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'reservation/amended' }),
    });
    expect(answer.status).toBe(202);
    const event = (await answer.json()) as { id: string; deliveries: string[] };
    for (const sub of event.deliveries) keys.add(`${event.id} ${sub}`);
    expect(keys.size).toBe(22);
    // Room frees up: what did not fit is swept and delivered, each once.
    blackHole.release();
    const delivered = () =>
      attempts.entries
        .filter((a) => a.outcome === 'delivered')
        .map((a) => `${a.id} ${a.subscriptionId}`);
    while (delivered().length < 22) await attempts.waitFor(attempts.entries.length + 1);
    expect(new Set(delivered())).toEqual(keys);
    expect(delivered()).toHaveLength(22);
  });
});
