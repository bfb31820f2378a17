/**
 * The reference service end to end over real HTTP: create subscriptions, list them by page number,
 * read, change, rotate and delete them, emit a test event, receive signed deliveries at a local
 * receiver, read the delivery log by cursor, see a gone endpoint disabled and its message replayed
 * with the same webhook-id, and hit 429 when bursting; stored in embedded PostgreSQL, with limits
 * and queue in memory and on Redis. Hostile input: hostile-input.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DemoService } from '../../examples/service.js';
import {
  type DeliveryLogEntry as AuditLogEntry,
  FakeClock,
  verifyWebhook,
} from '../../src/index.js';
import { call, DEV, deliveryLog, demoStarter, disabledLog, LIVE } from '../support/demo-service.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const { start: startDemo, cleanup } = demoStarter();
afterAll(cleanup);

/** A demo on a fake clock whose delivery attempts and disabled subscriptions can be awaited. */
async function startWatched() {
  const clock = new FakeClock(1_700_000_000_000);
  const log = deliveryLog();
  const disabled = disabledLog();
  const service = await startDemo({
    clock,
    onDelivery: log.onDelivery,
    onDisabled: disabled.onDisabled,
  });
  return { clock, log, disabled, service };
}

/** `POST /v1/messages/{id}/replay` as the Live client. */
const replayMessage = (service: DemoService, id: string) =>
  call(service, `/v1/messages/${id}/replay`, LIVE, undefined, 'POST');

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

describe('reference service (npm run demo), on embedded PostgreSQL, limits and queue in memory', () => {
  it('creates, lists by page number, emits, delivers signed payloads, logs by cursor, and answers 429 to a burst', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const log = deliveryLog();
    const service = await startDemo({ clock, onDelivery: log.onDelivery });
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
        expect(created.body).toMatchObject({ endpointUrl: `${receiver.url}/hooks/${n}`, events });
        expect(created.body.status).toBe('enabled');
        // The account is the caller's own: the service never shows it.
        expect(created.body).not.toHaveProperty('accountCode');
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
      ).toEqual([4, 3, 2, 1]); // newest first
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

  it('reads, changes, rotates and deletes a subscription: each change is what the next delivery does', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const log = deliveryLog();
    const service = await startDemo({ clock, onDelivery: log.onDelivery });
    try {
      const created = await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${service.url}/demo/receiver`,
        events: ['reservation/*'],
      });
      const { id, secret: first } = created.body;
      const path = `/v1/subscriptions/${id}`;

      // Read: the account's own, and a 404 for another account, as for an id that does not exist.
      const read = await call(service, path, LIVE);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(
        Object.fromEntries(Object.entries(created.body).filter(([key]) => key !== 'secret')),
      );
      const foreign = await call(service, path, DEV);
      expect([foreign.status, foreign.body.code]).toEqual([404, 'subscription_not_found']);

      // Change: to one property only; a bad change lists its errors and changes nothing.
      const bad = await call(service, path, LIVE, { status: 'paused', events: [] }, 'PATCH');
      expect([bad.status, bad.body.code]).toEqual([400, 'invalid_subscription_change']);
      expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
        '/events',
        '/status',
      ]);
      const changed = await call(service, path, LIVE, { propertyIds: ['BER'] }, 'PATCH');
      expect(changed.status).toBe(200);
      expect(changed.body.propertyIds).toEqual(['BER']);
      const elsewhere = await call(service, '/v1/test-events', LIVE, { propertyId: 'MUC' });
      expect(elsewhere.body.deliveries).toEqual([]);

      // Rotate: the new secret signs, and the old one beside it through the grace period.
      const rotated = await call(service, `${path}/secret/rotate`, LIVE, undefined, 'POST');
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).toMatch(/^whsec_/);
      expect(rotated.body.secret).not.toBe(first);
      const before = receiver.received.length;
      await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${receiver.url}/rotated`,
        events: ['reservation/*'],
      });
      const emitted = await call(service, '/v1/test-events', LIVE, { propertyId: 'BER' });
      expect(emitted.body.deliveries).toHaveLength(2);
      await log.waitFor(2);
      await receiver.waitFor(before + 1);
      // The demo receiver verified its delivery with the secrets the repository holds.
      const got = await call(service, '/demo/receiver', LIVE);
      expect(
        got.body.items.map((d: { id: string; verified: boolean }) => [d.id, d.verified]),
      ).toEqual([[emitted.body.id, true]]);
      expect(log.entries.map((e) => e.outcome)).toEqual(['delivered', 'delivered']);

      // Delete: 204, then 404, and nothing more is delivered to it.
      expect((await call(service, path, LIVE, undefined, 'DELETE')).status).toBe(204);
      expect((await call(service, path, LIVE)).status).toBe(404);
      expect((await call(service, path, LIVE, undefined, 'DELETE')).status).toBe(404);
      const afterDelete = await call(service, '/v1/test-events', LIVE, { propertyId: 'BER' });
      expect(afterDelete.body.deliveries).toHaveLength(1);
      expect(afterDelete.body.deliveries).not.toContain(id);
    } finally {
      await service.close();
    }
  });

  it('the demo receiver that is gone: its 410 disables the subscription at once, told to onDisabled and printed; GET says why and when, the attempts show the 410', async () => {
    const printed = vi.spyOn(console, 'log');
    const { clock, log, disabled, service } = await startWatched();
    try {
      const created = await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${service.url}/demo/receiver/gone`,
        events: ['folio/*'],
      });
      const { id } = created.body;
      const emitted = await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      expect(emitted.body.deliveries).toEqual([id]);
      await disabled.waitFor(1);
      await log.waitFor(1);
      expect(disabled.entries).toEqual([
        {
          subscription: expect.objectContaining({ id, status: 'disabled' }),
          reason: 'endpoint_gone',
          at: clock.now(),
        },
      ]);
      expect(printed).toHaveBeenCalledWith(
        `demo service: subscription ${id} disabled (endpoint_gone)`,
      );
      expect(log.entries[0]).toMatchObject({ outcome: 'disabled', status: 410 });
      const read = await call(service, `/v1/subscriptions/${id}`, LIVE);
      expect(read.body).toMatchObject({
        status: 'disabled',
        disabledReason: 'endpoint_gone',
        disabledAt: new Date(clock.now()).toISOString(),
      });
      const listed = await call(service, '/v1/subscriptions', LIVE);
      expect(listed.body.items).toEqual([read.body]);
      const attempts = await call(service, `/v1/subscriptions/${id}/attempts`, LIVE);
      expect(attempts.body.items).toEqual([
        expect.objectContaining({ id: emitted.body.id, status: 410, outcome: 'disabled' }),
      ]);
      // Nothing more is sent to it, and its failures are replayed only once it is enabled.
      const again = await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      expect(again.body.deliveries).toEqual([]);
      const refused = await call(service, `/v1/subscriptions/${id}/replay`, LIVE, {
        since: created.body.createdAt,
      });
      expect([refused.status, refused.body.code]).toEqual([409, 'subscription_disabled']);
      const byMessage = await replayMessage(service, emitted.body.id);
      expect(byMessage.body).toMatchObject({ deliveries: 0 });
      expect(disabled.entries).toHaveLength(1);
    } finally {
      printed.mockRestore();
      await service.close();
    }
  });

  it('enabled again, a replay sends what failed with the same webhook-id and the same body, recorded as replay 1; a second replay sends nothing', async () => {
    const { clock, log, disabled, service } = await startWatched();
    receiver.respond((d) => (d.path === '/back' ? { status: 410 } : { status: 204 }));
    try {
      const created = await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${receiver.url}/back`,
        events: ['folio/*'],
      });
      const { id, secret } = created.body;
      const before = receiver.received.length;
      const emitted = await call(service, '/v1/test-events', LIVE, {
        kind: 'folio/created',
        data: { folioId: 'F-7' },
      });
      await disabled.waitFor(1);
      await log.waitFor(1);
      // The endpoint is back: enabled again, its failed message replayed.
      receiver.respond(() => ({ status: 204 }));
      const enabled = await call(
        service,
        `/v1/subscriptions/${id}`,
        LIVE,
        { status: 'enabled' },
        'PATCH',
      );
      expect(enabled.body).toMatchObject({ status: 'enabled' });
      expect(enabled.body).not.toHaveProperty('disabledReason');
      const replayed = await replayMessage(service, emitted.body.id);
      expect(replayed.status).toBe(202);
      expect(replayed.body).toEqual({
        messageId: emitted.body.id,
        deliveries: 1,
        queued: 1,
        paced: 0,
      });
      await receiver.waitFor(before + 2);
      await log.waitFor(2);
      const [first, second] = receiver.received.slice(before);
      expect(second?.headers['webhook-id']).toBe(emitted.body.id);
      expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
      expect(second?.body).toBe(first?.body);
      expect(verifyWebhook(second!.body, second!.headers, { secrets: secret, clock }).ok).toBe(
        true,
      );
      expect(log.entries[1]).toMatchObject({ outcome: 'delivered', replay: 1 });
      const attempts = await call(service, `/v1/subscriptions/${id}/attempts`, LIVE);
      expect(
        attempts.body.items.map((a: { status: number; outcome: string; replay?: number }) => [
          a.status,
          a.outcome,
          a.replay,
        ]),
      ).toEqual([
        [204, 'delivered', 1],
        [410, 'disabled', undefined],
      ]);
      const audit = await call(service, '/v1/audit-logs?outcome=delivered', LIVE);
      expect(audit.body.items).toEqual([
        expect.objectContaining({ id: emitted.body.id, replay: 1 }),
      ]);
      // Nothing failed any more: neither replay sends anything.
      const bySubscription = await call(service, `/v1/subscriptions/${id}/replay`, LIVE, {
        since: created.body.createdAt,
      });
      expect(bySubscription.body).toEqual({
        subscriptionId: id,
        since: created.body.createdAt,
        deliveries: 0,
        queued: 0,
        paced: 0,
      });
      const byMessage = await replayMessage(service, emitted.body.id);
      expect(byMessage.body).toMatchObject({ deliveries: 0 });
      expect(receiver.received).toHaveLength(before + 2);
    } finally {
      receiver.respond(() => ({ status: 204 }));
      await service.close();
    }
  });
});

describe('reference service with REDIS_URL: limits and delivery queue on Redis', () => {
  let redis: SharedRedis;
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(async () => {
    await redis.release();
  });

  it('delivers through the Redis queue, refuses a burst through the Redis store, peeks at and resets a client there, and raises it with an override', async () => {
    const log = deliveryLog();
    const service = await startDemo({
      redisUrl: `redis://127.0.0.1:${redis.port}/${redis.db}`,
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
      // The admin API peeks at and resets the client in Redis.
      const ADMIN = { 'x-admin-key': 'admin-demo-key' };
      const limits = '/admin/limits/demo-dev-app/DEV-ACME';
      const peeked = await call(service, limits, ADMIN);
      expect(peeked.status).toBe(200);
      expect(peeked.body.statuses.map((s: { policy: string }) => s.policy)).toEqual([
        'global: 5 per 1 s',
        'global: 200 per 60 s',
        'throttle: 5 concurrent',
      ]);
      const reset = await call(service, limits, ADMIN, undefined, 'DELETE');
      expect(reset.status).toBe(200);
      expect(reset.body.cleared).toBeGreaterThan(0);
      const fresh = await call(service, limits, ADMIN);
      expect(fresh.body.decision).toEqual({ allowed: true });
      expect(fresh.body.statuses).toContainEqual({
        policy: 'global: 200 per 60 s',
        remaining: 200,
        resetAfterMs: 0,
      });
      // An override raises the client on the Redis store too: six calls in a row all admitted.
      const override = '/admin/overrides/demo-dev-app';
      const raised = await call(service, override, ADMIN, { multiplier: 2 }, 'PUT');
      expect(raised.body).toEqual({ clientId: 'demo-dev-app', multiplier: 2 });
      const doubled = await call(service, limits, ADMIN);
      expect(doubled.body.statuses.map((s: { policy: string }) => s.policy)).toEqual([
        'global: 5 per 1 s (x2)',
        'global: 200 per 60 s (x2)',
        'throttle: 5 concurrent (x2)',
      ]);
      const admitted: number[] = [];
      for (let i = 0; i < 6; i++)
        admitted.push((await call(service, '/v1/subscriptions', DEV)).status);
      expect(admitted).toEqual([200, 200, 200, 200, 200, 200]);
      const removed = await call(service, override, ADMIN, undefined, 'DELETE');
      expect(removed.body).toEqual({ clientId: 'demo-dev-app', removed: true });
    } finally {
      await service.close();
    }
  });
});
