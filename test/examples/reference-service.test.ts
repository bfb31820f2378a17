/**
 * The reference service end to end over real HTTP: create subscriptions, list them by page number,
 * emit a test event, receive signed deliveries at a local receiver, read the delivery log by
 * cursor, and hit 429 when bursting; in memory, and with limits and queue on Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoService, startDemoService } from '../../examples/service.js';
import type { AuditLogEntry } from '../../examples/service-webhooks.js';
import { FakeClock, verifyWebhook } from '../../src/index.js';
import { RedisServer } from '../support/redis-server.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const LIVE = { 'x-api-key': 'live-demo-key', 'content-type': 'application/json' };
const DEV = { 'x-api-key': 'dev-demo-key', 'content-type': 'application/json' };

/** Delivery log entries as the service records them, and a way to wait for a number of them. */
function deliveryLog() {
  const entries: AuditLogEntry[] = [];
  let waiters: Array<{ count: number; wake: () => void }> = [];
  return {
    entries,
    onDelivery: (entry: AuditLogEntry) => {
      entries.push(entry);
      const ready = waiters.filter((w) => entries.length >= w.count);
      waiters = waiters.filter((w) => entries.length < w.count);
      for (const w of ready) w.wake();
    },
    waitFor: (count: number) =>
      entries.length >= count
        ? Promise.resolve()
        : new Promise<void>((wake) => waiters.push({ count, wake })),
  };
}

async function call(
  service: DemoService,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
) {
  const response = await fetch(`${service.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  return {
    status: response.status,
    headers: response.headers,
    // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes, read by the assertions
    body: (type.includes('json') ? JSON.parse(text) : text) as Record<string, any>,
  };
}

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

describe('reference service (npm run demo), in memory', () => {
  it('creates, lists by page number, emits, delivers signed payloads, logs by cursor, and answers 429 to a burst', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const log = deliveryLog();
    const service = await startDemoService({ port: 0, clock, onDelivery: log.onDelivery });
    try {
      // Create: 201 with the subscription and its secret; every error at once otherwise.
      const secrets = new Map<string, string>();
      for (const [n, events] of [
        [1, ['reservation/*']],
        [2, ['reservation/created', 'folio/created']],
        [3, ['folio/*']],
      ] as const) {
        const created = await call(service, '/v1/subscriptions', LIVE, {
          endpointUrl: `${receiver.url}/hooks/${n}`,
          events,
        });
        expect(created.status).toBe(201);
        expect(created.headers.get('location')).toBe(`/v1/subscriptions/${created.body.id}`);
        expect(created.body).toMatchObject({ accountCode: 'LIVE-ACME', status: 'active' });
        expect(created.body.secret).toMatch(/^whsec_/);
        secrets.set(`/hooks/${n}`, created.body.secret);
      }
      const refused = await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: 'http://10.0.0.1/in',
        events: [],
      });
      expect(refused.status).toBe(400);
      expect(refused.body.errors.map((e: { code: string }) => e.code).sort()).toEqual([
        'empty_array',
        'url_forbidden_address',
      ]);

      // List by page number.
      const first = await call(service, '/v1/subscriptions?pageSize=2', LIVE);
      expect(first.body).toMatchObject({
        pageNumber: 1,
        pageSize: 2,
        totalItems: 3,
        endOfData: false,
      });
      expect(first.body.items).toHaveLength(2);
      expect(first.headers.get('link')).toContain('rel="next"');
      const second = await call(service, '/v1/subscriptions?pageNumber=2&pageSize=2', LIVE);
      expect(second.body).toMatchObject({ pageNumber: 2, endOfData: true });
      expect(second.body.items.map((s: { endpointUrl: string }) => s.endpointUrl)).toEqual([
        `${receiver.url}/hooks/3`,
      ]);
      const tooLarge = await call(service, '/v1/subscriptions?pageSize=201', LIVE);
      expect([tooLarge.status, tooLarge.body.code]).toEqual([400, 'page_size_too_large']);

      // Emit: delivered to the two reservation subscriptions, signed with each one's secret.
      const before = receiver.received.length;
      const emitted = await call(service, '/v1/test-events', LIVE, {
        kind: 'reservation/created',
        propertyId: 'BER',
        data: { id: 'R-1001' },
      });
      expect(emitted.status).toBe(202);
      expect(emitted.body.deliveries).toHaveLength(2);
      await receiver.waitFor(before + 2);
      const got = receiver.received.slice(before, before + 2);
      expect(got.map((d) => d.path).sort()).toEqual(['/hooks/1', '/hooks/2']);
      for (const d of got) {
        expect(d.headers['webhook-id']).toBe(emitted.body.id);
        const verdict = verifyWebhook(d.body, d.headers, { secrets: secrets.get(d.path)!, clock });
        expect(verdict.ok).toBe(true);
        expect(JSON.parse(d.body)).toMatchObject({
          id: emitted.body.id,
          type: 'reservation/created',
          accountId: 'LIVE-ACME',
          propertyId: 'BER',
          data: { id: 'R-1001' },
        });
        // A secret of another subscription does not verify it.
        const other = [...secrets.entries()].find(([path]) => path !== d.path)![1];
        expect(verifyWebhook(d.body, d.headers, { secrets: other, clock }).ok).toBe(false);
      }

      // The delivery log, by cursor: two more events make four entries.
      await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      await log.waitFor(4);
      const page1 = await call(service, '/v1/audit-logs?limit=3', LIVE);
      expect(page1.body.items).toHaveLength(3);
      expect(page1.body.endOfData).toBe(false);
      expect(page1.body.items.every((e: AuditLogEntry) => e.outcome === 'delivered')).toBe(true);
      const page2 = await call(
        service,
        `/v1/audit-logs?limit=3&cursor=${encodeURIComponent(page1.body.nextCursor)}`,
        LIVE,
      );
      expect(page2.body).toMatchObject({ endOfData: true, nextCursor: null });
      expect(
        [...page1.body.items, ...page2.body.items].map((e: AuditLogEntry) => e.sequence),
      ).toEqual([1, 2, 3, 4]);
      const tampered = await call(service, `/v1/audit-logs?cursor=${page1.body.nextCursor}x`, LIVE);
      expect(tampered.status).toBe(400);
      const otherAccount = await call(service, '/v1/audit-logs', DEV);
      expect(otherAccount.body.items).toEqual([]);

      // A burst from the Development client: 5 per second, the sixth is a 429.
      const codes: number[] = [];
      for (let i = 0; i < 5; i++)
        codes.push((await call(service, '/v1/subscriptions', DEV)).status);
      const burst = await call(service, '/v1/subscriptions', DEV);
      expect(codes.slice(0, 4)).toEqual([200, 200, 200, 200]);
      expect(burst.status).toBe(429);
      expect(burst.headers.get('content-type')).toContain('text/plain');
      expect(burst.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    } finally {
      await service.close();
    }
  });

  it('410 from a receiver disables the subscription, shown in the list and the log', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const log = deliveryLog();
    const service = await startDemoService({ port: 0, clock, onDelivery: log.onDelivery });
    receiver.respond((d) => (d.path === '/gone' ? { status: 410 } : { status: 204 }));
    try {
      await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${receiver.url}/gone`,
        events: ['folio/*'],
      });
      await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      await log.waitFor(1);
      expect(log.entries[0]).toMatchObject({ outcome: 'disabled', status: 410 });
      const list = await call(service, '/v1/subscriptions', LIVE);
      expect(list.body.items[0].status).toBe('disabled');
      const again = await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      expect(again.body.deliveries).toEqual([]);
    } finally {
      receiver.respond(() => ({ status: 204 }));
      await service.close();
    }
  });
});

describe('reference service with REDIS_URL: limits and delivery queue on Redis', () => {
  it('delivers through the Redis queue and refuses a burst through the Redis store', async () => {
    const redis = await RedisServer.start();
    const log = deliveryLog();
    const service = await startDemoService({
      port: 0,
      redisUrl: `redis://127.0.0.1:${redis.port}`,
      onDelivery: log.onDelivery,
    });
    try {
      const created = await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${receiver.url}/redis`,
        events: ['reservation/*'],
      });
      const before = receiver.received.length;
      const emitted = await call(service, '/v1/test-events', LIVE, { kind: 'reservation/created' });
      await receiver.waitFor(before + 1);
      const d = receiver.received[before]!;
      expect(d.headers['webhook-id']).toBe(emitted.body.id);
      expect(verifyWebhook(d.body, d.headers, { secrets: created.body.secret }).ok).toBe(true);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++)
        statuses.push((await call(service, '/v1/subscriptions', DEV)).status);
      expect(statuses).toContain(429);
    } finally {
      await service.close();
      await redis.stop();
    }
  });
});
