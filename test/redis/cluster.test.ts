/**
 * The Redis store on a real Redis Cluster of three masters, with both clients (ioredis `Cluster`,
 * node-redis `createCluster`): every key of one decision carries one hash tag (one slot), a
 * decision that touches the account scope and a resource scope is one script with no CROSSSLOT,
 * releases are sent apart and all arrive, every key expires on its own, and a flushed script cache
 * is reloaded on every node. Decisions equal the memory store's on a fake clock.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Cluster, type Redis } from 'ioredis';
import { createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AsyncLimitStore,
  createLimiter,
  type Decision,
  FakeClock,
  MemoryStore,
  presets,
} from '../../src/index.js';
import {
  ioredisClient,
  nodeRedisClient,
  type RedisScriptClient,
  RedisStore,
  type RedisStoreError,
} from '../../src/redis/index.js';
import { comparable } from '../support/limits.js';
import {
  adminClient,
  type ClientKind,
  clientKinds,
  freeClusterPort,
  RedisServer,
} from '../support/redis-server.js';

const NODES = 3;
/** How many times CLUSTER INFO is asked before the cluster counts as never formed. */
const STATE_POLLS = 250;

let dir: string | undefined;
const servers: RedisServer[] = [];
const admins: Redis[] = [];
const clients = new Map<ClientKind, { client: RedisScriptClient; close: () => Promise<void> }>();
let run = 0;

/** redis-cli joins the nodes; without it no cluster can be made here. */
function requireRedisCli(): void {
  const probe = spawnSync('redis-cli', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      `redis-cli is needed to form the test Redis Cluster (redis-cli --cluster create) and could not be run (${probe.error?.message ?? probe.stderr}); install it with redis-server (Debian: apt-get install redis-server redis-tools).`,
    );
  }
}

/** A cluster node on free ports (its own and its bus port), retried if a port was taken meanwhile. */
async function startNode(configDir: string): Promise<RedisServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freeClusterPort();
    try {
      return await RedisServer.start({
        port,
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(configDir, `nodes-${port}.conf`),
        ],
      });
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/** Poll CLUSTER INFO until the node says `cluster_state:ok`, a bounded number of times. */
async function waitForClusterOk(admin: Redis, port: number): Promise<void> {
  let info = '';
  for (let poll = 0; poll < STATE_POLLS; poll++) {
    info = (await admin.call('CLUSTER', 'INFO')) as string;
    if (/^cluster_state:ok\r?$/m.test(info)) return;
    await pause(20);
  }
  throw new Error(`node ${port} never reached cluster_state:ok:\n${info}`);
}

beforeAll(async () => {
  requireRedisCli();
  dir = await mkdtemp(join(tmpdir(), 'redis-cluster-'));
  for (let i = 0; i < NODES; i++) servers.push(await startNode(dir));
  for (const s of servers) admins.push(await adminClient(s.port));
  try {
    await promisify(execFile)(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...servers.map((s) => `127.0.0.1:${s.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { timeout: 15_000 },
    );
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`redis-cli --cluster create failed: ${String(error)}\n${stdout}\n${stderr}`);
  }
  for (const [i, admin] of admins.entries()) await waitForClusterOk(admin, servers[i]!.port);

  const rootNodes = servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
  const io = new Cluster(rootNodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    redisOptions: { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 },
  });
  io.on('error', () => undefined);
  await io.connect();
  clients.set('ioredis', {
    client: ioredisClient(io),
    close: async () => {
      io.disconnect();
    },
  });
  const node = createCluster({
    rootNodes: servers.map((s) => ({ url: `redis://127.0.0.1:${s.port}` })),
    defaults: { disableOfflineQueue: true },
  });
  node.on('error', () => undefined);
  await node.connect();
  clients.set('node-redis', {
    client: nodeRedisClient(node),
    close: async () => {
      if (node.isOpen) node.destroy();
    },
  });
});

afterAll(async () => {
  for (const c of clients.values()) await c.close();
  for (const admin of admins) admin.disconnect();
  await Promise.all(servers.map((s) => s.stop()));
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** The hash tag Redis Cluster hashes: between the first `{` and the next `}`. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** The client, counting `EVAL` fallbacks and checking that every command's keys share one tag. */
function watched(client: RedisScriptClient) {
  const seen = { evals: 0, tagsPerCommand: new Set<number>() };
  const note = (keys: readonly string[]): void => {
    seen.tagsPerCommand.add(new Set(keys.map(hashTag)).size);
  };
  const wrapped: RedisScriptClient = {
    ...client,
    evalSha: (sha1, keys, args) => {
      note(keys);
      return client.evalSha(sha1, keys, args);
    },
    eval: (script, keys, args) => {
      note(keys);
      seen.evals++;
      return client.eval(script, keys, args);
    },
  };
  return { client: wrapped, seen };
}

/** A Redis store on a prefix of its own, on the caller's clock, reporting into `errors`. */
function clusterStore(kind: ClientKind) {
  const { client, seen } = watched(clients.get(kind)!.client);
  const errors: RedisStoreError[] = [];
  const prefix = `cluster${++run}:`;
  const redis = new RedisStore({
    client,
    prefix,
    timeSource: 'clock',
    // Real time passes while the fake clock stands still: keep keys well past their horizon.
    expiryMarginMs: 600_000,
    timeoutMs: 10_000,
    onError: (error) => {
      errors.push(error);
    },
  });
  // The limiter does not wait for a release; this store lets the test wait until Redis answered.
  const releases: Promise<void>[] = [];
  const store: AsyncLimitStore = {
    synchronous: false,
    apply: (plan, now) => redis.apply(plan, now),
    release: (lease) => {
      const done = redis.release(lease);
      releases.push(done);
      return done;
    },
  };
  const released = async (): Promise<void> => {
    await Promise.all(releases.splice(0));
  };
  return { store, prefix, errors, seen, released };
}

/** Every key under `prefix` on each node, as that node holds it (SCAN on the node itself). */
async function keysByNode(prefix: string): Promise<string[][]> {
  return Promise.all(
    admins.map(async (admin) => {
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        keys.push(...batch);
      } while (cursor !== '0');
      return keys.sort();
    }),
  );
}

/** The slot ranges a node serves, from its own line of CLUSTER NODES. */
async function ownSlots(admin: Redis): Promise<[number, number][]> {
  const nodes = (await admin.call('CLUSTER', 'NODES')) as string;
  const mine = nodes.split('\n').find((line) => line.split(' ')[2]?.includes('myself'));
  return mine!
    .trim()
    .split(' ')
    .slice(8)
    .filter((range) => !range.startsWith('['))
    .map((range) => {
      const [from, to = from] = range.split('-').map(Number) as [number, number?];
      return [from, to];
    });
}

/**
 * Assert that the keys under `prefix` are on every node, each in a slot the node serves
 * (CLUSTER KEYSLOT, CLUSTER NODES), and that every key of one client and account shares a slot.
 * @returns the keys, by node
 */
async function expectOnEveryNode(prefix: string): Promise<string[][]> {
  const byNode = await keysByNode(prefix);
  const slotOfTag = new Map<string, number>();
  for (const [i, keys] of byNode.entries()) {
    expect(keys.length, `keys on node ${servers[i]!.port}`).toBeGreaterThan(0);
    const ranges = await ownSlots(admins[i]!);
    for (const key of keys) {
      const slot = (await admins[i]!.call('CLUSTER', 'KEYSLOT', key)) as number;
      expect(ranges.some(([from, to]) => slot >= from && slot <= to)).toBe(true);
      const tag = hashTag(key)!;
      expect(slotOfTag.get(tag) ?? slot).toBe(slot);
      slotOfTag.set(tag, slot);
    }
  }
  return byNode;
}

/** A small deterministic generator, so that every run asks the same sequence. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Many clients and accounts (braces and percent signs included), spread over the slots. */
const pairs: readonly (readonly [string, string])[] = [
  ...Array.from({ length: 14 }, (_, i) => [`client-${i}`, `ACCOUNT${i % 4}`] as const),
  ['client-{2}', '%7B'],
  ['{', '}'],
];

/** Throttled routes, a throttle exemption, and the resource limits (PATCH booking above all). */
const routes = [
  ['GET', '/booking/v1/reservations'],
  ['GET', '/booking/v1/offers'],
  ['PUT', '/rateplan/v1/rate-plans/P1/rates'],
  ['PATCH', '/rateplan/v1/rates'],
  ['PATCH', '/booking/v1/bookings/B1'],
  ['PATCH', '/booking/v2/bookings/B1'],
  ['PATCH', '/booking/v1/bookings/B2'],
] as const;

const STEPS = 1_500;

describe.each(clientKinds)('RedisStore on a Redis Cluster of three masters (%s)', (kind) => {
  it('gives the memory store decisions for the Live preset with resource rules, for clients on every node, in one slot per decision, also across a SCRIPT FLUSH on every node', async () => {
    // Arrange
    const clock = new FakeClock(1_000_000);
    const memory = createLimiter({ preset: presets.live, clock, store: new MemoryStore() });
    const { store, prefix, errors, seen, released } = clusterStore(kind);
    const redis = createLimiter({ preset: presets.live, clock, store });
    const next = random(0x5eed);
    const refusedBy = new Set<string>();
    let admitted = 0;
    let evalsBeforeFlush = -1;

    // Act and assert, step by step
    for (let i = 0; i < STEPS; i++) {
      if (i === STEPS / 2) {
        // Every node forgets every script mid-run.
        evalsBeforeFlush = seen.evals;
        await Promise.all(admins.map((admin) => admin.script('FLUSH')));
        for (const admin of admins) {
          expect(await admin.info('memory')).toMatch(/^number_of_cached_scripts:0\r?$/m);
        }
      }
      const roll = next();
      // Mostly bursts (limits are reached), sometimes a pause, now and then a long one.
      if (roll < 0.005) clock.advance(5_000 + Math.floor(next() * 60_000));
      else if (roll < 0.3) clock.advance(Math.floor(next() * 400));
      // One client in three is the first one, so that its limits are reached.
      const [clientId, accountCode] =
        next() < 0.35 ? pairs[0]! : pairs[Math.floor(next() * pairs.length)]!;
      const [method, path] = routes[Math.floor(next() * routes.length)]!;
      const request = { clientId, accountCode, method, path };
      const expected = memory.check(request);
      const actual = await redis.check(request);
      expect(comparable(actual), `step ${i}: ${method} ${path} by ${clientId}`).toEqual(
        comparable(expected),
      );
      if (expected.allowed) admitted++;
      else refusedBy.add(expected.policy?.name ?? expected.reason);
      // Some requests end, some keep their lease (and fill the throttle).
      if (next() < 0.5) {
        if (expected.allowed) expected.release();
        if (actual.allowed) actual.release();
        await released();
      }
    }

    // Assert: the limits were reached, the resource limit and the throttle among them.
    expect(admitted).toBeGreaterThan(STEPS / 3);
    expect([...refusedBy].some((name) => name.startsWith('resource PATCH /booking/'))).toBe(true);
    expect(refusedBy).toContain('throttle: 20 concurrent');
    // No CROSSSLOT nor any other failure; every command's keys carry one hash tag.
    expect(errors).toEqual([]);
    expect([...seen.tagsPerCommand]).toEqual([1]);
    // The keys are on all three nodes; a resource scope shares its account scope's slot.
    const byNode = await expectOnEveryNode(prefix);
    const all = byNode.flat();
    const bookings = all.filter((key) => key.includes(':PATCH /booking/v*/bookings/'));
    expect(bookings.length).toBeGreaterThan(0);
    for (const key of bookings) {
      expect(all.filter((k) => hashTag(k) === hashTag(key)).length).toBeGreaterThan(1);
    }
    // The scripts were sent again after the flush (EVAL), once per node and script, and cached.
    const reloads = seen.evals - evalsBeforeFlush;
    let cached = 0;
    for (const admin of admins) {
      const scripts = Number(
        /^number_of_cached_scripts:(\d+)/m.exec(await admin.info('memory'))![1],
      );
      expect(scripts).toBeGreaterThan(0);
      cached += scripts;
    }
    expect(reloads).toBe(cached);
    // Every key the store wrote expires on its own, no later than its horizon (the longest window,
    // PUT rates' 60 min) plus the margin.
    for (const [i, keys] of byNode.entries()) {
      for (const key of keys) {
        const ttl = await admins[i]!.pttl(key);
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(3_600_000 + 600_000);
      }
    }
  });

  it('gives back every lease released in one turn by many clients on every node, each in a command of its own, with no CROSSSLOT', async () => {
    // Arrange: every client's throttle full (20 leases), its 21st request refused.
    const clock = new FakeClock(2_000_000);
    const memory = createLimiter({ preset: presets.live, clock, store: new MemoryStore() });
    const { store, prefix, errors, seen, released } = clusterStore(kind);
    const redis = createLimiter({ preset: presets.live, clock, store });
    const fill = async (): Promise<Decision[]> => {
      const held: Decision[] = [];
      for (const [clientId, accountCode] of pairs) {
        const request = { clientId, accountCode, method: 'GET', path: '/booking/v1/reservations' };
        for (let n = 0; n <= 20; n++) {
          const expected = memory.check(request);
          const actual = await redis.check(request);
          expect(comparable(actual)).toEqual(comparable(expected));
          if (actual.allowed) held.push(actual, expected);
          else expect(actual.policy?.name).toBe('throttle: 20 concurrent');
        }
      }
      return held;
    };
    const held = await fill();
    expect(held.length).toBe(2 * 20 * pairs.length);
    // The refusals blocked each throttle for the Retry-After they announced (1 s): wait it out.
    clock.advance(1_000);
    await expectOnEveryNode(prefix);

    // Act: every lease given back in one turn of the event loop (by both stores).
    for (const decision of held) if (decision.allowed) decision.release();
    await released();

    // Assert: every throttle frees up whole (20 admitted again, then refused).
    expect((await fill()).length).toBe(2 * 20 * pairs.length);
    expect(errors).toEqual([]);
    expect([...seen.tagsPerCommand]).toEqual([1]);
  });
});
