/**
 * Anonymous requests behind a proxy, over real HTTP: Express with `trust proxy` and Fastify with
 * `trustProxy` read the client from X-Forwarded-For, and the many addresses one client holds (an
 * IPv6 /64 or /56, the spellings of one IPv4 address) share the Development preset's 5 calls per
 * second. The clock is a FakeClock that never moves: every request falls in one second.
 */
import { createServer } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expressRateLimit } from '../../src/adapters/express.js';
import { fastifyRateLimit } from '../../src/adapters/fastify.js';
import { nodeRateLimit } from '../../src/adapters/node.js';
import { createLimiter, FakeClock, presets } from '../../src/index.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { send } from '../support/http-client.js';
import { listen } from '../support/listen.js';

/** Development, the strictest preset, limits anonymous requests: 5 per second. */
const limiterOf = () => createLimiter({ preset: presets.byAccountType, clock: new FakeClock(0) });

const anonymous = () => undefined;

type Start = (ipv6Subnet?: number) => Promise<StartedServer>;

const startExpress: Start = async (ipv6Subnet) => {
  const app = express();
  app.set('trust proxy', true);
  app.use(
    expressRateLimit({
      limiter: limiterOf(),
      identify: anonymous,
      ...(ipv6Subnet === undefined ? {} : { anonymous: { ipv6Subnet } }),
    }),
  );
  app.use((_req, res) => {
    res.type('text/plain').send('ok');
  });
  return listen(createServer(app));
};

const startFastify: Start = async (ipv6Subnet) => {
  const fastify = Fastify({ logger: false, trustProxy: true });
  await fastify.register(fastifyRateLimit, {
    limiter: limiterOf(),
    identify: anonymous,
    ...(ipv6Subnet === undefined ? {} : { anonymous: { ipv6Subnet } }),
  });
  fastify.get('/*', async (_request, reply) => reply.type('text/plain').send('ok'));
  await fastify.ready();
  return listen(fastify.server, async () => {
    fastify.server.closeAllConnections();
    await fastify.close();
  });
};

/** How many of the requests, one from each forwarded address, were admitted. */
async function admitted(app: StartedServer, forwardedFor: readonly string[]): Promise<number> {
  let count = 0;
  for (const address of forwardedFor) {
    const { status } = await send(app.url, '/things', { 'x-forwarded-for': address });
    expect([200, 429]).toContain(status);
    if (status === 200) count++;
  }
  return count;
}

const hex = (n: number): string => n.toString(16);
/** 60 addresses of the /64 2001:db8:1:2::/64. */
const ONE_64 = Array.from(
  { length: 60 },
  (_, i) => `2001:db8:1:2:${hex(i + 1)}::${hex(i * 7 + 1)}`,
);
/** One address in each of 30 /64s of the /56 2001:db8:1:200::/56. */
const ONE_56 = Array.from({ length: 30 }, (_, i) => `2001:db8:1:2${hex(i).padStart(2, '0')}::1`);
/** One IPv4 address in its three spellings, four requests each. */
const ONE_V4 = ['203.0.113.9', '::ffff:203.0.113.9', '::ffff:cb00:7109'].flatMap((a) => [
  a,
  a,
  a,
  a,
]);

for (const [name, start] of [
  ['Express with trust proxy', startExpress],
  ['Fastify with trustProxy', startFastify],
] as const) {
  describe(`anonymous requests by network: ${name}`, () => {
    it('admits 5 of 60 requests from 60 addresses of one IPv6 /64', async () => {
      const app = await start();
      try {
        expect(await admitted(app, ONE_64)).toBe(5);
      } finally {
        await app.close();
      }
    });

    it('admits 5 of 30 requests from 30 /64s of one /56', async () => {
      const app = await start();
      try {
        expect(await admitted(app, ONE_56)).toBe(5);
      } finally {
        await app.close();
      }
    });

    it('counts one IPv4 address once, however it is spelled', async () => {
      const app = await start();
      try {
        expect(await admitted(app, ONE_V4)).toBe(5);
      } finally {
        await app.close();
      }
    });

    it('with anonymous.ipv6Subnet 64, counts each /64 of a /56 apart', async () => {
      const app = await start(64);
      try {
        expect(await admitted(app, ONE_56.slice(0, 6))).toBe(6);
        expect(await admitted(app, ONE_64)).toBe(5);
      } finally {
        await app.close();
      }
    });

    it('counts two different IPv4 addresses and two /56s apart', async () => {
      const app = await start();
      try {
        const apart = ['203.0.113.9', '203.0.113.10', '2001:db8:1:200::1', '2001:db8:1:300::1'];
        expect(
          await admitted(
            app,
            apart.flatMap((a) => [a, a, a, a, a, a]),
          ),
        ).toBe(20);
      } finally {
        await app.close();
      }
    });
  });
}

describe('anonymous requests by network: node:http', () => {
  // One middleware behind two servers: on 127.0.0.1 the socket's address reads `127.0.0.1`, on a
  // dual-stack `::` the same client reads `::ffff:127.0.0.1`.
  const limit = nodeRateLimit({ limiter: limiterOf(), identify: anonymous });
  const handler = (req: Parameters<typeof limit>[0], res: Parameters<typeof limit>[1]) =>
    limit(req, res, () => res.end('ok'));
  let v4: StartedServer;
  let dual: StartedServer;
  let dualUrl: string;
  beforeAll(async () => {
    v4 = await listen(createServer(handler));
    const server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '::', resolve));
    const { port } = server.address() as { port: number };
    dualUrl = `http://127.0.0.1:${port}`;
    dual = {
      url: dualUrl,
      server,
      close: () =>
        new Promise<void>((resolve, reject) => {
          server.closeAllConnections();
          server.close((error) => (error ? reject(error) : resolve()));
        }),
    };
  });
  afterAll(async () => {
    await v4.close();
    await dual.close();
  });

  it('counts an IPv4 client once whether its socket reads it plain or IPv4-mapped', async () => {
    let count = 0;
    for (let i = 0; i < 6; i++) {
      for (const url of [v4.url, dualUrl]) {
        const { status } = await send(url, '/things');
        if (status === 200) count++;
      }
    }
    expect(count).toBe(5);
  });
});
