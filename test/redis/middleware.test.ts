/**
 * The Redis store behind the node:http middleware, with both clients: with `failMode: 'reject'` the
 * middleware's own `failure` option decides what an outage means (here a 503, never a 429), and
 * limiting resumes once Redis is back.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeRateLimit } from '../../src/adapters/node.js';
import type { RateLimitErrorEvent } from '../../src/http/rate-limit-gate.js';
import { createLimiter, presets } from '../../src/index.js';
import { RedisStore, RedisStoreError } from '../../src/redis/index.js';
import { clientKinds, connect, RedisServer } from '../support/redis-server.js';

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

describe.each(clientKinds)('the node:http middleware over the Redis store (%s)', (kind) => {
  it('answers 503 while Redis is down when the store rejects and the middleware fails closed, then limits again', async () => {
    // Arrange: a server of its own, a service limited through Redis.
    const redis = await RedisServer.start();
    const connection = await connect(kind, redis.port);
    const store = new RedisStore({ client: connection.client, failMode: 'reject' });
    const events: RateLimitErrorEvent<unknown>[] = [];
    const limit = nodeRateLimit({
      limiter: createLimiter({ preset: presets.development, store }),
      identify: () => ({ clientId: 'c', accountCode: 'ACME' }),
      failure: 'closed',
      onError: (event) => events.push(event),
      trackingIdOnAdmitted: true,
    });
    const service: Server = createServer((req, res) =>
      limit(req, res, () => res.writeHead(200).end('ok')),
    );
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(service.address() as AddressInfo).port}/booking/v1/x`;
    try {
      // Act and assert: limited through Redis,
      const before = await fetch(url);
      expect(before.status).toBe(200);
      expect(before.headers.get('service-tracking-id')).toBeTruthy();
      // unavailable while Redis is down (503 with problem details, not a 429),
      await redis.stop();
      const during = await fetch(url);
      expect(during.status).toBe(503);
      expect(await during.json()).toMatchObject({ code: 'rate_limit_unavailable' });
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ phase: 'limiter', failure: 'closed' });
      expect(events[0]!.error).toBeInstanceOf(RedisStoreError);
      // and limited again once it is back.
      await redis.restart();
      await connection.ready();
      const after = await fetch(url);
      expect(after.status).toBe(200);
      expect(after.headers.get('service-tracking-id')).toBeTruthy();
    } finally {
      service.closeAllConnections();
      await new Promise<void>((resolve) => service.close(() => resolve()));
      await connection.close();
      await redis.stop();
    }
  });
});
