/**
 * The four supported frameworks serving one set of routes with the rate limit middleware in
 * front, on 127.0.0.1 over real HTTP, and a raw HTTP client that sends a request target exactly as
 * written (node's client and fetch would normalise backslashes and dot segments away).
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import Router from '@koa/router';
import express from 'express';
import Fastify, { type FastifyServerOptions } from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { expressRateLimit } from '../../src/adapters/express.js';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { honoRateLimit } from '../../src/adapters/hono.js';
import { koaRateLimit } from '../../src/adapters/koa.js';
import {
  type CheckingLimiter,
  createLimiter,
  FakeClock,
  type Identity,
  type LimitRequest,
  presets,
  type RateLimitOptions,
} from '../../src/index.js';
import { listen } from './listen.js';

/** One route of the application: method, and path with `:name` parameters. */
export interface AppRoute {
  readonly method: 'GET' | 'PATCH' | 'PUT';
  readonly path: string;
  /** Never answer: hold the request until the client goes (a slow handler). */
  readonly hold?: boolean;
}

/** A request that reached a handler: which route, with which parameters. */
export interface Served {
  readonly route: string;
  readonly params: Readonly<Record<string, string>>;
}

/** A framework serving the routes. */
export interface RealApp {
  readonly port: number;
  /** Every request that reached a handler, in order. */
  readonly served: Served[];
  /** Resolves once `n` requests in all reached a handler. */
  servedAtLeast(n: number): Promise<void>;
  close(): Promise<void>;
}

/** Gate options other than identify. */
export type Gate = Omit<RateLimitOptions<unknown>, 'identify'> & { identity: Identity };

function recorder() {
  const served: Served[] = [];
  let waiters: Array<{ n: number; wake: () => void }> = [];
  return {
    served,
    record(route: string, params: Record<string, string>): void {
      served.push({ route, params: { ...params } });
      const ready = waiters.filter((w) => w.n <= served.length);
      waiters = waiters.filter((w) => w.n > served.length);
      for (const w of ready) w.wake();
    },
    servedAtLeast(n: number): Promise<void> {
      return served.length >= n
        ? Promise.resolve()
        : new Promise<void>((wake) => waiters.push({ n, wake }));
    },
  };
}

const stopServer = (server: Server) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** Express 5. */
export async function startExpress(routes: readonly AppRoute[], gate: Gate): Promise<RealApp> {
  const log = recorder();
  const app = express();
  const { identity, ...options } = gate;
  app.use(expressRateLimit({ ...options, identify: () => identity }));
  for (const route of routes) {
    const method = route.method === 'GET' ? 'get' : route.method === 'PUT' ? 'put' : 'patch';
    app[method](route.path, (req, res) => {
      log.record(route.path, req.params as Record<string, string>);
      if (!route.hold) res.json({ route: route.path, params: req.params });
    });
  }
  app.use((_req, res) => {
    res.status(404).json({ route: null });
  });
  const { server } = await listen(createServer(app));
  return { port: portOf(server), ...log, close: stopServer(server) };
}

/** Fastify 5, with the router options given. */
export async function startFastify(
  routes: readonly AppRoute[],
  gate: Gate & { keyBy?: 'route' | 'url' },
  options: Pick<FastifyServerOptions, 'routerOptions'> = {},
): Promise<RealApp> {
  const log = recorder();
  const fastify = Fastify({ logger: false, ...options });
  const { identity, ...rest } = gate;
  await fastify.register(fastifyRateLimit, { ...rest, identify: () => identity });
  for (const route of routes) {
    fastify.route({
      method: route.method,
      url: route.path,
      handler: async (request) => {
        log.record(route.path, request.params as Record<string, string>);
        if (route.hold) return new Promise(() => undefined);
        return { route: route.path, params: request.params };
      },
    });
  }
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  return {
    port: portOf(fastify.server),
    ...log,
    close: async () => {
      fastify.server.closeAllConnections();
      await fastify.close();
    },
  };
}

/** Koa 3 with @koa/router. */
export async function startKoa(routes: readonly AppRoute[], gate: Gate): Promise<RealApp> {
  const log = recorder();
  const koa = new Koa();
  koa.silent = true;
  const { identity, ...options } = gate;
  koa.use(koaRateLimit<Koa.Context>({ ...options, identify: () => identity }));
  const router = new Router();
  for (const route of routes) {
    const method = route.method === 'GET' ? 'get' : route.method === 'PUT' ? 'put' : 'patch';
    router[method](route.path, async (ctx) => {
      log.record(route.path, ctx.params as Record<string, string>);
      if (route.hold) {
        await new Promise((resolve) => ctx.req.once('close', resolve));
        return;
      }
      ctx.body = { route: route.path, params: ctx.params };
    });
  }
  koa.use(router.routes());
  const { server } = await listen(createServer(koa.callback()));
  return { port: portOf(server), ...log, close: stopServer(server) };
}

/** Hono 4 on @hono/node-server. */
export async function startHono(routes: readonly AppRoute[], gate: Gate): Promise<RealApp> {
  const log = recorder();
  const hono = new Hono();
  const { identity, ...options } = gate;
  hono.use(honoRateLimit({ ...options, identify: () => identity }));
  for (const route of routes) {
    hono.on(route.method, route.path, async (c) => {
      log.record(route.path, c.req.param() as Record<string, string>);
      if (route.hold) {
        await new Promise((resolve) => c.req.raw.signal.addEventListener('abort', resolve));
        return c.text('gone');
      }
      return c.json({ route: route.path, params: c.req.param() });
    });
  }
  const { server } = await listen(createAdaptorServer({ fetch: hono.fetch }) as Server);
  return { port: portOf(server), ...log, close: stopServer(server) };
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening');
  return address.port;
}

/** What a raw request got: its status, or 0 while it is still unanswered when closed. */
export interface RawExchange {
  /** Resolves with the status once the status line arrives. */
  readonly status: Promise<number>;
  readonly socket: Socket;
}

/**
 * Send `METHOD target HTTP/1.1` exactly as written, on its own connection.
 * @param port - the server's port on 127.0.0.1
 * @param method - the method
 * @param target - the request target, byte for byte (Latin-1)
 */
export function rawRequest(port: number, method: string, target: string): RawExchange {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const status = new Promise<number>((resolve) => {
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const line = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (line !== null) resolve(Number(line[1]));
    });
    socket.on('close', () => resolve(0));
  });
  socket.write(
    Buffer.from(
      `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
      'latin1',
    ),
  );
  return { status, socket };
}

/**
 * A real limiter that records the path of each request it checks, in order; its clock moves an
 * hour between requests, so that no limit ever refuses.
 */
export function recordingLimiter(): { limiter: CheckingLimiter; seen: string[] } {
  const seen: string[] = [];
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const real = createLimiter({ preset: presets.live, clock });
  const limiter: CheckingLimiter = {
    check(request: LimitRequest, options) {
      seen.push(request.path);
      clock.advance(3_600_000);
      return real.check(request, options);
    },
  };
  return { limiter, seen };
}
