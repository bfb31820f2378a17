/**
 * The Hono adapter against real Hono 4 on @hono/node-server, 127.0.0.1 (the shared adapter suite);
 * pipelined requests whose handlers wait for the client to go, on raw sockets; and Hono's own
 * `fetch`, as a Fetch-API runtime calls it, with no node request underneath.
 */
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { honoRateLimit } from '../../src/adapters/hono.js';
import { concurrency, createLimiter, FakeClock, type Identity, presets } from '../../src/index.js';
import { adapterSuite, expectFullThrottle, type StartServer } from '../support/adapter-suite.js';
import { trackConnections } from '../support/http-client.js';
import { listen } from '../support/listen.js';

const start: StartServer = async (options, app) => {
  const hono = new Hono();
  hono.use(
    honoRateLimit({
      ...options,
      identify: (c) => app.identify((name) => c.req.header(name)),
      skip: (c) => c.req.path === '/health',
    }),
  );
  hono.get('/hold', async (c) => {
    app.held();
    await new Promise((resolve) => c.req.raw.signal.addEventListener('abort', resolve));
    return c.text('gone');
  });
  hono.get('/throw', () => {
    throw new Error('handler failed');
  });
  hono.all('*', (c) => c.text('ok'));
  hono.onError((_error, c) => c.text('failed', 500));
  return listen(createAdaptorServer({ fetch: hono.fetch }) as Server);
};

adapterSuite('Hono', start);

const identity: Identity = { clientId: 'c1', accountCode: 'ACME' };

describe('Hono adapter on @hono/node-server: pipelined requests', () => {
  // Node emits no `close` for a response queued behind another when the connection closes, so
  // the queued requests' signals never abort and their handlers never return: only the socket
  // tells that the client is gone.
  for (const timing of ['sync', 'async'] as const) {
    it(`every lease comes back when the client closes the connection with the later responses unsent (${timing} identify)`, async () => {
      const clock = new FakeClock(0);
      const max = 3;
      const limiter = createLimiter({ policies: [concurrency(max, { name: 'throttle' })], clock });
      let held = 0;
      let allHeld: () => void = () => undefined;
      const holding = new Promise<void>((resolve) => {
        allHeld = resolve;
      });
      const hono = new Hono();
      hono.use(
        honoRateLimit({
          limiter,
          identify: () => (timing === 'sync' ? identity : Promise.resolve(identity)),
        }),
      );
      hono.get('/hold', async (c) => {
        if (++held === max) allHeld();
        await new Promise((resolve) => c.req.raw.signal.addEventListener('abort', resolve));
        return c.text('gone');
      });
      const app = await listen(createAdaptorServer({ fetch: hono.fetch }) as Server);
      const connections = trackConnections(app.server);
      try {
        const socket = connect(Number(new URL(app.url).port), '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write('GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(max));
        // All three hold a lease: the first one's handler waits, and two requests wait behind it.
        await holding;
        socket.destroy();
        await connections.idle();
        expectFullThrottle(limiter, clock, 'c1', max);
      } finally {
        await app.close();
      }
    });
  }
});

describe('Hono adapter on a Fetch-API runtime (no node request underneath)', () => {
  it('admits, refuses and gives leases back through app.fetch, with no bindings or with bindings named like node messages', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [concurrency(1, { name: 'throttle' })], clock });
    const hono = new Hono();
    hono.use(honoRateLimit({ limiter, identify: () => identity }));
    hono.get('/ok', (c) => c.text('ok'));
    const bindings: unknown[] = [
      undefined,
      {},
      { incoming: 'a KV namespace', outgoing: { on: 'not a function' } },
      {
        get incoming() {
          throw new Error('binding unavailable');
        },
      },
    ];
    for (const env of bindings) {
      const response = await hono.fetch(new Request('http://localhost/ok'), env as never);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('ok');
      expectFullThrottle(limiter, clock, 'c1', 1);
    }
  });
});

describe('Hono adapter: the tracking id and the RateLimit fields on every admitted response', () => {
  // Hono 4.13 drops headers set with `c.header` before the handler when the handler returns a
  // Response of its own; the middleware's must reach the client whatever the handler returns.
  const app = () => {
    const hono = new Hono();
    hono.use(
      honoRateLimit({
        limiter: createLimiter({ preset: presets.live }),
        identify: () => identity,
        rateLimitHeaders: true,
        trackingIdOnAdmitted: true,
      }),
    );
    hono.get('/text', (c) => c.text('ok'));
    hono.get('/raw', () => new Response('raw', { headers: { 'x-own': 'handler' } }));
    hono.get('/redirect', () => Response.redirect('http://127.0.0.1/elsewhere', 302));
    hono.get('/own-field', (c) => {
      c.header('ratelimit', 'set by the handler');
      return c.text('ok');
    });
    hono.get(
      '/own-field-raw',
      () => new Response('raw', { headers: { ratelimit: 'set by the handler' } }),
    );
    hono.get('/stream', (c) =>
      c.body(
        new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('streamed'));
            controller.close();
          },
        }),
      ),
    );
    hono.get('/throws', () => {
      throw new Error('handler failed');
    });
    hono.onError((_error, c) => c.text('failed', 500));
    return hono;
  };
  const paths = [
    '/text',
    '/raw',
    '/redirect',
    '/own-field',
    '/own-field-raw',
    '/stream',
    '/throws',
  ] as const;
  const statusOf = (path: string) => (path === '/redirect' ? 302 : path === '/throws' ? 500 : 200);

  function expectHeaders(path: string, headers: Headers): void {
    // The policy nearest its limit: of the Live preset's, the first with the fewest left.
    expect(headers.get('ratelimit-policy'), path).toBe('"global: 200 per 1 s";q=200;w=1');
    if (path.startsWith('/own-field')) {
      expect(headers.get('ratelimit'), path).toBe('set by the handler');
    } else expect(headers.get('ratelimit'), path).toMatch(/^"global: 200 per 1 s";r=\d+;t=\d+$/);
    expect(headers.get('service-tracking-id'), path).toMatch(/\S/);
    if (path === '/raw') expect(headers.get('x-own')).toBe('handler');
    if (path === '/redirect') expect(headers.get('location')).toBe('http://127.0.0.1/elsewhere');
  }

  it('on @hono/node-server over HTTP, whether the handler uses c.text or returns a Response', async () => {
    const server = await listen(createAdaptorServer({ fetch: app().fetch }) as Server);
    try {
      for (const path of paths) {
        const response = await fetch(`${server.url}${path}`, { redirect: 'manual' });
        expect(response.status, path).toBe(statusOf(path));
        expectHeaders(path, response.headers);
        await response.arrayBuffer();
      }
    } finally {
      await server.close();
    }
  });

  it('on a Fetch-API runtime, whether the handler uses c.text or returns a Response', async () => {
    const hono = app();
    for (const path of paths) {
      const response = await hono.fetch(new Request(`http://localhost${path}`));
      expect(response.status, path).toBe(statusOf(path));
      expectHeaders(path, response.headers);
    }
  });
});
