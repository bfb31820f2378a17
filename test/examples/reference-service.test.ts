/**
 * The reference service end to end over real HTTP: create subscriptions, list them by page number,
 * read, change, rotate and delete them, emit a test event, receive signed deliveries at a local
 * receiver, read the delivery log by cursor, and hit 429 when bursting; stored in embedded
 * PostgreSQL, with limits and queue in memory and on Redis.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoOptions, type DemoService, startDemoService } from '../../examples/service.js';
import {
  type DeliveryLogEntry as AuditLogEntry,
  type DeliveryAttempt,
  FakeClock,
  verifyWebhook,
} from '../../src/index.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const LIVE = { 'x-api-key': 'live-demo-key', 'content-type': 'application/json' };
const DEV = { 'x-api-key': 'dev-demo-key', 'content-type': 'application/json' };

const folders: string[] = [];
afterAll(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

/** Start the demo on a free port with its embedded PostgreSQL in a fresh temporary folder. */
async function startDemo(options: DemoOptions = {}): Promise<DemoService> {
  const dataDir = await mkdtemp(join(tmpdir(), 'demo-data-'));
  folders.push(dataDir);
  return startDemoService({ port: 0, dataDir, onWarning: () => undefined, ...options });
}

/** Delivery attempts as the service logs them, and a way to wait for a number of them. */
function deliveryLog() {
  const entries: DeliveryAttempt[] = [];
  let waiters: Array<{ count: number; wake: () => void }> = [];
  return {
    entries,
    onDelivery: (entry: DeliveryAttempt) => {
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
  method = body === undefined ? 'GET' : 'POST',
) {
  const response = await fetch(`${service.url}${path}`, {
    method,
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

/**
 * Send raw bytes on one connection and read everything until the service closes it: for request
 * targets, headers and bodies that fetch would refuse to send.
 */
function raw(
  service: DemoService,
  head: string,
  body: readonly string[] = [],
): Promise<{ status: number; headers: string; body: string }> {
  const { port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    // The service may close while the body is still being written: that is the point of some tests.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return reject(new Error(`no response: ${JSON.stringify(text)}`));
      const status = Number(text.slice(9, 12));
      resolve({ status, headers: text.slice(0, end).toLowerCase(), body: text.slice(end + 4) });
    });
    socket.write(head);
    for (const chunk of body) socket.write(chunk);
  });
}

/** The JSON of a problem+json response, checked to be one. */
function problemOf(response: { headers: string; body: string }) {
  expect(response.headers).toContain('content-type: application/problem+json');
  // A chunked body is framed: take the JSON object inside.
  const json = response.body.slice(response.body.indexOf('{'), response.body.lastIndexOf('}') + 1);
  return JSON.parse(json) as { code: string; detail: string; errors?: Array<{ code: string }> };
}

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
      const got = await call(service, '/demo/receiver', {});
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

  it('410 from a receiver disables the subscription, shown in the list and the log', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const log = deliveryLog();
    const service = await startDemo({ clock, onDelivery: log.onDelivery });
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
  let redis: SharedRedis;
  beforeAll(async () => {
    redis = await sharedRedis();
  });
  afterAll(async () => {
    await redis.release();
  });

  it('delivers through the Redis queue and refuses a burst through the Redis store', async () => {
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
    } finally {
      await service.close();
    }
  });
});

describe('reference service under hostile input', () => {
  const KEY = 'x-api-key: live-demo-key\r\n';
  // The tests of the HTTP surface share one service (none stores anything): each start of the
  // embedded PostgreSQL takes seconds.
  const clock = new FakeClock(0);
  let shared: DemoService;
  beforeAll(async () => {
    shared = await startDemo({ clock });
  });
  afterAll(() => shared.close());

  it('answers a request target that is no path with a 400 and keeps serving (an absolute-form URL that does not parse)', async () => {
    const service = shared;
    for (const target of ['http://[/v1/subscriptions', 'http://[/demo/receiver', '*']) {
      const refused = await raw(
        service,
        `GET ${target} HTTP/1.1\r\nhost: x\r\n${KEY}connection: close\r\n\r\n`,
      );
      expect(refused.status).toBe(400);
      expect(problemOf(refused)).toMatchObject({ code: 'invalid_request_target' });
    }
    expect((await call(service, '/v1/subscriptions', LIVE)).status).toBe(200);
  });

  it('keeps links on the service and the routes on the limited path, whatever the Host header or a leading //', async () => {
    const service = shared;
    for (const host of ['evil.example', '[', 'a b']) {
      const listed = await raw(
        service,
        `GET /v1/subscriptions?pageSize=1 HTTP/1.1\r\nhost: ${host}\r\n${KEY}connection: close\r\n\r\n`,
      );
      expect(listed.status).toBe(200);
      expect(listed.headers).toContain(`link: <${service.url}/v1/subscriptions?`);
      expect(listed.headers).not.toContain('evil.example/');
    }
    // `//x/booking/...` is no booking: it is counted as sent, and never served as one.
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      clock.advance(1_000);
      const patched = await raw(
        service,
        `PATCH //x/booking/v1/bookings/B1 HTTP/1.1\r\nhost: x\r\nx-api-key: dev-demo-key\r\nconnection: close\r\n\r\n`,
      );
      statuses.push(patched.status);
    }
    expect(statuses).toEqual([404, 404, 404, 404, 404, 404, 404]);
  });

  it('gives a 405 with Allow to a method a path does not take, serves HEAD as GET, and its 404 names the paths', async () => {
    const service = shared;
    // The library's routes answer with the service's own 405.
    for (const [method, path, allow] of [
      ['PUT', '/v1/subscriptions', 'POST, GET'],
      ['OPTIONS', '/v1/audit-logs', 'GET'],
      ['POST', '/v1/subscriptions/some-id', 'GET, PATCH, DELETE'],
      ['GET', '/v1/subscriptions/some-id/secret/rotate', 'POST'],
    ] as const) {
      const refused = await raw(
        service,
        `${method} ${path} HTTP/1.1\r\nhost: x\r\n${KEY}connection: close\r\n\r\n`,
      );
      expect(refused.status).toBe(405);
      expect(refused.headers).toContain(`allow: ${allow.toLowerCase()}`);
      expect(problemOf(refused)).toMatchObject({
        code: 'method_not_allowed',
        detail: `This resource answers ${allow}, not ${method}.`,
      });
    }
    // The demo's own routes.
    for (const [method, path, allow] of [
      ['DELETE', '/v1/test-events', 'POST'],
      ['TRACE', '/booking/v1/offers', 'GET, HEAD'],
      ['DELETE', '/demo/receiver', 'GET, POST, HEAD'],
    ] as const) {
      const key = path === '/demo/receiver' ? '' : KEY;
      const refused = await raw(
        service,
        `${method} ${path} HTTP/1.1\r\nhost: x\r\n${key}connection: close\r\n\r\n`,
      );
      expect(refused.status).toBe(405);
      expect(refused.headers).toContain(`allow: ${allow.toLowerCase()}`);
      expect(problemOf(refused).detail).toBe(
        `${path} takes ${allow.replace(', HEAD', '').replace(', ', ' or ')}, not ${method}.`,
      );
    }
    for (const path of ['/v1/subscriptions', '/v1/audit-logs', '/booking/v1/offers']) {
      const head = await fetch(`${service.url}${path}`, { method: 'HEAD', headers: LIVE });
      expect([path, head.status, await head.text()]).toEqual([path, 200, '']);
      expect(head.headers.get('content-type')).toContain('application/json');
    }
    const missing = await call(service, '/v1/test-events/', LIVE);
    expect([missing.status, missing.body.code]).toEqual([404, 'not_found']);
    expect(missing.body.detail).toContain(
      '/v1/subscriptions, /v1/subscriptions/{id}, /v1/subscriptions/{id}/secret/rotate, /v1/audit-logs, /v1/test-events',
    );
    const noRoute = await call(service, '/v1/subscriptions/', LIVE);
    expect([noRoute.status, noRoute.body.code]).toEqual([404, 'route_not_found']);
  });

  it('answers what node:http cannot parse with problem details: 431 for headers too large, 400 otherwise', async () => {
    const service = shared;
    const large = await raw(
      service,
      `GET /v1/subscriptions?${'a'.repeat(20_000)} HTTP/1.1\r\nhost: x\r\n${KEY}\r\n`,
    );
    expect(large.status).toBe(431);
    expect(problemOf(large).code).toBe('headers_too_large');
    const garbled = await raw(
      service,
      `POST /v1/subscriptions HTTP/1.1\r\nhost: x\r\n${KEY}content-length: abc\r\n\r\n`,
    );
    expect(garbled.status).toBe(400);
    expect(problemOf(garbled).code).toBe('bad_request');
  });

  it('counts the body limit in bytes and closes the connection after the 413, even for a chunked body that never ends', async () => {
    const service = shared;
    // 40,000 characters, 80,000 bytes in UTF-8.
    const wide = await call(service, '/v1/test-events', LIVE, { data: 'é'.repeat(40_000) });
    expect([wide.status, wide.body.code]).toEqual([413, 'body_too_large']);
    const chunk = `1000\r\n${'a'.repeat(0x1000)}\r\n`;
    for (const path of ['/v1/test-events', '/demo/receiver']) {
      // 17 chunks of 4 KiB are over 64 KiB; no last chunk is ever sent.
      const endless = await raw(
        service,
        `POST ${path} HTTP/1.1\r\nhost: x\r\n${KEY}transfer-encoding: chunked\r\n\r\n`,
        Array.from({ length: 17 }, () => chunk),
      );
      expect(endless.status).toBe(413);
      expect(problemOf(endless).code).toBe('body_too_large');
    }
    // The library's routes count in bytes too.
    const wideCreate = await call(service, '/v1/subscriptions', LIVE, {
      endpointUrl: `${receiver.url}/${'é'.repeat(40_000)}`,
      events: ['folio/*'],
    });
    expect([wideCreate.status, wideCreate.body.code]).toEqual([413, 'body_too_large']);
  });

  it('refuses a test event of the wrong shape with every error and its JSON pointer, and delivers nothing', async () => {
    const log = deliveryLog();
    const service = await startDemo({
      clock: new FakeClock(1_700_000_000_000),
      onDelivery: log.onDelivery,
    });
    try {
      await call(service, '/v1/subscriptions', LIVE, {
        endpointUrl: `${receiver.url}/shape`,
        events: ['reservation/*'],
      });
      const deep = `{"data":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
      for (const [body, codes] of [
        ['[]', ['body_not_object']],
        ['null', ['body_not_object']],
        ['5', ['body_not_object']],
        ['{"kind":5}', ['pattern_not_string']],
        ['{"kind":"reservation/*"}', ['pattern_wildcard_kind']],
        ['{"kind":"reservaton/created"}', ['unknown_topic']],
        ['{"propertyId":""}', ['invalid_property_id']],
        ['{"propertyId":"a\\r\\nb"}', ['invalid_property_id']],
        [
          '{"__proto__":{"kind":"x"},"kind":"a/b/c"}',
          ['unknown_field', 'pattern_too_many_segments'],
        ],
        [deep, ['data_too_deep']],
      ] as const) {
        const response = await fetch(`${service.url}/v1/test-events`, {
          method: 'POST',
          headers: LIVE,
          body,
        });
        expect(response.status).toBe(400);
        expect(response.headers.get('content-type')).toContain('application/problem+json');
        const problem = (await response.json()) as {
          code: string;
          errors: Array<{ code: string }>;
        };
        expect(problem.code).toBe('invalid_test_event');
        expect(problem.errors.map((e) => e.code)).toEqual(codes);
      }
      const emitted = await call(service, '/v1/test-events', LIVE, {});
      expect(emitted.body.deliveries).toHaveLength(1);
      await log.waitFor(1);
      expect(log.entries).toHaveLength(1);
    } finally {
      await service.close();
    }
  });

  it('bounds the subscriptions of an account (409) and so the fan-out; a delete makes room again', async () => {
    const log = deliveryLog();
    const service = await startDemo({
      clock: new FakeClock(1_700_000_000_000),
      onDelivery: log.onDelivery,
      maxSubscriptionsPerAccount: 2,
    });
    try {
      const body = { endpointUrl: `${receiver.url}/bounded`, events: ['folio/*'] };
      const first = await call(service, '/v1/subscriptions', LIVE, body);
      expect(first.status).toBe(201);
      expect((await call(service, '/v1/subscriptions', LIVE, body)).status).toBe(201);
      const third = await call(service, '/v1/subscriptions', LIVE, body);
      expect([third.status, third.body.code]).toEqual([409, 'subscription_limit_reached']);
      expect((await call(service, '/v1/subscriptions', DEV, body)).status).toBe(201);

      const emitted = await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      expect(emitted.body.deliveries).toHaveLength(2);
      await log.waitFor(2);

      const path = `/v1/subscriptions/${first.body.id}`;
      expect((await call(service, path, LIVE, undefined, 'DELETE')).status).toBe(204);
      expect((await call(service, '/v1/subscriptions', LIVE, body)).status).toBe(201);
      const after = await call(service, '/v1/subscriptions', LIVE);
      expect(after.body.totalItems).toBe(2);
      expect(after.body.items.map((s: { id: string }) => s.id)).not.toContain(first.body.id);
    } finally {
      await service.close();
    }
  });

  it('a subscription pointing back at the service gets a 401 per delivery, never a loop of test events', async () => {
    const log = deliveryLog();
    const service = await startDemo({
      clock: new FakeClock(1_700_000_000_000),
      onDelivery: log.onDelivery,
    });
    try {
      for (const path of ['/v1/test-events', '/v1/test-events?x-api-key=live-demo-key']) {
        await call(service, '/v1/subscriptions', LIVE, {
          endpointUrl: `${service.url}${path}`,
          events: ['folio/*'],
        });
      }
      const emitted = await call(service, '/v1/test-events', LIVE, { kind: 'folio/created' });
      expect(emitted.body.deliveries).toHaveLength(2);
      await log.waitFor(2);
      expect(log.entries.map((e) => [e.status, e.outcome])).toEqual([
        [401, 'retry'],
        [401, 'retry'],
      ]);
    } finally {
      await service.close();
    }
  });
});
