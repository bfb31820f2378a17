/**
 * The bridge writing a `Response` on node:http over real HTTP: headers set before it, whole and
 * streamed bodies, responses that cannot be written, backpressure, a client that goes during a
 * streamed response; and the bridge's failure reports and options.
 */
import { createServer, request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type FetchBridgeErrorEvent,
  type FetchHandler,
  type FetchTarget,
  type NodeFetchHandlerOptions,
  nodeFetchHandler,
} from '../../src/adapters/node.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { echoHandler, exchange } from '../support/fetch-echo.js';
import { listen } from '../support/listen.js';
import { thrown } from '../support/thrown.js';

const servers: StartedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(handler: FetchTarget, options?: NodeFetchHandlerOptions) {
  const server = await listen(createServer(nodeFetchHandler(handler, options)));
  servers.push(server);
  return server;
}

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

  it('calls the fetch method of an object on its object (a service whose fetch is a method)', async () => {
    class Service {
      readonly #greeting = 'served';
      async fetch(_request: Request): Promise<Response> {
        return new Response(this.#greeting);
      }
    }
    const { url } = await serve(new Service());
    expect((await exchange(url, '/')).body).toBe('served');
  });

  it('refuses a target that is neither a function nor has a fetch method, and names the nearest option for a misspelt one', () => {
    for (const target of [{}, { fetch: 'no' }, null, 'fetch']) {
      expect(thrown(() => nodeFetchHandler(target as unknown as FetchHandler))).toMatchObject({
        code: 'invalid_option',
        message: expect.stringContaining(
          'nodeFetchHandler target must be a function that takes a Request and answers a Response, or an object with such a fetch method, got',
        ),
      });
    }
    const misspelt = { onErorr: () => undefined } as unknown as NodeFetchHandlerOptions;
    expect(thrown(() => nodeFetchHandler(() => new Response(), misspelt))).toMatchObject({
      message: expect.stringContaining('did you mean "onError"?'),
    });
  });
});
