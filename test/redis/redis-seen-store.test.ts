/**
 * The receiver's seen-store on a real redis-server (the shared one, a database of this file's
 * own), through ioredis and node-redis: one claim of many at once wins, handled marks and claims
 * keep their times to live in Redis, a released claim is claimable again, and two receivers on
 * one Redis run handle once for deliveries of one id sent to both at once.
 */
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createWebhookReceiver,
  FakeClock,
  generateWebhookSecret,
  isConfigurationError,
  type ReceivedWebhook,
  signWebhook,
  type WebhookSeenStore,
} from '../../src/index.js';
import { ioredisClient, nodeRedisClient, redisSeenStore } from '../../src/redis/index.js';
import type { StartedServer } from '../support/adapter-suite.js';
import { listen } from '../support/listen.js';
import { adminClient, clientKinds, connect, RedisServer } from '../support/redis-server.js';
import { type SharedRedis, sharedRedis } from '../support/shared-redis.js';
import { thrown } from '../support/thrown.js';

let shared: SharedRedis;
let ioredis: Redis;
let nodeRedis: ReturnType<typeof createClient>;
beforeAll(async () => {
  shared = await sharedRedis();
  ioredis = new Redis({ host: '127.0.0.1', port: shared.port, db: shared.db, lazyConnect: true });
  await ioredis.connect();
  nodeRedis = createClient({ url: `redis://127.0.0.1:${shared.port}/${shared.db}` });
  await nodeRedis.connect();
});
afterAll(async () => {
  ioredis.disconnect();
  await nodeRedis.quit();
  await shared.release();
});

const stores: Record<string, (prefix: string) => WebhookSeenStore> = {
  ioredis: (prefix) => redisSeenStore({ client: ioredisClient(ioredis), prefix }),
  'node-redis': (prefix) => redisSeenStore({ client: nodeRedisClient(nodeRedis), prefix }),
};

for (const [name, make] of Object.entries(stores)) {
  describe(`redisSeenStore through ${name}`, () => {
    const prefix = `seen-${name}:`;
    let seen: WebhookSeenStore;
    beforeAll(() => {
      seen = make(prefix);
    });

    it('of many claims of one id at once, exactly one is claimed; the others find it pending', async () => {
      const claims = await Promise.all(
        Array.from({ length: 25 }, () => seen.claim('race', 60_000)),
      );
      expect(claims.filter((c) => c === 'claimed')).toHaveLength(1);
      expect(claims.filter((c) => c === 'pending')).toHaveLength(24);
    });

    it('keeps a claim for claimMs and a handled mark for ttlMs, in Redis', async () => {
      expect(await seen.claim('m1', 30_000)).toBe('claimed');
      const claimTtl = await ioredis.pttl(`${prefix}m1`);
      expect(claimTtl).toBeGreaterThan(0);
      expect(claimTtl).toBeLessThanOrEqual(30_000);
      await seen.complete('m1', 86_400_000);
      const markTtl = await ioredis.pttl(`${prefix}m1`);
      expect(markTtl).toBeGreaterThan(30_000);
      expect(markTtl).toBeLessThanOrEqual(86_400_000);
      expect(await seen.claim('m1', 30_000)).toBe('handled');
      // A handled mark is never given back.
      await seen.release('m1');
      expect(await seen.claim('m1', 30_000)).toBe('handled');
    });

    it('makes a released claim claimable again', async () => {
      expect(await seen.claim('m2', 30_000)).toBe('claimed');
      expect(await seen.claim('m2', 30_000)).toBe('pending');
      await seen.release('m2');
      expect(await ioredis.exists(`${prefix}m2`)).toBe(0);
      expect(await seen.claim('m2', 30_000)).toBe('claimed');
    });
  });
}

// SCRIPT FLUSH empties the script cache of the whole server: on a server of its own, so that the
// files sharing the other one keep theirs.
describe('redisSeenStore after the server lost its scripts (SCRIPT FLUSH)', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server.stop());

  for (const kind of clientKinds) {
    it(`runs its scripts again, through ${kind}`, async () => {
      const client = await connect(kind, server.port);
      const admin = await adminClient(server.port);
      try {
        const seen = redisSeenStore({ client: client.client, prefix: `flush-${kind}:` });
        expect(await seen.claim('m1', 30_000)).toBe('claimed');
        await admin.script('FLUSH');
        expect(await seen.claim('m3', 30_000)).toBe('claimed');
        expect(await seen.claim('m1', 30_000)).toBe('pending');
      } finally {
        admin.disconnect();
        await client.close();
      }
    });
  }
});

describe('two receivers on one Redis', () => {
  const secret = generateWebhookSecret();
  const T = 1_700_000_000;
  const handled: ReceivedWebhook[] = [];
  const servers: StartedServer[] = [];
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  beforeAll(async () => {
    for (const client of [ioredisClient(ioredis), nodeRedisClient(nodeRedis)]) {
      const receiver = createWebhookReceiver({
        secrets: secret,
        clock: new FakeClock(T * 1000),
        seen: redisSeenStore({ client, prefix: 'shared-seen:' }),
        handle: async (delivery) => {
          handled.push(delivery);
          await held;
        },
      });
      servers.push(await listen(createServer(receiver.node)));
    }
  });
  afterAll(() => Promise.all(servers.map((server) => server.close())));

  it('run handle once for one id delivered to both at once, and answer its duplicates', async () => {
    const body = '{"type":"folio/created"}';
    const init = {
      method: 'POST',
      headers: signWebhook({ id: 'msg_both', timestamp: T, body }, secret),
      body,
    };
    const settled: number[] = [];
    let fiveSettled: () => void = () => undefined;
    const five = new Promise<void>((resolve) => {
      fiveSettled = resolve;
    });
    const sends = servers.flatMap((server) =>
      [1, 2, 3].map(() =>
        fetch(`${server.url}/in`, init).then((response) => {
          settled.push(response.status);
          if (settled.length === 5) fiveSettled();
          return response.status;
        }),
      ),
    );
    // Every delivery but the one being handled answers 409 while handle runs.
    await five;
    expect(settled).toEqual([409, 409, 409, 409, 409]);
    expect(handled).toHaveLength(1);
    release();
    const statuses = await Promise.all(sends);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(handled).toHaveLength(1);
    for (const server of servers) {
      expect((await fetch(`${server.url}/in`, init)).status).toBe(200);
    }
    expect(handled).toHaveLength(1);
  });
});

describe('redisSeenStore options', () => {
  it('refuses a client without the script commands and a prefix with a brace', () => {
    const noClient = thrown(() => redisSeenStore({ client: {} as never }));
    expect(isConfigurationError(noClient) && noClient.code).toBe('invalid_redis_client');
    const brace = thrown(() => redisSeenStore({ client: ioredisClient(ioredis), prefix: '{x}' }));
    expect(isConfigurationError(brace) && brace.code).toBe('invalid_option');
  });
});
