/**
 * The reference service under hostile input over real HTTP: request targets that are no path, a
 * lying Host header, methods a path does not take, what node:http cannot parse, bodies too large
 * or never ending, test events of the wrong shape, replays of what is not there or with a bad
 * since, too many subscriptions, a subscription that points back at the service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoService } from '../../examples/service.js';
import { FakeClock } from '../../src/index.js';
import {
  call,
  DEV,
  deliveryLog,
  demoStarter,
  LIVE,
  problemOf,
  raw,
} from '../support/demo-service.js';
import { startReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const { start: startDemo, cleanup } = demoStarter();
afterAll(cleanup);

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

describe('reference service under hostile input', () => {
  const KEY = 'x-api-key: live-demo-key\r\n';
  // The tests of the HTTP surface share one service (none reads what another stores): each start
  // of the embedded PostgreSQL takes seconds.
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
      ['PUT', '/v1/subscriptions', 'POST, GET, HEAD'],
      ['OPTIONS', '/v1/audit-logs', 'GET, HEAD'],
      ['POST', '/v1/subscriptions/some-id', 'GET, PATCH, DELETE, HEAD'],
      ['GET', '/v1/subscriptions/some-id/secret/rotate', 'POST'],
      ['GET', '/v1/subscriptions/some-id/replay', 'POST'],
      ['PUT', '/v1/messages/msg_1/replay', 'POST'],
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
      ['GET', '/demo/receiver/gone', 'POST'],
    ] as const) {
      const key = path.startsWith('/demo/') ? '' : KEY;
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
      '/v1/subscriptions, /v1/subscriptions/{id}, /v1/subscriptions/{id}/secret/rotate, /v1/subscriptions/{id}/attempts, /v1/subscriptions/{id}/replay, /v1/messages/{messageId}/replay, /v1/audit-logs, /v1/test-events, /demo/receiver, /demo/receiver/gone,',
    );
    const messages = await call(service, '/v1/messages', LIVE);
    expect([messages.status, messages.body.code]).toEqual([404, 'not_found']);
    const noRoute = await call(service, '/v1/subscriptions/', LIVE);
    expect([noRoute.status, noRoute.body.code]).toEqual([404, 'route_not_found']);
  });

  it('answers the replay routes with problem details, never a 500: messages and subscriptions not there or another account’s, U+0000, malformed and huge ids, wrong methods, bad bodies and a bad since', async () => {
    const service = shared;
    clock.advance(1_000); // a second of its own for the Development client's 5 a second
    const created = await call(service, '/v1/subscriptions', LIVE, {
      endpointUrl: `${receiver.url}/replays`,
      events: ['reservation/*'],
    });
    const { id } = created.body;
    const emitted = await call(service, '/v1/test-events', LIVE, { kind: 'reservation/created' });
    expect(emitted.body.deliveries).toEqual([id]);
    const message = emitted.body.id as string;
    const since = '1970-01-01T00:00:00Z';
    const messageCases: Array<[string, string, number, string]> = [
      ['POST', '/v1/messages/msg_nope/replay', 404, 'message_not_found'],
      ['POST', '/v1/messages/%00/replay', 404, 'message_not_found'],
      ['POST', '/v1/messages/msg_%00x/replay', 404, 'message_not_found'],
      ['POST', '/v1/messages/%E0%A4%A/replay', 404, 'message_not_found'],
      ['POST', '/v1/messages/%ED%A0%80/replay', 404, 'message_not_found'],
      ['POST', `/v1/messages/${'m'.repeat(4000)}/replay`, 404, 'message_not_found'],
      ['POST', `/v1/messages/${'%C3%A9'.repeat(300)}/replay`, 404, 'message_not_found'],
      ['POST', '/v1/messages//replay', 404, 'route_not_found'],
      ['POST', `/v1/messages/${message}`, 404, 'route_not_found'],
      ['POST', `/v1/messages/${message}/replay/`, 404, 'route_not_found'],
      ['GET', `/v1/messages/${message}/replay`, 405, 'method_not_allowed'],
      ['DELETE', `/v1/messages/${message}/replay`, 405, 'method_not_allowed'],
    ];
    for (const [method, path, status, code] of messageCases) {
      const answer = await call(service, path, LIVE, undefined, method);
      expect([path.slice(0, 60), answer.status, answer.body.code]).toEqual([
        path.slice(0, 60),
        status,
        code,
      ]);
      expect(answer.headers.get('content-type')).toContain('application/problem+json');
    }
    // Another account's message and subscription are not there for it.
    const foreign = await call(service, `/v1/messages/${message}/replay`, DEV, undefined, 'POST');
    expect([foreign.status, foreign.body.code]).toEqual([404, 'message_not_found']);
    const theirs = await call(service, `/v1/subscriptions/${id}/replay`, DEV, { since });
    expect([theirs.status, theirs.body.code]).toEqual([404, 'subscription_not_found']);

    const replay = `/v1/subscriptions/${id}/replay`;
    const deep = `{"since":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const bodyCases: Array<[string, string, number, string, string?]> = [
      ['/v1/subscriptions/nope/replay', JSON.stringify({ since }), 404, 'subscription_not_found'],
      ['/v1/subscriptions/%00/replay', JSON.stringify({ since }), 404, 'subscription_not_found'],
      [
        `/v1/subscriptions/${'s'.repeat(4000)}/replay`,
        JSON.stringify({ since }),
        404,
        'subscription_not_found',
      ],
      [replay, '{}', 400, 'invalid_replay', 'required'],
      [replay, '[]', 400, 'invalid_replay', 'invalid_type'],
      [replay, 'null', 400, 'invalid_replay', 'invalid_type'],
      [replay, JSON.stringify(since), 400, 'invalid_replay', 'invalid_type'],
      [replay, '{"since":"yesterday"}', 400, 'invalid_replay', 'invalid_date_time'],
      [replay, '{"since":1700000000}', 400, 'invalid_replay', 'invalid_date_time'],
      [replay, '{"since":null}', 400, 'invalid_replay', 'invalid_date_time'],
      [replay, '{"since":"2026-02-30T00:00:00Z"}', 400, 'invalid_replay', 'invalid_date_time'],
      [replay, '{"since":"2020-01-01T24:00:00Z"}', 400, 'invalid_replay', 'invalid_date_time'],
      [replay, '{"since":"2020-01-01T00:00:00"}', 400, 'invalid_replay', 'invalid_date_time'],
      [
        replay,
        JSON.stringify({ since: `2020${'9'.repeat(30_000)}` }),
        400,
        'invalid_replay',
        'invalid_date_time',
      ],
      [replay, deep, 400, 'invalid_replay', 'invalid_date_time'],
      [replay, '{"since":"2999-01-01T00:00:00Z"}', 400, 'invalid_replay', 'in_future'],
      [replay, `{"since":"${since}","until":"x"}`, 400, 'invalid_replay', 'unknown_member'],
      [replay, `{"__proto__":{"since":"${since}"}}`, 400, 'invalid_replay', 'unknown_member'],
      [replay, '{"since":', 400, 'invalid_json'],
      [replay, '', 400, 'invalid_json'],
      [replay, JSON.stringify({ since: 'x'.repeat(70_000) }), 413, 'body_too_large'],
    ];
    for (const [path, body, status, code, issue] of bodyCases) {
      const response = await fetch(`${service.url}${path}`, {
        method: 'POST',
        headers: LIVE,
        body,
      });
      const answer = (await response.json()) as { code: string; errors?: Array<{ code: string }> };
      expect([body.slice(0, 40), response.status, answer.code]).toEqual([
        body.slice(0, 40),
        status,
        code,
      ]);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      if (issue !== undefined) expect(answer.errors?.map((e) => e.code)).toEqual([issue]);
    }
    const plain = await call(service, replay, { ...LIVE, 'content-type': 'text/plain' }, { since });
    expect([plain.status, plain.body.code]).toEqual([415, 'unsupported_media_type']);
    // Nothing failed: a well-formed replay is accepted and sends nothing.
    const accepted = await call(service, replay, LIVE, { since });
    expect([accepted.status, accepted.body.deliveries]).toEqual([202, 0]);
  });

  it('keeps the admin API behind its key, answers bad routes, methods, ids and queries with problem details, never a 500, and counts no admin call in the limits', async () => {
    const service = shared;
    const ADMIN = { 'x-admin-key': 'admin-demo-key' };
    const limits = '/admin/limits/demo-dev-app/DEV-ACME';
    // No key, a wrong one, a client's key, the key twice: 401, whatever the path.
    for (const headers of [
      {},
      { 'x-admin-key': 'admin-demo-key2' },
      { 'x-admin-key': 'ADMIN-DEMO-KEY' },
      { 'x-admin-key': '' },
      { 'x-api-key': 'admin-demo-key' },
      { 'x-api-key': 'live-demo-key', authorization: 'Basic admin-demo-key' },
    ]) {
      for (const path of [limits, '/metrics', '/admin', '/admin/overrides/demo-dev-app']) {
        const refused = await call(service, path, headers);
        expect([path, refused.status, refused.body.code]).toEqual([path, 401, 'unauthenticated']);
      }
    }
    const twice = await raw(
      service,
      `GET ${limits} HTTP/1.1\r\nhost: x\r\nx-admin-key: admin-demo-key\r\nx-admin-key: admin-demo-key\r\nconnection: close\r\n\r\n`,
    );
    expect([twice.status, problemOf(twice).code]).toEqual([401, 'unauthenticated']);
    const bearer = await call(service, limits, { authorization: 'Bearer admin-demo-key' });
    expect(bearer.status).toBe(200);
    // Paths the admin API does not serve, and methods it does not take.
    for (const path of [
      '/admin',
      '/admin/',
      '/admin/limits',
      '/admin/limits/demo-dev-app',
      '/admin/limits/demo-dev-app/DEV-ACME/x',
      '/admin/overrides',
      '/admin/overrides/demo-dev-app/DEV-ACME',
      '/metrics/',
    ]) {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const missing = await call(service, path, ADMIN, undefined, method);
        expect([path, method, missing.status, missing.body.code]).toEqual([
          path,
          method,
          404,
          'not_found',
        ]);
      }
    }
    for (const [method, path, allow] of [
      ['POST', limits, 'GET, DELETE, HEAD'],
      ['PUT', limits, 'GET, DELETE, HEAD'],
      ['PATCH', limits, 'GET, DELETE, HEAD'],
      ['POST', '/metrics', 'GET, HEAD'],
      ['DELETE', '/metrics', 'GET, HEAD'],
    ] as const) {
      const refused = await call(service, path, ADMIN, undefined, method);
      expect([method, path, refused.status, refused.body.code]).toEqual([
        method,
        path,
        405,
        'method_not_allowed',
      ]);
      expect(refused.headers.get('allow')).toBe(allow);
    }
    // Ids and queries: each a 400 with its code.
    for (const [method, path, code] of [
      ['GET', '/admin/limits//DEV-ACME', 'invalid_client_id'],
      ['DELETE', '/admin/limits/demo-dev-app/', 'invalid_account_code'],
      ['GET', `/admin/limits/${'c'.repeat(257)}/DEV-ACME`, 'invalid_client_id'],
      ['DELETE', `/admin/limits/demo-dev-app/${'%41'.repeat(257)}`, 'invalid_account_code'],
      ['GET', '/admin/limits/%E0%A4%A/DEV-ACME', 'invalid_path_encoding'],
      ['GET', '/admin/limits/%ZZ/DEV-ACME', 'invalid_path_encoding'],
      ['GET', `${limits}?cost=2`, 'unknown_parameter'],
      ['GET', `${limits}?method=GET&method=POST`, 'repeated_parameter'],
      ['GET', `${limits}?accountType=enterprise`, 'invalid_account_type'],
      ['GET', `${limits}?accountType=__proto__`, 'invalid_account_type'],
      ['GET', `${limits}?method=GE%20T`, 'invalid_method'],
      ['GET', `${limits}?method=`, 'invalid_method'],
      ['DELETE', `${limits}?path=/booking/v1/bookings/B1`, 'invalid_request'],
      ['DELETE', `${limits}?method=GET&path=/v1/subscriptions`, 'invalid_path'],
    ] as const) {
      const refused = await call(service, path, ADMIN, undefined, method);
      expect([method, path.slice(0, 80), refused.status, refused.body.code]).toEqual([
        method,
        path.slice(0, 80),
        400,
        code,
      ]);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
    }
    // A control character or an id the demo does not know is peeked at like any other.
    const odd = await call(service, '/admin/limits/%00/%E2%9C%93?accountType=live', ADMIN);
    expect([odd.status, odd.body.clientId, odd.body.accountType]).toEqual([200, '\u0000', 'live']);
    expect(odd.body.decision).toEqual({ allowed: true });
    const head = await fetch(`${service.url}/metrics`, { method: 'HEAD', headers: ADMIN });
    expect([head.status, await head.text()]).toEqual([200, '']);
    expect(head.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');

    // Admin calls count in no client's limits, even with the client's key on them.
    clock.advance(600_000);
    const reset = await call(service, limits, { ...ADMIN, ...DEV }, undefined, 'DELETE');
    expect(reset.status).toBe(200);
    for (let i = 0; i < 10; i++) {
      expect((await call(service, limits, { ...ADMIN, ...DEV })).status).toBe(200);
      expect((await call(service, '/metrics', { ...ADMIN, ...DEV })).status).toBe(200);
    }
    const peeked = await call(service, `${limits}?path=/booking/v1/reservations`, ADMIN);
    expect(peeked.body.statuses).toContainEqual({
      policy: 'global: 5 per 1 s',
      remaining: 5,
      resetAfterMs: 0,
    });
    const burst: number[] = [];
    for (let i = 0; i < 6; i++)
      burst.push((await call(service, '/booking/v1/reservations', DEV)).status);
    expect(burst).toEqual([200, 200, 200, 200, 200, 429]);
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
