/**
 * The node:http adapter against a real node:http server on 127.0.0.1: the shared adapter suite,
 * handlers that fail (rejecting before they answer, or throwing after the headers went out), and
 * node:http2's compatibility API without TLS, called by node:http2's client.
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import {
  type ClientHttp2Session,
  connect as connectHttp2,
  createServer as createHttp2Server,
  type Http2Server,
  constants as http2Constants,
  type IncomingHttpHeaders,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { nodeRateLimit } from '../../src/adapters/node.js';
import {
  concurrency,
  createLimiter,
  FakeClock,
  type RateLimitErrorEvent,
  window,
} from '../../src/index.js';
import { adapterSuite, expectFullThrottle, type StartServer } from '../support/adapter-suite.js';
import { heldThrottle } from '../support/async-store.js';
import { send } from '../support/http-client.js';
import { closeSignal, resetWhileHeld, startResettable } from '../support/http2.js';
import { listen } from '../support/listen.js';
import { thrown } from '../support/thrown.js';

const start: StartServer = async (options, app) => {
  const limit = nodeRateLimit({
    ...options,
    identify: (req: IncomingMessage) => app.identify((name) => req.headers[name] as string),
    skip: (req) => req.url === '/health',
  });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/hold') return app.held();
    if (req.url === '/throw') throw new Error('handler failed');
    res.end('ok');
  };
  const server = createServer((req, res) => limit(req, res, () => handle(req, res)));
  return listen(server);
};

adapterSuite('node:http', start);

/** Read a response until it ends or its connection drops: status, body, whether it completed. */
function sendToClose(base: string, path: string) {
  return new Promise<{ status: number; body: string; complete: boolean }>((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body, complete: res.complete }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('node:http adapter: handlers that fail', () => {
  async function failingService() {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [concurrency(2, { name: 'throttle' })], clock });
    const events: RateLimitErrorEvent<IncomingMessage>[] = [];
    const limit = nodeRateLimit({
      limiter,
      identify: () => ({ clientId: 'c1', accountCode: 'ACME' }),
      onError: (event) => events.push(event),
    });
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      if (req.url === '/reject') throw new Error('database down');
      // Headers and part of the body are out when the handler fails.
      res.writeHead(200, { 'content-type': 'text/plain' });
      await new Promise((flushed) => res.write('first half', flushed));
      throw new Error('render failed');
    };
    const app = await listen(createServer((req, res) => limit(req, res, () => handle(req, res))));
    return { app, limiter, clock, events };
  }

  it('an async handler that rejects before answering gets a 500 with problem details, gives its lease back and is reported', async () => {
    const { app, limiter, clock, events } = await failingService();
    try {
      for (let i = 0; i < 3; i++) {
        const failed = await send(app.url, '/reject');
        expect(failed.status).toBe(500);
        expect(failed.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(JSON.parse(failed.body)).toMatchObject({ status: 500, code: 'internal_error' });
      }
      expectFullThrottle(limiter, clock, 'c1', 2);
      expect(events.map((e) => [e.phase, (e.error as Error).message])).toEqual([
        ['handler', 'database down'],
        ['handler', 'database down'],
        ['handler', 'database down'],
      ]);
    } finally {
      await app.close();
    }
  });

  it('a handler that fails after the headers were sent has its response cut short, gives its lease back and is reported', async () => {
    const { app, limiter, clock, events } = await failingService();
    try {
      for (let i = 0; i < 3; i++) {
        const cut = await sendToClose(app.url, '/late');
        expect(cut).toEqual({ status: 200, body: 'first half', complete: false });
      }
      expectFullThrottle(limiter, clock, 'c1', 2);
      expect(events.map((e) => [e.phase, (e.error as Error).message])).toEqual([
        ['handler', 'render failed'],
        ['handler', 'render failed'],
        ['handler', 'render failed'],
      ]);
    } finally {
      await app.close();
    }
  });
});

/** Serve `handle` over HTTP/2 without TLS on 127.0.0.1 and connect a client session to it. */
async function http2Service(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Http2Server; client: ClientHttp2Session; close(): Promise<void> }> {
  // The compatibility API's request and response stand in for node:http's.
  const server = createHttp2Server((req, res) =>
    handle(req as unknown as IncomingMessage, res as unknown as ServerResponse),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = connectHttp2(`http://127.0.0.1:${port}`);
  return {
    server,
    client,
    close: () =>
      new Promise<void>((resolve) => {
        client.close();
        server.close(() => resolve());
      }),
  };
}

/** One HTTP/2 request, read to the end. */
function sendHttp2(client: ClientHttp2Session, path: string) {
  return new Promise<{ headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const stream = client.request({ ':method': 'GET', ':path': path });
    let headers: IncomingHttpHeaders = {};
    let body = '';
    stream.setEncoding('utf8');
    stream.on('response', (received) => {
      headers = received;
    });
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('end', () => resolve({ headers, body }));
    stream.on('error', reject);
    stream.end();
  });
}

/** Start an HTTP/2 request that the client will reset. */
describe('node:http adapter on the node:http2 compatibility API', () => {
  it('counts :path, writes a 429 HTTP/2 accepts, and gives the lease back when the client resets a stream', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      preset: {
        name: 'h2',
        policies: [concurrency(2, { name: 'throttle' })],
        rules: [{ route: 'GET /r/{id}', policies: [window(1, '60s', { name: 'resource' })] }],
      },
      clock,
    });
    const limit = nodeRateLimit({
      limiter,
      identify: () => ({ clientId: 'c1', accountCode: 'ACME' }),
      rateLimitHeaders: true,
    });
    let holding = 0;
    let holdingNow: () => void = () => undefined;
    const service = await http2Service((req, res) =>
      limit(req, res, () => {
        if (req.url !== '/hold') return res.end('ok');
        holding++;
        holdingNow();
      }),
    );
    try {
      const first = await sendHttp2(service.client, '/r/a?x=1');
      expect(first.headers[':status']).toBe(200);
      const refused = await sendHttp2(service.client, '/r/a');
      expect(refused.headers[':status']).toBe(429);
      expect(refused.headers['retry-after']).toBe('60');
      expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(refused.headers['service-tracking-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(refused.headers.ratelimit).toContain('"resource";r=0;t=60');
      expect(refused.body).toContain('Limit hit: resource.');
      expect((await sendHttp2(service.client, '/r/b')).headers[':status']).toBe(200);
      // Both slots held, then both streams reset by the client.
      const held = new Promise<void>((resolve) => {
        holdingNow = () => holding === 2 && resolve();
      });
      const streams = [
        startResettable(service.client, '/hold'),
        startResettable(service.client, '/hold'),
      ];
      await held;
      const full = await sendHttp2(service.client, '/ok');
      expect(full.headers[':status']).toBe(429);
      expect(full.body).toContain('Limit hit: throttle.');
      // Past the block that the refusal set.
      clock.advance(1_000);
      const closed = streams.map((stream) => new Promise((resolve) => stream.on('close', resolve)));
      for (const stream of streams) stream.close(http2Constants.NGHTTP2_CANCEL);
      await Promise.all(closed);
      // The server sees the resets before it answers a later stream of the same session.
      expect((await sendHttp2(service.client, '/ok')).headers[':status']).toBe(200);
      expectFullThrottle(limiter, clock, 'c1', 2);
    } finally {
      await service.close();
    }
  });

  it('refuses a tracking id header that HTTP/2 forbids on a response, before any request', () => {
    const limiter = createLimiter({ policies: [window(1, '1s')], clock: new FakeClock(0) });
    const identify = () => ({ clientId: 'c1', accountCode: 'ACME' });
    for (const trackingIdHeader of ['Proxy-Connection', 'HTTP2-Settings']) {
      expect(
        thrown(() => nodeRateLimit({ limiter, identify, trackingIdHeader })),
        trackingIdHeader,
      ).toMatchObject({ name: 'ConfigurationError', code: 'invalid_header_name' });
    }
  });

  it('a stream reset while an asynchronous store decides gets no handler, and its lease comes back', async () => {
    const { store, limiter } = heldThrottle();
    let handled = 0;
    const limit = nodeRateLimit({
      limiter,
      identify: () => ({ clientId: 'c1', accountCode: 'ACME' }),
    });
    const stream = closeSignal();
    const service = await http2Service((req, res) => {
      res.on('close', stream.seen);
      limit(req, res, () => handled++);
    });
    try {
      await resetWhileHeld(service.client, '/hold', store, stream.closed);
      expect(handled).toBe(0);
    } finally {
      await service.close();
    }
  });
});
