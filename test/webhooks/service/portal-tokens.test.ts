/**
 * Portal tokens: `service.portalToken()` signs a token with the service's `portalKey`; a request
 * with `Authorization: Bearer <token>` is the token's account until it expires (refused from its
 * expiry on), never stored server-side; a read-only token's changes are answered 403; the token
 * never appears in an answer or a report.
 */
import { createServer } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFetchHandler } from '../../../src/adapters/node.js';
import {
  type CheckOptions,
  ConfigurationError,
  createLimiter,
  FakeClock,
  type LimitRequest,
  MemorySubscriptionRepository,
  window,
} from '../../../src/index.js';
import { routeTable } from '../../../src/webhooks/service/routes.js';
import type { StartedServer } from '../../support/adapter-suite.js';
import { exchange } from '../../support/fetch-echo.js';
import { listen } from '../../support/listen.js';
import {
  call,
  closingSetup,
  repositoryWith,
  START,
  serviceSetup,
  subscriptionBody,
} from '../../support/webhook-service.js';

const KEY = 'k'.repeat(32);
const OTHER_KEY = 'o'.repeat(32);
const setup = closingSetup();
const bearer = (token: string) => ({
  account: null,
  headers: { authorization: `Bearer ${token}` },
});

describe('the portalKey option', () => {
  it('is refused with a ConfigurationError naming it when shorter than 32 bytes or no key, its text never shown', () => {
    for (const portalKey of ['s'.repeat(31), new Uint8Array(16), 42, ['k'.repeat(32)]]) {
      let thrown: unknown;
      try {
        serviceSetup({ portalKey: portalKey as string });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigurationError);
      expect((thrown as Error).message).toContain('portalKey');
      expect((thrown as Error).message).not.toContain('s'.repeat(31));
    }
  });

  it('takes a string or bytes of 32 bytes', () => {
    expect(() => setup({ portalKey: KEY })).not.toThrow();
    expect(() => setup({ portalKey: new Uint8Array(32).fill(7) })).not.toThrow();
  });

  it('left out: portalToken throws telling to set it, and a portal bearer token is answered 401', async () => {
    const { service } = setup();
    expect(() => service.portalToken({ accountCode: 'ACME' })).toThrow(ConfigurationError);
    expect(() => service.portalToken({ accountCode: 'ACME' })).toThrow(/portalKey must be given/);
    const token = setup({ portalKey: KEY }).service.portalToken({ accountCode: 'ACME' }).token;
    const answer = await call(service, 'GET', '/v1/subscriptions', bearer(token));
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('portal_token_invalid');
  });
});

describe('service.portalToken()', () => {
  it('answers the token, the portal link under basePath with the token in its fragment, and the expiry', () => {
    const { service } = setup({ portalKey: KEY, basePath: '/webhooks' });
    const issued = service.portalToken({ accountCode: 'ACME' });
    expect(issued.token).toMatch(/^portal\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(issued.url).toBe(`/webhooks/portal#token=${issued.token}`);
    expect(issued.expiresAt).toBe(START + 3600 * 1000);
    expect(issued.readOnly).toBe(false);
    const short = service.portalToken({ accountCode: 'ACME', ttlSeconds: 60, readOnly: true });
    expect(short.expiresAt).toBe(START + 60_000);
    expect(short.readOnly).toBe(true);
  });

  it('refuses a request with an empty account, a ttl out of 1..604800 or not whole, a non-boolean readOnly, an unknown key', () => {
    const { service } = setup({ portalKey: KEY });
    const bad: [unknown, RegExp][] = [
      [{ accountCode: '' }, /accountCode/],
      [{}, /accountCode/],
      [{ accountCode: 'A\u0000' }, /accountCode/],
      [{ accountCode: 'ACME', ttlSeconds: 0 }, /ttlSeconds/],
      [{ accountCode: 'ACME', ttlSeconds: 1.5 }, /ttlSeconds/],
      [{ accountCode: 'ACME', ttlSeconds: 604_801 }, /ttlSeconds/],
      [{ accountCode: 'ACME', readOnly: 'yes' }, /readOnly/],
      [{ accountCode: 'ACME', ttl: 60 }, /ttlSeconds/],
      ['ACME', /portalToken options/],
    ];
    for (const [request, message] of bad) {
      expect(
        () => service.portalToken(request as { accountCode: string }),
        String(request),
      ).toThrow(message);
    }
    expect(service.portalToken({ accountCode: 'ACME', ttlSeconds: 604_800 }).expiresAt).toBe(
      START + 604_800_000,
    );
  });
});

describe('a request with Authorization: Bearer <portal token>', () => {
  it("is the token's account, without identify being asked", async () => {
    let asked = 0;
    const { service } = setup({
      portalKey: KEY,
      identify: (request) => {
        asked++;
        const account = request.headers.get('x-account');
        return account === null ? undefined : { clientId: 'app', accountCode: account };
      },
    });
    await call(service, 'POST', '/v1/subscriptions', {
      account: 'OTHER',
      body: subscriptionBody(),
    });
    asked = 0;
    const { token } = service.portalToken({ accountCode: 'ACME' });
    const created = await call(service, 'POST', '/v1/subscriptions', {
      ...bearer(token),
      body: subscriptionBody({ description: 'from the portal' }),
    });
    expect(created.status).toBe(201);
    const listed = await call(service, 'GET', '/v1/subscriptions', bearer(token));
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((s: { description?: string }) => s.description)).toEqual([
      'from the portal',
    ]);
    expect(asked).toBe(0);
    // The scheme is case-insensitive.
    const lower = await call(service, 'GET', '/v1/subscriptions', {
      account: null,
      headers: { authorization: `bearer ${token}` },
    });
    expect(lower.status).toBe(200);
  });

  it('is accepted until the instant before its expiry and refused 401 portal_token_expired from it on', async () => {
    const { service, clock } = setup({ portalKey: KEY });
    const { token, expiresAt } = service.portalToken({ accountCode: 'ACME', ttlSeconds: 30 });
    clock.set(expiresAt - 1);
    expect((await call(service, 'GET', '/v1/subscriptions', bearer(token))).status).toBe(200);
    clock.set(expiresAt);
    const expired = await call(service, 'GET', '/v1/subscriptions', bearer(token));
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('portal_token_expired');
    expect(expired.body.detail).toMatch(/session expired/);
    expect(expired.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('is refused 401 portal_token_invalid when its payload is changed, or it is of another key', async () => {
    const { service } = setup({ portalKey: KEY });
    const { token } = service.portalToken({ accountCode: 'ACME', readOnly: true });
    const [, payload, mac] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const forged = Buffer.from(JSON.stringify({ ...claims, a: 'OTHER', r: false })).toString(
      'base64url',
    );
    const foreign = setup({ portalKey: OTHER_KEY }).service.portalToken({ accountCode: 'ACME' });
    for (const sent of [`portal.${forged}.${mac}`, foreign.token, 'portal.', 'portal.a.b']) {
      const answer = await call(service, 'GET', '/v1/subscriptions', bearer(sent));
      expect(answer.status, sent).toBe(401);
      expect(answer.body.code, sent).toBe('portal_token_invalid');
    }
  });

  it('of a read-only token: every changing route of the route table is answered 403 portal_read_only; reads are answered', async () => {
    const { service } = setup({ portalKey: KEY });
    const full = service.portalToken({ accountCode: 'ACME' }).token;
    const created = await call(service, 'POST', '/v1/subscriptions', {
      ...bearer(full),
      body: subscriptionBody(),
    });
    const id = created.body.id as string;
    const readOnly = service.portalToken({ accountCode: 'ACME', readOnly: true }).token;
    const routes = routeTable;
    expect(routes.some((route) => route.method !== 'GET')).toBe(true);
    for (const route of routes) {
      const path = route.path.replace('{id}', encodeURIComponent(id));
      const changing = route.method !== 'GET';
      const answer = await call(service, route.method, path, {
        ...bearer(readOnly),
        ...(changing ? { body: {} } : {}),
      });
      const what = `${route.method} ${route.path}`;
      if (changing) {
        expect(answer.status, what).toBe(403);
        expect(answer.body.code, what).toBe('portal_read_only');
      } else {
        expect(answer.status, what).not.toBe(403);
        expect(answer.status, what).toBeLessThan(500);
      }
    }
    const still = await call(service, 'GET', `/v1/subscriptions/${id}`, bearer(readOnly));
    expect(still.status).toBe(200);
  });

  it('is limited by the same limiter under the client id portal:<account>, never the token', async () => {
    const clock = new FakeClock(START);
    const inner = createLimiter({ policies: [window(2, '60s')], clock });
    const seen: LimitRequest[] = [];
    const limiter = {
      check: (request: LimitRequest, options?: CheckOptions) => {
        seen.push(request);
        return inner.check(request, options);
      },
    };
    const { service } = setup({ portalKey: KEY, limiter, clock });
    const { token } = service.portalToken({ accountCode: 'ACME' });
    for (let i = 0; i < 2; i++) {
      expect((await call(service, 'GET', '/v1/subscriptions', bearer(token))).status).toBe(200);
    }
    expect((await call(service, 'GET', '/v1/subscriptions', bearer(token))).status).toBe(429);
    expect((await call(service, 'GET', '/v1/subscriptions')).status).toBe(200);
    expect(seen[0]).toMatchObject({ clientId: 'portal:ACME', accountCode: 'ACME' });
    expect(JSON.stringify(seen)).not.toContain(token);
  });

  it('never shows the token in an answer or a report of a failure', async () => {
    const repository = repositoryWith(new MemorySubscriptionRepository(), {
      list: () => Promise.reject(new Error('store down')),
    });
    const made = setup({ portalKey: KEY, repository });
    const { token } = made.service.portalToken({ accountCode: 'ACME' });
    const failed = await call(made.service, 'GET', '/v1/subscriptions', bearer(token));
    expect(failed.status).toBe(500);
    made.clock.advance(3600 * 1000);
    const expired = await call(made.service, 'GET', '/v1/subscriptions', bearer(token));
    const tampered = await call(made.service, 'GET', '/v1/subscriptions', bearer(`${token}x`));
    expect(made.errors.length).toBeGreaterThan(0);
    const reported = made.errors.map((e) => `${String(e)} ${(e as Error).stack ?? ''}`).join('\n');
    expect(reported).not.toContain(token.slice('portal.'.length));
    for (const answer of [failed, expired, tampered]) {
      expect(answer.text).not.toContain(token.slice('portal.'.length));
      expect([...answer.headers.values()].join(' ')).not.toContain(token.slice('portal.'.length));
    }
  });

  it('any token with one character changed is refused', async () => {
    const { service } = setup({ portalKey: KEY });
    const { token } = service.portalToken({ accountCode: 'ACME' });
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: token.length - 1 }),
        fc.constantFrom(...alphabet),
        async (at, replacement) => {
          // Arrange
          fc.pre(token[at] !== replacement);
          const changed = `${token.slice(0, at)}${replacement}${token.slice(at + 1)}`;
          // Act
          const answer = await call(service, 'GET', '/v1/subscriptions', bearer(changed));
          // Assert
          expect(answer.status).toBe(401);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('portal tokens over real HTTP', () => {
  let made: ReturnType<typeof serviceSetup>;
  let server: StartedServer;
  beforeAll(async () => {
    made = serviceSetup({ portalKey: KEY });
    server = await listen(createServer(nodeFetchHandler(made.service)));
  });
  afterAll(async () => {
    await server.close();
    await made.service.close();
  });

  it('reads and changes with a token, a read-only one reads and is answered 403 on a change, an expired one 401', async () => {
    const { token } = made.service.portalToken({ accountCode: 'ACME', ttlSeconds: 60 });
    const send = (sent: string, method = 'GET', body?: string) =>
      exchange(server.url, '/v1/subscriptions', {
        method,
        headers: {
          authorization: `Bearer ${sent}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
      });
    const body = JSON.stringify(subscriptionBody());
    expect((await send(token, 'POST', body)).status).toBe(201);
    expect(JSON.parse((await send(token)).body).items).toHaveLength(1);
    const readOnly = made.service.portalToken({ accountCode: 'ACME', readOnly: true }).token;
    expect((await send(readOnly)).status).toBe(200);
    const refused = await send(readOnly, 'POST', body);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).code).toBe('portal_read_only');
    made.clock.advance(60_000);
    const expired = await send(token);
    expect(expired.status).toBe(401);
    expect(JSON.parse(expired.body).code).toBe('portal_token_expired');
  });
});
