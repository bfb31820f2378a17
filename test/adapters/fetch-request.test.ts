/**
 * The `Request` the bridge makes, on node:http and Express over real HTTP: its origin (never built
 * from a hostile Host), the whole path under a mount path, bodies a body parser read first, and
 * bodies the handler leaves unread.
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { requestOrigin, requestTarget } from '../../src/adapters/fetch-request.js';
import {
  type FetchBridgeErrorEvent,
  type FetchHandler,
  type NodeFetchHandlerOptions,
  nodeFetchHandler,
} from '../../src/adapters/node.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { type Echoed, echoHandler, exchange } from '../support/fetch-echo.js';
import { listen } from '../support/listen.js';

const servers: StartedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(handler: FetchHandler, options?: NodeFetchHandlerOptions) {
  const server = await listen(createServer(nodeFetchHandler(handler, options)));
  servers.push(server);
  return server;
}

const echoed = (body: string) => JSON.parse(body) as Echoed;

describe('the origin of the Request URL', () => {
  it('is the Host header when it is a plain host and port', async () => {
    const { url } = await serve(echoHandler().fetch);
    const received = await exchange(url, '/a', { headers: { host: 'api.example.com:8443' } });
    expect(echoed(received.body).origin).toBe('http://api.example.com:8443');
  });

  it.each(['evil.example/x', 'user@evil.example', 'a?b', 'a#b', 'x:99999', '[::1', 'a\\b'])(
    'falls back to localhost for the Host %j, and the path stays the one sent',
    async (host) => {
      const { url } = await serve(echoHandler().fetch);
      const received = await exchange(url, '/v1/x?y=1', { headers: { host } });
      expect(echoed(received.body)).toMatchObject({
        origin: 'http://localhost',
        target: '/v1/x?y=1',
      });
    },
  );

  it('is the origin option when given, whatever the Host', async () => {
    const { url } = await serve(echoHandler().fetch, { origin: 'https://api.example.com' });
    const received = await exchange(url, '/a', { headers: { host: 'other.example' } });
    expect(echoed(received.body).origin).toBe('https://api.example.com');
  });

  it('no Host moves the path: the URL built on any Host parses and keeps the target', () => {
    const target = fc
      .array(fc.constantFrom('a', '/', '%2F', '?', '=', '&', '.', '..', '%C3%A9', '//'), {
        maxLength: 12,
      })
      .map((parts) => `/${parts.join('')}`);
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 300 }), target, (host, path) => {
        const req = { headers: { host }, socket: {} } as unknown as IncomingMessage;
        const origin = requestOrigin(req, undefined);
        const url = new URL(`${origin}${path}`);
        const expected = new URL(`http://localhost${path}`);
        expect(url.origin).toBe(origin);
        expect(`${url.pathname}${url.search}`).toBe(`${expected.pathname}${expected.search}`);
      }),
    );
  });
});

describe('the path and query of the Request URL', () => {
  it.each([
    ['/caf%C3%A9/a%2Fb?q=%20', undefined, '/caf%C3%A9/a%2Fb?q=%20'],
    ['/café/€?q=é', undefined, '/caf%C3%A9/%E2%82%AC?q=%C3%A9'],
    ['/rest', '/v1/rest', '/v1/rest'],
    ['http://proxy.example/a/b?c', undefined, '/a/b?c'],
    ['*', undefined, '/'],
  ])('%j (originalUrl %j) is sent on as %j', (url, originalUrl, expected) => {
    const req = { url, originalUrl } as unknown as IncomingMessage;
    expect(requestTarget(req)).toBe(expected);
  });
});

describe('a body that a body parser read first', () => {
  async function expressWith(parser: 'json' | 'raw' | 'urlencoded' | 'verify') {
    const { default: express } = await import('express');
    const failures: FetchBridgeErrorEvent[] = [];
    const app = express();
    if (parser === 'json') app.use(express.json());
    if (parser === 'raw') app.use(express.raw({ type: '*/*' }));
    if (parser === 'urlencoded') app.use(express.urlencoded());
    if (parser === 'verify') {
      app.use(express.json({ verify: (req, _res, buf) => Object.assign(req, { rawBody: buf }) }));
    }
    app.use(nodeFetchHandler(echoHandler().fetch, { onError: (event) => failures.push(event) }));
    const server = await listen(createServer(app));
    servers.push(server);
    return { url: server.url, failures };
  }
  const sent = '{ "events" : [ "booking.created" ] }';

  it('is JSON again after express.json(), with its new Content-Length', async () => {
    const { url } = await expressWith('json');
    const request = echoed(
      (
        await exchange(url, '/s', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: sent,
        })
      ).body,
    );
    expect(request.body).toBe('{"events":["booking.created"]}');
    expect(request.headers['content-length']).toBe(String(request.body.length));
  });

  it('is the bytes as sent after express.raw(), and after a verify hook that keeps req.rawBody', async () => {
    for (const parser of ['raw', 'verify'] as const) {
      const { url } = await expressWith(parser);
      const request = echoed(
        (
          await exchange(url, '/s', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: sent,
          })
        ).body,
      );
      expect(request.body).toBe(sent);
    }
  });

  it('is refused with a 500 and reported when the parser left no bytes or JSON (urlencoded)', async () => {
    const { url, failures } = await expressWith('urlencoded');
    const received = await exchange(url, '/s', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1',
    });
    expect(received.status).toBe(500);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ phase: 'request', outcome: 'answered' });
    expect(failures[0]?.error).toMatchObject({
      name: 'ConfigurationError',
      code: 'invalid_option',
      message:
        'nodeFetchHandler req.body of a POST request a body parser already read must be bytes, a string or parsed JSON to send on, or req.rawBody bytes or a string (mount nodeFetchHandler before the body parser, or leave its paths out of it), got an object.',
    });
  });
});

describe('under a mount path', () => {
  it('Express: hands over the whole path (originalUrl), not the one Express shortened', async () => {
    const { default: express } = await import('express');
    const app = express();
    app.use('/v1', nodeFetchHandler(echoHandler().fetch));
    const server = await listen(createServer(app));
    servers.push(server);
    expect(echoed((await exchange(server.url, '/v1/subscriptions?x=1')).body).target).toBe(
      '/v1/subscriptions?x=1',
    );
  });

  it("Fastify: serves its prefix alone, the whole path, after the parent's hooks", async () => {
    const { default: Fastify } = await import('fastify');
    const { fastifyFetchPlugin } = await import('../../src/adapters/fastify.js');
    const app = Fastify({ logger: false });
    app.addHook('onRequest', async (_request, reply) => {
      reply.raw.setHeader('x-parent-hook', 'ran');
    });
    await app.register(fastifyFetchPlugin, { handler: echoHandler().fetch, prefix: '/v1' });
    await app.ready();
    const server = await listen(app.server, async () => {
      app.server.closeAllConnections();
      await app.close();
    });
    servers.push(server);
    const body = '{ "spaced" : true }';
    const inside = await exchange(server.url, '/v1/subscriptions?x=1', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(inside.headers['x-parent-hook']).toBe('ran');
    expect(echoed(inside.body)).toMatchObject({ target: '/v1/subscriptions?x=1', body });
    expect(echoed((await exchange(server.url, '/v1')).body).target).toBe('/v1');
    expect((await exchange(server.url, '/other')).status).toBe(404);
  });
});

describe('a body the handler leaves unread', () => {
  it('of unknown length (chunked, never ending) is not drained: the answer says close and the connection closes after it', async () => {
    const { url } = await serve(async () => new Response('too large', { status: 413 }));
    const outcome = await new Promise<{ status: number; connection: string | undefined }>(
      (resolve, reject) => {
        let answer: { status: number; connection: string | undefined } | undefined;
        const req = httpRequest(`${url}/endless`, { method: 'POST' }, (res) => {
          res.resume();
          answer = { status: res.statusCode ?? 0, connection: res.headers.connection };
        });
        req.on('error', () => undefined);
        req.on('socket', (socket) => {
          // The server closes the connection: the socket closes although the body never ended.
          socket.once('close', () =>
            answer === undefined ? reject(new Error('closed before an answer')) : resolve(answer),
          );
          const chunk = Buffer.alloc(16 * 1024, 7);
          const feed = (): void => {
            if (!socket.destroyed) req.write(chunk, () => setImmediate(feed));
          };
          feed();
        });
      },
    );
    expect(outcome).toEqual({ status: 413, connection: 'close' });
  });

  it('is drained after the response, so that the connection serves its next request', async () => {
    const { url } = await serve(async (request) => {
      if (new URL(request.url).pathname === '/partly') {
        await (request.body as ReadableStream<Uint8Array>).getReader().read();
      }
      return new Response('too large', { status: 413 });
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const reused: boolean[] = [];
      for (const path of ['/unread', '/partly', '/unread']) {
        const status = await new Promise<number>((resolve, reject) => {
          const req = httpRequest(`${url}${path}`, { method: 'POST', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
          reused.push(req.reusedSocket);
          req.end(Buffer.alloc(256 * 1024, 7));
        });
        expect(status).toBe(413);
      }
      expect(reused).toEqual([false, true, true]);
    } finally {
      agent.destroy();
    }
  });
});
