/**
 * A request the service cannot attribute is never let through unlimited. Against the real
 * frameworks on 127.0.0.1: an `identify` that throws on every request (registered before the
 * authentication it reads) is answered 500 with problem details and reported; a request that
 * `identify` maps to nothing (no API key), or to an account type without a preset, is limited as
 * anonymous: keyed by its remote address, under the Development limits (5 per second). The
 * figures come from the specification's Development limits, not from the library.
 */
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify, { type FastifyRequest } from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { describe, expect, it } from 'vitest';
import { expressRateLimit } from '../../src/adapters/express.js';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { honoRateLimit } from '../../src/adapters/hono.js';
import { koaRateLimit } from '../../src/adapters/koa.js';
import { nodeRateLimit } from '../../src/adapters/node.js';
import {
  type AccountType,
  createLimiter,
  FakeClock,
  type Identity,
  presets,
  type RateLimitErrorEvent,
} from '../../src/index.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { listen } from '../support/listen.js';

// The specification's Development limits: 5 calls per second (the strictest window).
const DEVELOPMENT_PER_SECOND = 5;

interface Received {
  status: number;
  type: string | undefined;
  body: string;
}

/** One GET from a given loopback address (Linux routes all of 127.0.0.0/8 to lo). */
function get(base: string, path: string, headers: Record<string, string>, localAddress: string) {
  return new Promise<Received>((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { agent: false, headers, localAddress }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Send `count` requests one after another and count what reached the handler. */
async function burst(
  app: StartedServer,
  count: number,
  headers: Record<string, string> = {},
  from = '127.0.0.1',
) {
  const statuses: number[] = [];
  const responses: Received[] = [];
  for (let i = 0; i < count; i++) {
    const response = await get(app.url, '/booking/v1/reservations', headers, from);
    statuses.push(response.status);
    responses.push(response);
  }
  return { reached: statuses.filter((s) => s === 200).length, statuses, responses };
}

const accounts = new Map<string, Identity>([
  ['key-live', { clientId: 'c-live', accountCode: 'LIVE', accountType: 'live' }],
  ['key-odd', { clientId: 'c-odd', accountCode: 'ODD', accountType: 'enterprise' }],
]);

// What each adapter's identify reads: the API key header. The account store answers account
// types the limiter's presets do not know ('enterprise'): typed as they are, a cast.
const byKey = (key: string | string[] | undefined) =>
  (typeof key === 'string' ? accounts.get(key) : undefined) as Identity<AccountType> | undefined;

type Start = (events: RateLimitErrorEvent<unknown>[]) => Promise<StartedServer>;

const limiterOf = () => createLimiter({ preset: presets.byAccountType, clock: new FakeClock(0) });

const frameworks: Record<string, Start> = {
  'node:http': async (events) => {
    const limit = nodeRateLimit<IncomingMessage>({
      limiter: limiterOf(),
      identify: (req) => byKey(req.headers['x-api-key']),
      onError: (event) => void events.push(event),
    });
    return listen(createServer((req, res) => limit(req, res, () => res.end('ok'))));
  },
  Express: async (events) => {
    const app = express();
    app.use(
      expressRateLimit({
        limiter: limiterOf(),
        identify: (req) => byKey(req.headers['x-api-key']),
        onError: (event) => void events.push(event),
      }),
    );
    app.use((_req, res) => void res.type('text/plain').send('ok'));
    return listen(createServer(app));
  },
  Fastify: async (events) => {
    const fastify = Fastify({ logger: false });
    await fastify.register(fastifyRateLimit, {
      limiter: limiterOf(),
      identify: (request) => byKey(request.headers['x-api-key']),
      onError: (event) => void events.push(event),
    });
    fastify.get('/*', async (_request, reply) => reply.type('text/plain').send('ok'));
    await fastify.ready();
    return listen(fastify.server, async () => {
      fastify.server.closeAllConnections();
      await fastify.close();
    });
  },
  Koa: async (events) => {
    const koa = new Koa();
    koa.silent = true;
    koa.use(
      koaRateLimit({
        limiter: limiterOf(),
        identify: (ctx) => byKey(ctx.req.headers['x-api-key']),
        onError: (event) => void events.push(event),
      }),
    );
    koa.use(async (ctx) => {
      ctx.body = 'ok';
    });
    return listen(createServer(koa.callback()));
  },
  Hono: async (events) => {
    const hono = new Hono();
    hono.use(
      honoRateLimit({
        limiter: limiterOf(),
        identify: (c) => byKey(c.req.header('x-api-key')),
        onError: (event) => void events.push(event),
      }),
    );
    hono.get('/*', (c) => c.text('ok'));
    return listen(createAdaptorServer({ fetch: hono.fetch }) as ReturnType<typeof createServer>);
  },
};

describe('Fastify plugin registered before the authentication that identify reads', () => {
  it('answers every request 500 with problem details and reports it, instead of letting it through unlimited', async () => {
    // Arrange: identify reads what an authentication hook registered after it sets.
    const events: RateLimitErrorEvent<unknown>[] = [];
    const fastify = Fastify({ logger: false });
    fastify.decorateRequest('user', null);
    await fastify.register(fastifyRateLimit, {
      limiter: limiterOf(),
      identify: (request: FastifyRequest) => {
        const { user } = request as FastifyRequest & { user: { id: string; account: string } };
        return { clientId: user.id, accountCode: user.account };
      },
      onError: (event) => void events.push(event),
    });
    fastify.addHook('onRequest', async (request) => {
      (request as FastifyRequest & { user: unknown }).user = { id: 'c1', account: 'ACME' };
    });
    fastify.get('/*', async () => 'ok');
    await fastify.ready();
    const app = await listen(fastify.server, async () => {
      fastify.server.closeAllConnections();
      await fastify.close();
    });
    try {
      // Act
      const { reached, responses } = await burst(app, 30);
      // Assert: on main 30 of 30 reached the handler; none may.
      expect(reached).toBe(0);
      for (const response of responses) {
        expect(response.status).toBe(500);
        expect(response.type).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(response.body)).toMatchObject({ status: 500 });
        // The integrator's error stays in the report, not in the response.
        expect(response.body).not.toContain('Cannot read');
      }
      expect(events).toHaveLength(30);
      expect(events.every((e) => e.phase === 'identify' && e.failure === 'closed')).toBe(true);
    } finally {
      await app.close();
    }
  });

  it("lets such requests through unlimited only when told so by name (onIdentifyError: 'allow'), reported", async () => {
    const events: RateLimitErrorEvent<unknown>[] = [];
    const fastify = Fastify({ logger: false });
    await fastify.register(fastifyRateLimit, {
      limiter: limiterOf(),
      identify: () => {
        throw new Error('no user yet');
      },
      onIdentifyError: 'allow',
      onError: (event) => void events.push(event),
    });
    fastify.get('/*', async () => 'ok');
    await fastify.ready();
    const app = await listen(fastify.server, async () => {
      fastify.server.closeAllConnections();
      await fastify.close();
    });
    try {
      const { reached } = await burst(app, 10);
      expect(reached).toBe(10);
      expect(events.map((e) => [e.phase, e.failure])).toEqual(
        Array.from({ length: 10 }, () => ['identify', 'open']),
      );
    } finally {
      await app.close();
    }
  });
});

for (const [name, start] of Object.entries(frameworks)) {
  describe(`${name} adapter with requests identify cannot attribute`, () => {
    it('limits requests without an API key as anonymous, by remote address, under the Development limits', async () => {
      const events: RateLimitErrorEvent<unknown>[] = [];
      const app = await start(events);
      try {
        // Act: 30 requests with no key from one address, then 30 from another.
        const first = await burst(app, 30);
        const other = await burst(app, 30, {}, '127.0.0.2');
        // Assert: on main 30 of 30 reached the handler; Development allows 5 per second to each.
        expect(first.reached).toBe(DEVELOPMENT_PER_SECOND);
        expect(first.statuses.slice(DEVELOPMENT_PER_SECOND).every((s) => s === 429)).toBe(true);
        expect(other.reached).toBe(DEVELOPMENT_PER_SECOND);
        // A request with no identity is expected traffic, not a failure: nothing is reported.
        expect(events).toEqual([]);
        // An attributed live client is counted on its own, under Live limits.
        const live = await burst(app, 30, { 'x-api-key': 'key-live' });
        expect(live.reached).toBe(30);
      } finally {
        await app.close();
      }
    });

    it('limits an account type without a preset as anonymous too, and reports it', async () => {
      const events: RateLimitErrorEvent<unknown>[] = [];
      const app = await start(events);
      try {
        const { reached } = await burst(app, 30, { 'x-api-key': 'key-odd' }, '127.0.0.3');
        // On main 30 of 30 reached the handler.
        expect(reached).toBe(DEVELOPMENT_PER_SECOND);
        expect(events).toHaveLength(30);
        expect(events.every((e) => e.phase === 'identify' && e.failure === 'anonymous')).toBe(true);
      } finally {
        await app.close();
      }
    });
  });
}

describe('account types in TypeScript', () => {
  it('types accountType as the keys of the presets where the limiter knows them, and as any string where not', () => {
    const limiter = createLimiter({ preset: presets.byAccountType, clock: new FakeClock(0) });
    const gold = { clientId: 'c', accountCode: 'A', method: 'GET', path: '/' } as const;
    // At run time the limiter refuses it; the compiler refuses it first (tsc checks this file).
    expect(() =>
      // @ts-expect-error 'gold' is not an account type of presets.byAccountType
      limiter.check({ ...gold, accountType: 'gold' }),
    ).toThrow(/has no preset/);
    const options = {
      limiter,
      identify: (): Identity<'gold'> => ({ clientId: 'c', accountCode: 'A', accountType: 'gold' }),
    };
    // @ts-expect-error identify must answer one of the presets' account types
    expect(() => nodeRateLimit(options)).not.toThrow();
    expect(() =>
      nodeRateLimit({
        limiter,
        identify: () => ({ clientId: 'c', accountCode: 'A', accountType: 'trial' }),
        // @ts-expect-error the anonymous account type is one of the presets' too
        anonymous: { accountType: 'gold' },
      }),
    ).not.toThrow();
    // A single preset, or policies: any string goes (the limiter reads no account type).
    const single = createLimiter({ preset: presets.live, clock: new FakeClock(0) });
    expect(single.check({ ...gold, accountType: 'gold' }).allowed).toBe(true);
  });
});
