/**
 * One fetch handler, the echo, mounted in node:http, Express, Fastify, Koa (through
 * `nodeFetchHandler`) and Hono (as it is), each over real HTTP on 127.0.0.1: what the handler
 * receives and what the client gets back must be the same in all five.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Echo, type Echoed, echoHandler, exchange, startBody } from '../support/fetch-echo.js';
import {
  FRAMEWORKS,
  type MountedServer,
  mountedServers,
  mountServer,
} from '../support/fetch-mount-suite.js';

const MiB = 1024 * 1024;

// @hono/node-server replaces the global Request and Response with its own for good when it starts
// a server: node:http runs once more after Hono, so that the bridge meets both.
const MOUNTINGS = [
  ...FRAMEWORKS.map((framework) => [framework, ''] as const),
  ['node:http', ", after @hono/node-server replaced fetch's globals"] as const,
];

describe.each(MOUNTINGS)('a fetch handler mounted in %s%s', (framework) => {
  let echo: Echo;
  let server: MountedServer;
  const failures: unknown[] = [];

  beforeAll(async () => {
    echo = echoHandler();
    server = await mountServer(framework, echo.fetch, { onError: (error) => failures.push(error) });
  });
  afterAll(() => server.close());

  const echoed = (body: string) => JSON.parse(body) as Echoed;

  it('hands over a GET with its path, query, origin and headers, and no body', async () => {
    const received = await exchange(server.url, '/v1/subscriptions?pageNumber=2&q=a%20b', {
      headers: { 'x-api-key': 'k1' },
    });
    expect(received.status).toBe(200);
    const request = echoed(received.body);
    expect(request).toMatchObject({
      method: 'GET',
      target: '/v1/subscriptions?pageNumber=2&q=a%20b',
      origin: server.url,
      body: '',
      hasBody: false,
    });
    expect(request.headers['x-api-key']).toBe('k1');
    expect(request.headers.host).toBe(new URL(server.url).host);
  });

  it('streams a 1 MiB JSON body through whole', async () => {
    const body = JSON.stringify({ data: 'x'.repeat(MiB) });
    const received = await exchange(server.url, '/v1/subscriptions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const request = echoed(received.body);
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['content-length']).toBe(String(body.length));
    expect(request.body).toBe(body);
  });

  it('hands over a chunked body sent without a Content-Length', async () => {
    const pieces = ['{"events":', '["booking.created",', '"booking.cancelled"]}'];
    const received = await exchange(server.url, '/v1/subscriptions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: pieces,
    });
    const request = echoed(received.body);
    expect(request.headers['transfer-encoding']).toBe('chunked');
    expect(request.headers['content-length']).toBeUndefined();
    expect(request.body).toBe(pieces.join(''));
  });

  it('hands over a PATCH with its body', async () => {
    const body = '{"status":"disabled"}';
    const received = await exchange(server.url, '/v1/subscriptions/s1', {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body,
    });
    expect(echoed(received.body)).toMatchObject({ method: 'PATCH', body, hasBody: true });
  });

  it('hands over a body sent without a content type', async () => {
    const received = await exchange(server.url, '/v1/raw', { method: 'PUT', body: 'as sent' });
    expect(echoed(received.body)).toMatchObject({ method: 'PUT', body: 'as sent', hasBody: true });
  });

  it('answers a DELETE with 204 and no body', async () => {
    const received = await exchange(server.url, '/no-content', { method: 'DELETE' });
    expect(received.status).toBe(204);
    expect(received.body).toBe('');
  });

  it('answers a HEAD with the head alone', async () => {
    const received = await exchange(server.url, '/v1/subscriptions', { method: 'HEAD' });
    expect(received.status).toBe(200);
    expect(received.headers['content-type']).toContain('application/json');
    expect(received.body).toBe('');
  });

  it('keeps a non-ASCII path and an encoded slash as sent', async () => {
    const target = '/v1/caf%C3%A9/a%2Fb?name=%C3%A9t%C3%A9';
    const request = echoed((await exchange(server.url, target)).body);
    expect(request.target).toBe(target);
    const url = new URL(request.target, 'http://x');
    expect(url.pathname.split('/').map(decodeURIComponent)).toEqual(['', 'v1', 'café', 'a/b']);
    expect(url.searchParams.get('name')).toBe('été');
  });

  it('joins a repeated request header as fetch does', async () => {
    const received = await exchange(server.url, '/headers', {
      headers: { 'x-many': ['a', 'b'], accept: ['application/json', 'text/plain'] },
    });
    const { headers } = echoed(received.body);
    expect(headers['x-many']).toBe('a, b');
    expect(headers.accept).toBe('application/json, text/plain');
  });

  it('sends every set-cookie header of the response', async () => {
    const received = await exchange(server.url, '/cookies');
    expect(received.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/; HttpOnly']);
    expect(received.body).toBe('cookies');
  });

  it('streams a response: the first chunk arrives before the body ends', async () => {
    const response = await fetch(`${server.url}/stream`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    await echo.streamStarted;
    // The handler holds its second chunk until this read has answered.
    let text = '';
    while (!text.includes('\n')) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toBe('one\n');
    echo.finishStream();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toBe('one\ntwo\n');
  });

  // Hono writes whatever its handler answers: an answer that is no Response is the bridge's to catch.
  const failing =
    framework === 'Hono' ? ['/throw', '/reject'] : ['/throw', '/reject', '/not-a-response'];
  it.each(failing)(
    'answers a handler that fails (%s) with a 500 problem and reports it',
    async (path) => {
      failures.length = 0;
      const received = await exchange(server.url, path);
      expect(received.status).toBe(500);
      expect(received.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(JSON.parse(received.body)).toMatchObject({ status: 500, code: 'internal_error' });
      expect(failures).toHaveLength(1);
    },
  );

  it("aborts the handler's signal when the client goes mid-body, and serves on", async () => {
    const socket = await startBody(server.url, '/hold-body', MiB, Buffer.alloc(64 * 1024, 1));
    await echo.bodyStarted;
    socket.destroy();
    await echo.bodyAborted;
    const after = await exchange(server.url, '/after');
    expect(after.status).toBe(200);
    expect(echoed(after.body).target).toBe('/after');
  });
});

describe('mountedServers', () => {
  it('serves one handler in all five at once, each on a port of its own, alike', async () => {
    const servers = await mountedServers(echoHandler().fetch);
    try {
      expect(servers.map((server) => server.framework)).toEqual([...FRAMEWORKS]);
      expect(new Set(servers.map((server) => server.url)).size).toBe(FRAMEWORKS.length);
      const answers = await Promise.all(
        servers.map(async (server) => {
          const received = await exchange(server.url, '/v1/x?y=1', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"a":1}',
          });
          const { method, target, body } = JSON.parse(received.body) as Echoed;
          return { status: received.status, method, target, body };
        }),
      );
      for (const answer of answers) {
        expect(answer).toEqual({
          status: 200,
          method: 'POST',
          target: '/v1/x?y=1',
          body: '{"a":1}',
        });
      }
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });
});
