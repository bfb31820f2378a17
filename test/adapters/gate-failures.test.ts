/**
 * Every adapter against its real framework on 127.0.0.1, with limiters, stores and `identify` or
 * `skip` functions that misbehave: a store whose release throws, an admitted decision without a
 * release, a native promise whose `constructor` getter throws. None of them crashes the process
 * or becomes a 429: each is reported, and the request fails open or closed as configured (a failing
 * `identify`, a bug in wiring rather than an outage, is answered 500).
 */
import { createServer, type IncomingMessage } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { describe, expect, it } from 'vitest';
import { expressRateLimit } from '../../src/adapters/express.js';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { honoRateLimit } from '../../src/adapters/hono.js';
import { koaRateLimit } from '../../src/adapters/koa.js';
import { nodeRateLimit } from '../../src/adapters/node.js';
import {
  type CheckingLimiter,
  concurrency,
  createLimiter,
  FakeClock,
  type Identity,
  type RateLimitErrorEvent,
} from '../../src/index.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { storeWhoseReleaseThrows } from '../support/async-store.js';
import { send, trackConnections } from '../support/http-client.js';
import { listen } from '../support/listen.js';
import { hostilePromise } from '../support/thrown.js';

/** What the tests vary; the adapters get it whatever their framework's request type. */
interface Setup {
  limiter: CheckingLimiter;
  failure?: 'open' | 'closed';
  identify: () => Identity | Promise<Identity>;
  skip?: () => boolean | Promise<boolean>;
  onError: (event: RateLimitErrorEvent<unknown>) => void;
}

/** Each framework with its adapter in front of a handler that answers `200 ok`. */
const frameworks: Record<string, (setup: Setup) => Promise<StartedServer>> = {
  'node:http': async (setup) => {
    const limit = nodeRateLimit<IncomingMessage>(setup);
    return listen(createServer((req, res) => limit(req, res, () => res.end('ok'))));
  },
  Express: async (setup) => {
    const app = express();
    app.use(expressRateLimit(setup));
    app.use((_req, res) => {
      res.type('text/plain').send('ok');
    });
    return listen(createServer(app));
  },
  Fastify: async (setup) => {
    const fastify = Fastify({ logger: false });
    await fastify.register(fastifyRateLimit, setup);
    fastify.get('/ok', async (_request, reply) => reply.type('text/plain').send('ok'));
    await fastify.ready();
    return listen(fastify.server, async () => {
      fastify.server.closeAllConnections();
      await fastify.close();
    });
  },
  Koa: async (setup) => {
    const koa = new Koa();
    koa.silent = true;
    koa.use(koaRateLimit(setup));
    koa.use(async (ctx) => {
      ctx.body = 'ok';
    });
    return listen(createServer(koa.callback()));
  },
  Hono: async (setup) => {
    const hono = new Hono();
    hono.use(honoRateLimit(setup));
    hono.get('/ok', (c) => c.text('ok'));
    hono.onError((_error, c) => c.text('failed', 500));
    return listen(createAdaptorServer({ fetch: hono.fetch }) as ReturnType<typeof createServer>);
  },
};

const identity: Identity = { clientId: 'c1', accountCode: 'ACME' };

/** Serve one setup, send `GET /ok`, and wait until every connection has closed. */
async function serve(
  start: (setup: Setup) => Promise<StartedServer>,
  setup: Omit<Setup, 'onError'>,
) {
  const events: RateLimitErrorEvent<unknown>[] = [];
  const app = await start({ ...setup, onError: (event) => events.push(event) });
  const connections = trackConnections(app.server);
  try {
    const response = await send(app.url, '/ok');
    await connections.idle();
    return {
      response,
      events: events.map((e) => [e.phase, e.failure, (e.error as Error).message]),
    };
  } finally {
    await app.close();
  }
}

for (const [name, start] of Object.entries(frameworks)) {
  describe(`${name} adapter with a limiter, store or identify that misbehaves`, () => {
    it("a store whose release throws: the handler's 200, no crash, and one report in the release phase", async () => {
      const store = storeWhoseReleaseThrows('store unreachable: release failed');
      const limiter = createLimiter({ policies: [concurrency(2)], store, clock: new FakeClock(0) });
      for (const failure of ['open', 'closed'] as const) {
        const { response, events } = await serve(start, {
          limiter,
          failure,
          identify: () => identity,
        });
        expect(response.status).toBe(200);
        expect(response.body).toBe('ok');
        expect(events).toEqual([['release', 'open', 'store unreachable: release failed']]);
      }
    });

    it('an admitted decision without release is the limiter failing: 200 open, 503 closed, reported', async () => {
      const limiter: CheckingLimiter = {
        check: () => ({ allowed: true, statuses: [], now: 0 }) as never,
      };
      for (const failure of ['open', 'closed'] as const) {
        const { response, events } = await serve(start, {
          limiter,
          failure,
          identify: () => identity,
        });
        expect(response.status).toBe(failure === 'open' ? 200 : 503);
        expect(events).toHaveLength(1);
        expect(events[0]?.slice(0, 2)).toEqual(['limiter', failure]);
      }
    });

    it('skip returning a native promise whose constructor getter throws: 200 open, 503 closed; identify doing so: 500 either way; reported', async () => {
      const limiter = createLimiter({ policies: [concurrency(2)], clock: new FakeClock(0) });
      for (const failure of ['open', 'closed'] as const) {
        const viaIdentify = await serve(start, {
          limiter,
          failure,
          identify: () => hostilePromise(identity),
        });
        const viaSkip = await serve(start, {
          limiter,
          failure,
          identify: () => identity,
          skip: () => hostilePromise(false),
        });
        expect(viaSkip.response.status).toBe(failure === 'open' ? 200 : 503);
        // A failing identify is no store outage: the failure mode does not apply to it.
        expect(viaIdentify.response.status).toBe(500);
        expect(viaIdentify.events).toEqual([['identify', 'closed', 'constructor getter']]);
        expect(viaSkip.events).toEqual([['skip', failure, 'constructor getter']]);
      }
    });
  });
}
