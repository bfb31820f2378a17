/**
 * A method no `Request` can carry (TRACE), sent over real HTTP to a fetch handler mounted through
 * the bridge: answered as the handler answers a method it does not serve, 405 with the `Allow` of
 * the resource, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../support/fetch-echo.js';
import { type Framework, type MountedServer, mountServer } from '../support/fetch-mount-suite.js';
import { type ServiceSetup, serviceSetup } from '../support/webhook-service.js';

// The stacks that serve a fetch handler through nodeFetchHandler.
const BRIDGED: readonly Framework[] = ['node:http', 'Express', 'Fastify', 'Koa'];

describe.each(BRIDGED)('a method fetch cannot carry, through the bridge in %s', (framework) => {
  let setup: ServiceSetup;
  let server: MountedServer;
  const failures: unknown[] = [];

  beforeAll(async () => {
    setup = serviceSetup();
    server = await mountServer(framework, setup.service, {
      onError: (error) => failures.push(error),
    });
  });
  afterAll(async () => {
    await server.close();
    await setup.service.close();
  });

  const send = (method: string, path: string, account: string | null = 'ACME', body?: string) =>
    exchange(server.url, path, {
      method,
      headers: account === null ? {} : { 'x-account': account },
      ...(body === undefined ? {} : { body }),
    });

  it('answers TRACE on a known resource 405 with its Allow, as the service answers PUT there', async () => {
    for (const path of ['/v1/subscriptions', '/v1/subscriptions/sub_1', '/v1/audit-logs']) {
      const put = await send('PUT', path);
      const trace = await send('TRACE', path);
      expect(put.status).toBe(405);
      expect(trace.status).toBe(405);
      expect(trace.headers.allow).toBe(put.headers.allow);
      expect(trace.headers['content-type']).toBe(put.headers['content-type']);
      const problem = JSON.parse(trace.body);
      expect(problem).toMatchObject({
        status: 405,
        code: 'method_not_allowed',
        title: 'Method not allowed',
        detail: `This resource answers ${put.headers.allow}, not TRACE.`,
      });
    }
    expect((await send('TRACE', '/v1/subscriptions')).headers.allow).toBe('POST, GET, HEAD');
    expect(failures).toEqual([]);
  });

  it('answers TRACE as the service answers any request it refuses first: 401 unauthenticated, 404 for no resource', async () => {
    const anonymous = await send('TRACE', '/v1/subscriptions', null);
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.body)).toMatchObject({ code: 'unauthenticated' });
    const nowhere = await send('TRACE', '/v2/nothing');
    expect(nowhere.status).toBe(404);
    expect(JSON.parse(nowhere.body)).toMatchObject({ code: 'route_not_found' });
    expect(failures).toEqual([]);
  });

  it('leaves a TRACE body unread, and never hands the service a request it did not send', async () => {
    const trace = await send('TRACE', '/v1/subscriptions', 'ACME', '{"url":"https://a.example"}');
    expect(trace.status).toBe(405);
    const listed = await send('GET', '/v1/subscriptions');
    expect(JSON.parse(listed.body).items).toEqual([]);
    expect(failures).toEqual([]);
  });
});

describe.each(['node:http', 'Express'] as const)(
  'a method fetch cannot carry, to a handler that names no Allow, in %s',
  (framework) => {
    let server: MountedServer;
    const asked: string[] = [];
    beforeAll(async () => {
      server = await mountServer(framework, async (request) => {
        asked.push(request.method);
        const { pathname } = new URL(request.url);
        if (pathname === '/cors') return new Response(null, { status: 204 });
        if (pathname === '/options') {
          return new Response(null, { status: 200, headers: { allow: 'GET, OPTIONS' } });
        }
        return new Response('ok');
      });
    });
    afterAll(() => server.close());

    it('answers 405 with the Allow the handler gives for OPTIONS, else 501, never 500', async () => {
      const named = await exchange(server.url, '/options', { method: 'TRACE' });
      expect(named.status).toBe(405);
      expect(named.headers.allow).toBe('GET, OPTIONS');
      const unnamed = await exchange(server.url, '/cors', { method: 'TRACE' });
      expect(unnamed.status).toBe(501);
      expect(unnamed.headers.allow).toBeUndefined();
      expect(JSON.parse(unnamed.body)).toMatchObject({
        status: 501,
        code: 'method_not_implemented',
      });
      expect(asked).toEqual(['OPTIONS', 'OPTIONS']);
    });
  },
);
