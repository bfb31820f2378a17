/**
 * The Fastify plugin reads each route once, not per request, against real Fastify 5 on
 * 127.0.0.1: the path the limiter reads is still the route Fastify matched, for routes registered
 * before and after the plugin, in prefixed children, HEAD routes Fastify adds and requests that
 * matched no route.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { routePathReader } from '../../src/adapters/fastify-route.js';
import { rawRequest, recordingLimiter } from '../support/real-routers.js';

/** The getter of `key` on `object`'s prototype chain. */
function getterOf(object: object, key: string): () => unknown {
  for (let o: object | null = object; o !== null; o = Object.getPrototypeOf(o)) {
    const getter = Object.getOwnPropertyDescriptor(o, key)?.get;
    if (getter !== undefined) return getter;
  }
  throw new Error(`no getter ${key}`);
}

describe('Fastify plugin: the route of each request', () => {
  it('is the route Fastify matched, read once per route, for routes before and after the plugin, prefixed ones, added HEAD routes and requests that matched none', async () => {
    // Arrange: a route before the plugin, one after, a prefixed child, and a count of the reads
    // of request.routeOptions (a hook before the plugin's, so that it sees the plugin's reads).
    const { limiter, seen } = recordingLimiter();
    let reads = 0;
    const fastify = Fastify({ logger: false });
    fastify.get('/before/:id', async () => 'ok');
    fastify.addHook('onRequest', (request, _reply, done) => {
      const read = getterOf(request, 'routeOptions');
      Object.defineProperty(request, 'routeOptions', {
        get() {
          reads++;
          return read.call(this);
        },
      });
      done();
    });
    await fastify.register(fastifyRateLimit, {
      limiter,
      identify: () => ({ clientId: 'c1', accountCode: 'ACME' }),
    });
    fastify.get('/after/:id', async () => 'ok');
    await fastify.register(
      async (v1) => {
        v1.get('/', async () => 'ok');
        v1.get('/bookings/:id', async () => 'ok');
      },
      { prefix: '/v1' },
    );
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    const { port } = fastify.server.address() as AddressInfo;
    const requests: Array<[method: string, target: string, status: number, path: string]> = [
      ['GET', '/before/B1', 200, '/before/B1'],
      ['GET', '/before/B2?x=1', 200, '/before/B2'],
      ['GET', '/after/a%20b', 200, '/after/a%20b'],
      ['HEAD', '/after/A1', 200, '/after/A1'],
      ['GET', '/v1', 200, '/v1'],
      ['GET', '/v1/', 200, '/v1'],
      ['HEAD', '/v1/bookings/X', 200, '/v1/bookings/X'],
      ['GET', '/v1/bookings/Y', 200, '/v1/bookings/Y'],
      ['GET', '/nowhere/1', 404, '/nowhere/1'],
      ['POST', '/before/B1', 404, '/before/B1'],
    ];
    try {
      // Act: every request three times.
      const readsAfter: number[] = [];
      for (let round = 0; round < 3; round++) {
        for (const [method, target, status] of requests) {
          expect(await rawRequest(port, method, target).status).toBe(status);
        }
        readsAfter.push(reads);
      }
      // Assert: the paths of the routes matched, each request's; the routes read in the first
      // round only, at most once per route (10 requests, 9 routes and the not-found handler).
      expect(seen).toEqual([0, 1, 2].flatMap(() => requests.map(([, , , path]) => path)));
      expect(readsAfter[0]).toBeGreaterThan(0);
      expect(readsAfter[0]).toBeLessThanOrEqual(requests.length);
      expect(readsAfter).toEqual([readsAfter[0], readsAfter[0], readsAfter[0]]);
    } finally {
      fastify.server.closeAllConnections();
      await fastify.close();
    }
  });

  it('reads request.routeOptions on every request where Fastify keeps no route context under the symbol it reads, with the same paths', () => {
    const read = routePathReader();
    let reads = 0;
    const request = (url: string | undefined, params: Record<string, string>) =>
      ({
        get routeOptions() {
          reads++;
          return { url };
        },
        params,
        [Symbol('another')]: { config: {} },
      }) as unknown as FastifyRequest;
    expect(read(request('/bookings/:id', { id: 'B 1' }))).toBe('/bookings/B%201');
    expect(read(request('/bookings/:id', { id: 'B2' }))).toBe('/bookings/B2');
    expect(read(request('/files/*', { '*': 'a/b' }))).toBeUndefined();
    expect(read(request(undefined, {}))).toBeUndefined();
    expect(reads).toBe(4);
  });
});
