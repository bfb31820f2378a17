/**
 * The bridge itself on node:http over real HTTP: the origin it builds (never from a hostile Host),
 * bodies that a framework's parser read first, bodies the handler leaves unread, responses that
 * cannot be written, backpressure, a client that goes during a streamed response, and its options.
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { requestOrigin } from '../../src/adapters/fetch-request.js';
import {
  type FetchBridgeErrorEvent,
  type FetchHandler,
  type NodeFetchHandlerOptions,
  nodeFetchHandler,
} from '../../src/adapters/node.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { type Echoed, echoHandler, exchange } from '../support/fetch-echo.js';
import { listen } from '../support/listen.js';
import { thrown } from '../support/thrown.js';

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
    expect(String(failures[0]?.error)).toContain('mount nodeFetchHandler before the body parser');
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
    await app.register(fastifyFetchPlugin, { fetch: echoHandler().fetch, prefix: '/v1' });
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

describe('writing the Response', () => {
  it("keeps the headers a middleware set before it; the handler's win on a clash", async () => {
    const listener = nodeFetchHandler(
      () => new Response('ok', { headers: { 'content-type': 'text/plain', 'x-both': 'handler' } }),
    );
    const server = await listen(
      createServer((req, res) => {
        res.setHeader('x-before', '1');
        res.setHeader('x-both', 'middleware');
        void listener(req, res);
      }),
    );
    servers.push(server);
    const received = await exchange(server.url, '/');
    expect(received.headers).toMatchObject({
      'x-before': '1',
      'x-both': 'handler',
      'content-type': 'text/plain',
    });
  });

  it('gives a whole body a Content-Length and streams one still waiting for its source', async () => {
    const echo = echoHandler();
    const { url } = await serve(echo.fetch);
    const whole = await exchange(url, '/json');
    expect(whole.headers['content-length']).toBe(String(Buffer.byteLength(whole.body)));
    const streamed = exchange(url, '/stream');
    await echo.streamStarted;
    echo.finishStream();
    expect((await streamed).headers['transfer-encoding']).toBe('chunked');
  });

  it.each([
    ['a header node refuses', () => new Response('x', { headers: { 'x-bad': 'a\u0001b' } })],
    [
      'a body chunk that is not bytes',
      () =>
        new Response(
          new ReadableStream<unknown>({
            start: (c) => c.enqueue('text'),
          }) as ReadableStream<Uint8Array>,
        ),
    ],
    ['Response.error()', () => Response.error()],
  ])('answers %s with a 500 problem, having sent nothing of it', async (_name, make) => {
    const failures: FetchBridgeErrorEvent[] = [];
    const { url } = await serve(() => make() as Response, { onError: (e) => failures.push(e) });
    const received = await exchange(url, '/');
    expect(received.status).toBe(500);
    expect(received.headers['x-bad']).toBeUndefined();
    expect(JSON.parse(received.body)).toMatchObject({ code: 'internal_error' });
    expect(failures.map((f) => f.outcome)).toEqual(['answered']);
  });

  it('closes the connection when the body fails after its head went out', async () => {
    const failures: FetchBridgeErrorEvent[] = [];
    let fail = (_error: Error) => undefined as unknown;
    const { url } = await serve(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('first'));
              fail = (error) => controller.error(error);
            },
          }),
        ),
      { onError: (e) => failures.push(e) },
    );
    const result = await new Promise<{ status: number; body: string; complete: boolean }>(
      (resolve) => {
        const req = httpRequest(`${url}/`, { agent: false }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk;
            fail(new Error('the source failed'));
          });
          res.on('error', () => undefined);
          res.on('close', () =>
            resolve({ status: res.statusCode ?? 0, body, complete: res.complete }),
          );
        });
        req.on('error', () => undefined);
        req.end();
      },
    );
    expect(result).toEqual({ status: 200, body: 'first', complete: false });
    expect(failures).toMatchObject([{ phase: 'response', outcome: 'closed' }]);
  });

  it('waits for drain after a full buffer before it writes again, and sends the body whole', async () => {
    const chunk = new Uint8Array(64 * 1024).fill(1);
    const total = 256;
    const log: string[] = [];
    let pulled = 0;
    const listener = nodeFetchHandler(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              if (pulled++ === total) controller.close();
              else controller.enqueue(chunk);
            },
          }),
        ),
    );
    const server = await listen(
      createServer((req, res) => {
        const write = res.write.bind(res);
        res.write = ((data: Uint8Array) => {
          const ok = write(data);
          log.push(ok ? 'write' : 'full');
          return ok;
        }) as typeof res.write;
        res.on('drain', () => log.push('drain'));
        void listener(req, res);
      }),
    );
    servers.push(server);
    const received = await new Promise<number>((resolve) => {
      httpRequest(`${server.url}/`, { agent: false }, (res) => {
        let bytes = 0;
        res.on('data', (data: Buffer) => {
          bytes += data.length;
        });
        res.on('end', () => resolve(bytes));
      }).end();
    });
    expect(received).toBe(total * chunk.length);
    expect(log).toContain('full');
    // After a write that filled the buffer, the next event is the drain, never another write.
    log.forEach((event, i) => {
      if (event === 'full' && i + 1 < log.length) expect(log[i + 1]).toBe('drain');
    });
  });

  it('stops reading the body and aborts the signal when the client goes mid-response', async () => {
    let cancelled: () => void = () => undefined;
    const cancel = new Promise<void>((resolve) => {
      cancelled = resolve;
    });
    let signal: AbortSignal | undefined;
    const { url } = await serve((request) => {
      signal = request.signal;
      return new Response(
        new ReadableStream<Uint8Array>({
          pull: (controller) => controller.enqueue(new Uint8Array(1024)),
          cancel: () => {
            cancelled();
          },
        }),
      );
    });
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${url}/`, { agent: false }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end();
    });
    await cancel;
    expect(signal?.aborted).toBe(true);
  });
});

describe('failures and options', () => {
  it('answers even when onError throws, and reports on console.error without onError', async () => {
    const thrower = await serve(
      () => {
        throw new Error('failed');
      },
      {
        onError: () => {
          throw new Error('the report failed');
        },
      },
    );
    expect((await exchange(thrower.url, '/')).status).toBe(500);
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const plain = await serve(() => Promise.reject(new Error('rejected')));
      expect((await exchange(plain.url, '/x?y')).status).toBe(500);
      expect(errors.mock.calls.map((call) => call[0])).toEqual([
        'api-conventions: fetch handler failed for GET /x?y, answered 500: rejected',
      ]);
    } finally {
      errors.mockRestore();
    }
  });

  it.each([
    ['https://api.example.com/v1', 'origin must be an http or https origin'],
    ['ftp://files.example', 'origin must be an http or https origin'],
    ['not a url', 'origin must be an http or https origin'],
  ])('refuses the origin %j', (origin, message) => {
    expect(thrown(() => nodeFetchHandler(() => new Response(), { origin }))).toMatchObject({
      name: 'ConfigurationError',
      code: 'invalid_option',
      message: expect.stringContaining(message),
    });
  });

  it('refuses a handler that is no function, and names the nearest option for a misspelt one', () => {
    expect(thrown(() => nodeFetchHandler({} as unknown as FetchHandler))).toMatchObject({
      message:
        'nodeFetchHandler handler must be a function that takes a Request and answers a Response, got an object.',
    });
    const misspelt = { onErorr: () => undefined } as unknown as NodeFetchHandlerOptions;
    expect(thrown(() => nodeFetchHandler(() => new Response(), misspelt))).toMatchObject({
      message: expect.stringContaining('did you mean "onError"?'),
    });
  });
});
