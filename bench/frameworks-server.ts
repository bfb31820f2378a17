/**
 * One service of the framework benchmark, run in its own process: one framework (argv[2]) bare,
 * with this library's limiter and with its own limiter, taking turns of 50 ms under one load
 * (turns.ts). Reports its port, and on request each variant's rate, CPU per request and the time
 * its requests spent before reaching the handler, measured inside the service.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import fastifyOwnLimiter from '@fastify/rate-limit';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { createLimiter, type Limiter, presets } from 'api-conventions';
import { expressRateLimit } from 'api-conventions/express';
import { fastifyRateLimit } from 'api-conventions/fastify';
import { honoRateLimit } from 'api-conventions/hono';
import express, { type RequestHandler } from 'express';
import { rateLimit as expressOwnLimiter } from 'express-rate-limit';
import Fastify, { type FastifyInstance } from 'fastify';
import { Hono, type MiddlewareHandler } from 'hono';
import { rateLimiter as honoOwnLimiter } from 'hono-rate-limiter';
import {
  type Framework,
  type FrameworkVariant,
  frameworkVariants,
  ROUTE,
} from './frameworks-variants.js';
import { type Handler, Turns } from './turns.js';

const framework = process.argv[2] as Framework;
const SLICE_MS = 50;

// Requests spread over 10,000 clients, each under every limit, so that every request is admitted
// (as most traffic is) by every limiter: the same keys for ours and theirs.
const clients = Array.from({ length: 10_000 }, (_, i) => `client-${i}`);
let next = 0;
const nextClient = (): string => clients[next++ % clients.length] as string;
const identify = () => ({ clientId: nextClient(), accountCode: 'ACME' });
const key = () => `${nextClient()}:ACME`;

// Each variant's times from the request event to its handler, in µs (a ring of the latest).
const samples = frameworkVariants.map(() => new Float64Array(1_000_000));
const counts = frameworkVariants.map(() => 0);
const started = new WeakMap<IncomingMessage, { at: bigint; variant: number }>();
const record = (req: IncomingMessage): void => {
  const start = started.get(req);
  if (start === undefined) return;
  const ring = samples[start.variant] as Float64Array;
  ring[counts[start.variant]!++ % ring.length] = Number(process.hrtime.bigint() - start.at) / 1_000;
};

/** The Live preset's limiter, one per variant of ours, so that none shares another's keys. */
const live = (): Limiter => createLimiter({ preset: presets.live });

/** A Fastify 5 instance with `register` applied, as a node:http request listener. */
async function fastifyService(
  register?: (app: FastifyInstance) => PromiseLike<unknown>,
): Promise<Handler> {
  let listener: Handler | undefined;
  const app = Fastify({
    serverFactory: (handler) => {
      listener = handler;
      return createServer();
    },
  });
  if (register !== undefined) await register(app);
  app.get(ROUTE, (request, reply) => {
    record(request.raw);
    reply.send('ok');
  });
  await app.ready();
  return listener as Handler;
}

/** A Hono app with `middleware` on @hono/node-server, as a node:http request listener. */
function honoService(middleware?: MiddlewareHandler<{ Bindings: HttpBindings }>): Handler {
  const app = new Hono<{ Bindings: HttpBindings }>();
  if (middleware !== undefined) app.use(middleware);
  app.get(ROUTE, (c) => {
    record(c.env.incoming);
    return c.text('ok');
  });
  return getRequestListener(app.fetch);
}

/** An Express 5 app with `middleware`, as a node:http request listener. */
function expressService(middleware?: RequestHandler): Handler {
  const app = express();
  if (middleware !== undefined) app.use(middleware);
  app.get(ROUTE, (req, res) => {
    record(req);
    res.end('ok');
  });
  return app;
}

/** One variant of the framework's service. */
async function service(variant: FrameworkVariant): Promise<Handler> {
  const ours = variant.startsWith('api-conventions');
  const rateLimitHeaders =
    variant === 'api-conventions, RateLimit fields of every policy'
      ? 'all'
      : variant === 'api-conventions, RateLimit fields';
  switch (framework) {
    case 'fastify':
      if (variant === 'bare') return fastifyService();
      return fastifyService((app) =>
        ours
          ? app.register(fastifyRateLimit, { limiter: live(), identify, rateLimitHeaders })
          : app.register(fastifyOwnLimiter, { max: 3_500, timeWindow: 60_000, keyGenerator: key }),
      );
    case 'hono':
      if (variant === 'bare') return honoService();
      return honoService(
        ours
          ? honoRateLimit({ limiter: live(), identify, rateLimitHeaders })
          : honoOwnLimiter({
              windowMs: 60_000,
              limit: 3_500,
              standardHeaders: 'draft-6',
              keyGenerator: key,
            }),
      );
    case 'express':
      if (variant === 'bare') return expressService();
      return expressService(
        ours
          ? (expressRateLimit({ limiter: live(), identify, rateLimitHeaders }) as RequestHandler)
          : expressOwnLimiter({
              windowMs: 60_000,
              limit: 3_500,
              standardHeaders: 'draft-8',
              legacyHeaders: false,
              keyGenerator: key,
            }),
      );
  }
}

const handlers = await Promise.all(frameworkVariants.map(service));
const turns = new Turns(frameworkVariants, handlers, SLICE_MS);
const server = createServer((req, res) => {
  started.set(req, { at: process.hrtime.bigint(), variant: turns.serving() });
  turns.serve(req, res);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});

/** The p50 and p99 of a variant's times before its handler, in µs. */
function percentiles(variant: number): { p50: number; p99: number; samples: number } {
  const ring = samples[variant] as Float64Array;
  const n = Math.min(counts[variant]!, ring.length);
  const sorted = ring.slice(0, n).sort();
  const at = (q: number) => sorted[Math.min(n - 1, Math.floor(q * n))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), samples: n };
}

process.on('message', (message: string) => {
  if (message === 'reset') {
    counts.fill(0);
    turns.reset();
    process.send?.({ reset: true });
  } else if (message === 'stats') {
    const figures = turns.figures();
    const variants = Object.fromEntries(
      frameworkVariants.map((name, i) => [name, { ...figures[name], ...percentiles(i) }]),
    );
    process.send?.({ variants });
  }
});
