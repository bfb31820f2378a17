/**
 * The Express adapter against real Express 5 on 127.0.0.1 (the shared adapter suite), and in a
 * plain node:http stack, whose requests carry no `originalUrl`.
 */
import { createServer } from 'node:http';
import express, { type Request } from 'express';
import { describe, expect, it } from 'vitest';
import { expressRateLimit } from '../../src/adapters/express.js';
import { createLimiter, FakeClock, resourceRules, window } from '../../src/index.js';
import { adapterSuite, type StartServer } from '../support/adapter-suite.js';
import { send } from '../support/http-client.js';
import { listen } from '../support/listen.js';

const start: StartServer = async (options, app) => {
  const server = express();
  server.use(
    expressRateLimit({
      ...options,
      identify: (req: Request) => app.identify((name) => req.get(name)),
      skip: (req) => req.path === '/health',
    }),
  );
  server.get('/hold', () => app.held());
  server.get('/throw', () => {
    throw new Error('handler failed');
  });
  server.use((_req, res) => {
    res.type('text/plain').send('ok');
  });
  return listen(createServer(server));
};

adapterSuite('Express', start);

describe('Express adapter in a stack that sets no originalUrl', () => {
  it('counts the path of req.url: a per-resource limit applies to the resource requested', async () => {
    const limiter = createLimiter({
      preset: {
        name: 'custom',
        policies: [window(100, '1s')],
        rules: resourceRules([
          { route: 'GET /booking/v*/bookings/{id}', limit: 1, periodMs: 60_000 },
        ]),
      },
      clock: new FakeClock(0),
    });
    const limit = expressRateLimit({
      limiter,
      identify: () => ({ clientId: 'c1', accountCode: 'ACME' }),
    });
    // Plain node:http: the request has no originalUrl.
    const app = await listen(createServer((req, res) => limit(req, res, () => res.end('ok'))));
    try {
      expect((await send(app.url, '/booking/v1/bookings/B1')).status).toBe(200);
      const refused = await send(app.url, '/booking/v2/bookings/B1');
      expect(refused.status).toBe(429);
      expect(refused.body).toContain(
        'Limit hit: resource GET /booking/v*/bookings/{id}: 1 per 60 s.',
      );
      expect((await send(app.url, '/booking/v1/bookings/B2')).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
