import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  FakeClock,
  MemorySubscriptionRepository,
  window,
} from '../../../src/index.js';
import { call, closingSetup, START, subscriptionBody } from '../../support/webhook-service.js';

const setup = closingSetup();

const PROBLEM = 'application/problem+json; charset=utf-8';

describe('createWebhookService: the subscription API', () => {
  it('POST /v1/subscriptions answers 201 with location, the stored subscription and its secret, no-store', async () => {
    const { service } = setup({ generateId: () => 'sub-1' });
    const created = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ propertyIds: ['BER'] }),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/v1/subscriptions/sub-1');
    expect(created.headers.get('cache-control')).toBe('no-store');
    const iso = new Date(START).toISOString();
    expect(created.body).toEqual({
      id: 'sub-1',
      endpointUrl: 'https://hooks.example.com/in',
      events: ['reservation/*'],
      propertyIds: ['BER'],
      signatureType: 'hmac-sha256',
      status: 'enabled',
      createdAt: iso,
      updatedAt: iso,
      secret: expect.stringMatching(/^whsec_/),
    });
  });

  it('GET /v1/subscriptions/{id} shows the subscription without its secret; propertyIds is left out when it covers every property', async () => {
    const { service } = setup({ generateId: () => 'sub-1' });
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const read = await call(service, 'GET', '/v1/subscriptions/sub-1');
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('secret');
    expect(read.body).not.toHaveProperty('propertyIds');
    expect(read.body).not.toHaveProperty('accountCode');
    expect(read.body.id).toBe('sub-1');
  });

  it("GET of a missing id and of another account's id answer the same 404", async () => {
    const { service } = setup({ generateId: () => 'sub-1' });
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const foreign = await call(service, 'GET', '/v1/subscriptions/sub-1', { account: 'OTHER' });
    const missing = await call(service, 'GET', '/v1/subscriptions/sub-2', { account: 'OTHER' });
    for (const answer of [foreign, missing]) {
      expect(answer.status).toBe(404);
      expect(answer.headers.get('content-type')).toBe(PROBLEM);
      expect(answer.body.code).toBe('subscription_not_found');
    }
  });

  it('GET /v1/subscriptions pages by page number in creation order, with totalItems, links and a Link header', async () => {
    const clock = new FakeClock(START);
    let n = 0;
    const { service } = setup({ clock, generateId: () => `s${++n}` });
    for (let i = 0; i < 5; i++) {
      await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
      clock.advance(1000);
    }
    await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
      account: 'OTHER',
    });
    const page = await call(service, 'GET', '/v1/subscriptions?pageNumber=2&pageSize=2');
    expect(page.status).toBe(200);
    expect(page.body.items.map((s: { id: string }) => s.id)).toEqual(['s3', 's4']);
    expect(page.body).toMatchObject({
      pageNumber: 2,
      pageSize: 2,
      totalItems: 5,
      endOfData: false,
    });
    expect(page.body.links.next).toBe('http://api.test/v1/subscriptions?pageNumber=3&pageSize=2');
    expect(page.headers.get('link')).toContain('rel="next"');
    const last = await call(service, 'GET', '/v1/subscriptions?pageNumber=3&pageSize=2');
    expect(last.body.items.map((s: { id: string }) => s.id)).toEqual(['s5']);
    expect(last.body.endOfData).toBe(true);
    const first = await call(service, 'GET', '/v1/subscriptions');
    expect(first.body.pageSize).toBe(20);
  });

  it('PATCH changes endpointUrl, events, propertyIds (null: every property again) and status', async () => {
    const clock = new FakeClock(START);
    const { service } = setup({ clock, generateId: () => 'sub-1' });
    await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody({ propertyIds: ['BER'] }),
    });
    clock.advance(5000);
    const changed = await call(service, 'PATCH', '/v1/subscriptions/sub-1', {
      body: {
        endpointUrl: 'https://other.example.com/hook',
        events: ['folio/created'],
        status: 'disabled',
      },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      endpointUrl: 'https://other.example.com/hook',
      events: ['folio/created'],
      propertyIds: ['BER'],
      status: 'disabled',
      updatedAt: new Date(START + 5000).toISOString(),
      createdAt: new Date(START).toISOString(),
    });
    const all = await call(service, 'PATCH', '/v1/subscriptions/sub-1', {
      body: { propertyIds: null, status: 'enabled' },
    });
    expect(all.body).not.toHaveProperty('propertyIds');
    expect(all.body.status).toBe('enabled');
  });

  it('PATCH reports every error with its pointer; an empty object and unknown fields are errors', async () => {
    const { service } = setup({ generateId: () => 'sub-1' });
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const empty = await call(service, 'PATCH', '/v1/subscriptions/sub-1', { body: {} });
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual([
      expect.objectContaining({ code: 'empty_change', path: '' }),
    ]);
    const bad = await call(service, 'PATCH', '/v1/subscriptions/sub-1', {
      body: {
        endpointUrl: 'ftp://x.example.com',
        events: ['reservation/*', 'reservation/*'],
        propertyIds: [],
        status: 'paused',
        colour: 'red',
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_subscription_change');
    const pointers = bad.body.errors.map(
      (e: { path: string; code: string }) => `${e.path} ${e.code}`,
    );
    expect(pointers).toEqual([
      '/colour unknown_field',
      '/endpointUrl url_scheme_not_allowed',
      '/events/1 duplicate_element',
      '/propertyIds empty_array',
      '/status invalid_status',
    ]);
    for (const body of [[], 'x', null, { status: 1 }, { events: null }, { endpointUrl: null }]) {
      const answer = await call(service, 'PATCH', '/v1/subscriptions/sub-1', { body });
      expect(answer.status).toBe(400);
    }
  });

  it("PATCH, DELETE and rotate of another account's id answer 404 and change nothing", async () => {
    const { service, repository } = setup({ generateId: () => 'sub-1' });
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const as = { account: 'OTHER' };
    const patched = await call(service, 'PATCH', '/v1/subscriptions/sub-1', {
      ...as,
      body: { status: 'disabled' },
    });
    const deleted = await call(service, 'DELETE', '/v1/subscriptions/sub-1', as);
    const rotated = await call(service, 'POST', '/v1/subscriptions/sub-1/secret/rotate', as);
    for (const answer of [patched, deleted, rotated]) expect(answer.status).toBe(404);
    expect((await repository.get('ACME', 'sub-1'))?.status).toBe('enabled');
    expect(await repository.signingSecrets('ACME', 'sub-1', START)).toHaveLength(1);
  });

  it('DELETE answers 204 with no body, then 404', async () => {
    const { service } = setup({ generateId: () => 'sub-1' });
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const deleted = await call(service, 'DELETE', '/v1/subscriptions/sub-1');
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await call(service, 'DELETE', '/v1/subscriptions/sub-1')).status).toBe(404);
    expect((await call(service, 'GET', '/v1/subscriptions/sub-1')).status).toBe(404);
  });

  it('POST .../secret/rotate answers 200 with a new secret and when the previous ones expire, no-store', async () => {
    const { service } = setup({ generateId: () => 'sub-1', secretGracePeriodMs: 60_000 });
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    const rotated = await call(service, 'POST', '/v1/subscriptions/sub-1/secret/rotate');
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    expect(rotated.body).toEqual({
      secret: expect.stringMatching(/^whsec_/),
      previousSecretsExpireAt: new Date(START + 60_000).toISOString(),
    });
    expect(rotated.body.secret).not.toBe(created.body.secret);
  });

  it('answers 409 when the account holds maxSubscriptionsPerAccount; another account is not affected', async () => {
    const { service } = setup({ maxSubscriptionsPerAccount: 2 });
    for (let i = 0; i < 2; i++) {
      expect(
        (await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() })).status,
      ).toBe(201);
    }
    const full = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    expect(full.status).toBe(409);
    expect(full.body.code).toBe('subscription_limit_reached');
    const other = await call(service, 'POST', '/v1/subscriptions', {
      body: subscriptionBody(),
      account: 'OTHER',
    });
    expect(other.status).toBe(201);
  });

  it('answers HEAD as GET, with the same status and headers and no body', async () => {
    const { service } = setup();
    const created = await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    for (const path of [
      '/v1/subscriptions',
      `/v1/subscriptions/${created.body.id}`,
      '/v1/audit-logs',
      '/v1/subscriptions/missing',
    ]) {
      const get = await call(service, 'GET', path);
      const head = await call(service, 'HEAD', path);
      expect(head.status).toBe(get.status);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(head.text).toBe('');
    }
  });

  it('answers 405 with Allow for a wrong method, and 404 problems for unknown paths', async () => {
    const { service } = setup();
    const cases: Array<[string, string, string]> = [
      ['DELETE', '/v1/subscriptions', 'POST, GET, HEAD'],
      ['PUT', '/v1/subscriptions/x', 'GET, PATCH, DELETE, HEAD'],
      ['GET', '/v1/subscriptions/x/secret/rotate', 'POST'],
      ['HEAD', '/v1/subscriptions/x/secret/rotate', 'POST'],
      ['POST', '/v1/audit-logs', 'GET, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const answer = await call(service, method, path);
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe(allow);
      if (method === 'HEAD') expect(answer.text).toBe('');
      else expect(answer.body.code).toBe('method_not_allowed');
    }
    for (const path of [
      '/',
      '/v2/subscriptions',
      '/v1/subscriptions/',
      '/v1/subscriptions/x/y',
      '/v1/subscriptionsx',
    ]) {
      const answer = await call(service, 'GET', path);
      expect(answer.status).toBe(404);
      expect(answer.headers.get('content-type')).toBe(PROBLEM);
      expect(answer.body.code).toBe('route_not_found');
    }
  });

  it('serves under basePath and only there', async () => {
    const { service } = setup({ basePath: '/hooks', generateId: () => 'sub-1' });
    const created = await call(service, 'POST', '/hooks/v1/subscriptions', {
      body: subscriptionBody(),
    });
    expect(created.headers.get('location')).toBe('/hooks/v1/subscriptions/sub-1');
    expect((await call(service, 'GET', '/hooks/v1/subscriptions/sub-1')).status).toBe(200);
    expect((await call(service, 'GET', '/v1/subscriptions/sub-1')).status).toBe(404);
  });

  it('identify undefined answers 401; identify that throws answers a 500 problem and is reported', async () => {
    const { service } = setup();
    const anonymous = await call(service, 'GET', '/v1/subscriptions', { account: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.code).toBe('unauthenticated');
    const failure = new Error('auth down');
    const broken = setup({
      identify: () => {
        throw failure;
      },
    });
    const answer = await call(broken.service, 'GET', '/v1/subscriptions');
    expect(answer.status).toBe(500);
    expect(answer.body.code).toBe('request_not_attributed');
    expect(broken.errors).toContain(failure);
    const rejecting = setup({ identify: () => Promise.reject(failure) });
    expect((await call(rejecting.service, 'GET', '/v1/subscriptions')).status).toBe(500);
    const odd = setup({ identify: () => ({ clientId: 'c', accountCode: '' }) as never });
    expect((await call(odd.service, 'GET', '/v1/subscriptions')).status).toBe(401);
  });

  it('behind a limiter: 429 once exceeded, 401 unidentified, 500 when identify throws; the lease is given back when the response is made', async () => {
    const clock = new FakeClock(START);
    const limiter = createLimiter({ policies: [window(3, '60s')], clock });
    const { service } = setup({ limiter, clock });
    for (let i = 0; i < 3; i++) {
      expect((await call(service, 'GET', '/v1/subscriptions')).status).toBe(200);
    }
    const refused = await call(service, 'GET', '/v1/subscriptions');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect((await call(service, 'GET', '/v1/subscriptions', { account: 'OTHER' })).status).toBe(
      200,
    );
    expect((await call(service, 'GET', '/v1/subscriptions', { account: null })).status).toBe(401);
    const throwing = setup({
      limiter,
      clock,
      identify: () => {
        throw new Error('no');
      },
    });
    const failed = await call(throwing.service, 'GET', '/v1/subscriptions');
    expect(failed.status).toBe(500);
    expect(failed.body.code).toBe('request_not_attributed');
    const one = createLimiter({ policies: [concurrency(1)], clock });
    const leased = setup({ limiter: one, clock });
    for (let i = 0; i < 3; i++) {
      expect((await call(leased.service, 'GET', '/v1/subscriptions')).status).toBe(200);
    }
  });

  it('limits: RateLimit headers and a tracking id on admitted answers, as the middleware gives them; refused without a limiter or with a bad value', async () => {
    const clock = new FakeClock(START);
    const limiter = createLimiter({ policies: [window(3, '60s')], clock });
    const { service } = setup({
      limiter,
      clock,
      limits: { rateLimitHeaders: true, trackingIdOnAdmitted: true },
    });
    const admitted = await call(service, 'GET', '/v1/subscriptions');
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get('ratelimit')).toMatch(/r=2/);
    expect(admitted.headers.get('service-tracking-id')).toMatch(/\S/);
    const plain = setup({ limiter, clock });
    const without = await call(plain.service, 'GET', '/v1/subscriptions');
    expect(without.headers.get('ratelimit')).toBeNull();
    expect(() => setup({ limits: { rateLimitHeaders: true } })).toThrow(
      'limits must be given only with a limiter (pass limiter: createLimiter({ ... }) as well, or leave limits out), got an object.',
    );
    expect(() => setup({ limiter, limits: { failure: 'sometimes' as 'open' } })).toThrow(
      /limits\.failure/,
    );
  });

  it('GET /v1/audit-logs lists the account delivery log by cursor, newest first, 50 by default', async () => {
    const { service, repository } = setup();
    for (let i = 0; i < 7; i++) {
      await repository.recordAttempt('ACME', {
        id: `msg_${i}`,
        subscriptionId: 's',
        endpointUrl: 'https://hooks.example.com/in',
        attempt: 1,
        at: START + i,
        status: 200,
        outcome: 'delivered',
      });
    }
    await repository.recordAttempt('OTHER', {
      id: 'msg_other',
      subscriptionId: 'o',
      endpointUrl: 'https://hooks.example.com/in',
      attempt: 1,
      at: START,
      outcome: 'delivered',
    });
    const seen: string[] = [];
    let path = '/v1/audit-logs?limit=3';
    for (let pages = 0; pages < 10; pages++) {
      const page = await call(service, 'GET', path);
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((e: { id: string }) => e.id));
      if (page.body.endOfData) {
        expect(page.body.nextCursor).toBeNull();
        break;
      }
      path = new URL(page.body.links.next).pathname + new URL(page.body.links.next).search;
    }
    expect(seen).toEqual(['msg_6', 'msg_5', 'msg_4', 'msg_3', 'msg_2', 'msg_1', 'msg_0']);
    const first = await call(service, 'GET', '/v1/audit-logs');
    expect(first.body.limit).toBe(50);
    const tampered = await call(service, 'GET', '/v1/audit-logs?cursor=abc.def');
    expect(tampered.status).toBe(400);
    expect((await call(service, 'GET', '/v1/audit-logs?limit=501')).status).toBe(400);
    const other = await call(service, 'GET', '/v1/audit-logs', { account: 'OTHER' });
    expect(other.body.items.map((e: { id: string }) => e.id)).toEqual(['msg_other']);
  });

  it('starts on the first request when start() was not called, and answers 503 once closed', async () => {
    const repository = new MemorySubscriptionRepository();
    const { service } = setup({ repository, generateId: () => 'sub-1' });
    await call(service, 'POST', '/v1/subscriptions', { body: subscriptionBody() });
    expect(service.stats().subscriptions).toBe(1);
    await service.close();
    const closed = await call(service, 'GET', '/v1/subscriptions');
    expect(closed.status).toBe(503);
    expect(closed.body.code).toBe('service_unavailable');
    await expect(service.start()).rejects.toMatchObject({
      name: 'ConfigurationError',
      code: 'invalid_option',
      message:
        'the webhook service must be open (a closed service stays closed: make a new one with createWebhookService()), got "closed".',
    });
  });

  it('warns once at start when the repository stores secrets in plain text', async () => {
    const repository = Object.assign(new MemorySubscriptionRepository(), {
      secretsAtRest: 'plain' as const,
    });
    const warnings: string[] = [];
    const { service } = setup({ repository, onWarning: (m) => warnings.push(m) });
    await service.start();
    await service.start();
    await call(service, 'GET', '/v1/subscriptions');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/unencrypted/);
  });
});
