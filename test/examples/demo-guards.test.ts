/**
 * The reference service's own guards, over real HTTP: endpoints on this machine only on the demo's
 * own port (its receivers), unless WEBHOOK_ALLOW says otherwise; the receiver's payloads listed to
 * their account's key only; and the request timeouts the README states, as the server holds them.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoOptions, type DemoService, startDemoService } from '../../examples/service.js';
import { ownPortTransport } from '../../examples/service-own-port.js';
import { FakeClock, ForbiddenAddressError } from '../../src/index.js';
import { call, DEV, deliveryLog, LIVE } from '../support/demo-service.js';
import { demoDataDir } from '../support/pglite-template.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const root = resolve(import.meta.dirname, '../..');
const folders: string[] = [];
/** The demo as `npm run demo` starts it: no allow-list of the operator's unless given. */
async function startDemo(options: DemoOptions = {}): Promise<DemoService> {
  const dataDir = await demoDataDir();
  folders.push(dataDir);
  return startDemoService({ port: 0, dataDir, onWarning: () => undefined, ...options });
}

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await Promise.all(folders.map((f) => rm(f, { recursive: true, force: true })));
});

const portOf = (url: string) => new URL(url).port;

describe('the demo allow-list: its own receivers, on its own port', () => {
  it('refuses another port on 127.0.0.1 or ::1 with 400 at /endpointUrl, on create and on change, and accepts its own receivers', async () => {
    const service = await startDemo();
    try {
      const own = portOf(service.url);
      for (const endpointUrl of [
        'http://[::1]:6379/',
        'http://127.0.0.1:5432/',
        `http://127.0.0.1:${portOf(receiver.url)}/in`,
        'http://[::ffff:127.0.0.1]:6379/',
        'https://127.0.0.1/',
      ]) {
        const refused = await call(service, '/v1/subscriptions', LIVE, {
          endpointUrl,
          events: ['folio/*'],
        });
        expect(refused.status, endpointUrl).toBe(400);
        expect(refused.body.code).toBe('invalid_subscription_request');
        expect(refused.body.errors, endpointUrl).toEqual([
          expect.objectContaining({ code: 'url_forbidden_address', path: '/endpointUrl' }),
        ]);
      }
      for (const endpointUrl of [
        `${service.url}/demo/receiver`,
        `http://[::1]:${own}/demo/receiver/gone`,
      ]) {
        const created = await call(service, '/v1/subscriptions', LIVE, {
          endpointUrl,
          events: ['folio/*'],
        });
        expect(created.status, endpointUrl).toBe(201);
      }
      const listed = await call(service, '/v1/subscriptions', LIVE);
      expect(listed.body.totalItems).toBe(2);
      const id = listed.body.items[0].id as string;
      const changed = await call(
        service,
        `/v1/subscriptions/${id}`,
        LIVE,
        { endpointUrl: 'http://[::1]:6379/' },
        'PATCH',
      );
      expect(changed.status).toBe(400);
      expect(changed.body).toMatchObject({ code: 'invalid_subscription_change' });
      expect(changed.body.errors).toEqual([
        expect.objectContaining({ code: 'url_forbidden_address', path: '/endpointUrl' }),
      ]);
      const read = await call(service, `/v1/subscriptions/${id}`, LIVE);
      expect(read.body.endpointUrl).toBe(`${service.url}/demo/receiver`);
    } finally {
      await service.close();
    }
  });

  it('with WEBHOOK_ALLOW (the allow option) its addresses are allowed on any port, as documented', async () => {
    const service = await startDemo({ allow: ['127.0.0.1'] });
    try {
      const created = await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${receiver.url}/allowed`,
        events: ['folio/*'],
      });
      expect(created.status).toBe(201);
      const v6 = await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: 'http://[::1]:6379/',
        events: ['folio/*'],
      });
      expect(v6.status).toBe(400);
    } finally {
      await service.close();
    }
  });

  it('a delivery to a name that resolves to this machine reaches the own port only', async () => {
    const ownPort = Number(portOf(receiver.url));
    const transport = ownPortTransport(['127.0.0.1', '::1'], () => ownPort);
    const send = (url: string) =>
      transport({
        url,
        headers: { 'content-type': 'application/json' },
        body: '{}',
        timeoutMs: 5_000,
      });
    const before = receiver.received.length;
    const elsewhere = await send('http://localhost:6379/').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(elsewhere).toBeInstanceOf(ForbiddenAddressError);
    const own = await send(`http://127.0.0.1:${ownPort}/own`);
    expect(own.status).toBeLessThan(300);
    await receiver.waitFor(before + 1);
    expect(receiver.received.slice(before).map((d) => d.path)).toEqual(['/own']);
  });
});

describe('GET /demo/receiver', () => {
  it('needs a demo API key and lists only that account’s payloads', async () => {
    const log = deliveryLog();
    const service = await startDemo({
      clock: new FakeClock(1_700_000_000_000),
      onDelivery: log.onDelivery,
    });
    try {
      const anonymous = await call(service, '/demo/receiver', {});
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.code).toBe('unauthenticated');
      for (const headers of [LIVE, DEV]) {
        const created = await call(service, '/v1/subscriptions', headers, {
          endpointUrl: `${service.url}/demo/receiver`,
          events: ['folio/*'],
        });
        expect(created.status).toBe(201);
      }
      const live = await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      const dev = await call(service, '/v1/test-events', DEV, { kind: 'folio/created' });
      await log.waitFor(2);
      const seenByLive = await call(service, '/demo/receiver', LIVE);
      const seenByDev = await call(service, '/demo/receiver', DEV);
      expect(seenByLive.status).toBe(200);
      expect(seenByLive.body.items).toEqual([
        expect.objectContaining({ id: live.body.id, verified: true }),
      ]);
      expect(seenByLive.body.items[0].body.accountId).toBe('LIVE-ACME');
      expect(seenByDev.body.items).toEqual([
        expect.objectContaining({ id: dev.body.id, verified: true }),
      ]);
      expect(seenByDev.body.items[0].body.accountId).toBe('DEV-ACME');
    } finally {
      await service.close();
    }
  });
});

describe('request timeouts', () => {
  it('the server answers 408 within the bound the README states: 30 s, checked every second', async () => {
    const service = await startDemo();
    try {
      // @types/node 20 leaves connectionsCheckingInterval out; node 20 sets it on the server.
      const server = service.server as typeof service.server & {
        connectionsCheckingInterval: number;
      };
      const { requestTimeout, headersTimeout, connectionsCheckingInterval } = server;
      expect(requestTimeout).toBe(30_000);
      expect(headersTimeout).toBeLessThanOrEqual(requestTimeout);
      expect(connectionsCheckingInterval).toBeLessThanOrEqual(1_000);
      // node answers a request still arriving at its first check after requestTimeout.
      const bound = (requestTimeout + connectionsCheckingInterval) / 1000;
      const readme = readFileSync(join(root, 'README.md'), 'utf8').replaceAll('\n', ' ');
      expect(readme).toContain(`within ${requestTimeout / 1000} s`);
      expect(readme).toContain(`so by ${bound} s`);
    } finally {
      await service.close();
    }
  });
});
