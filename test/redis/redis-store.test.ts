/**
 * The Redis store against a real redis-server, with both clients: key layout and hash tags,
 * expiry, the server's time, one script call per decision, the script cache lost (SCRIPT FLUSH,
 * restart), timeouts and lost connections reported as outages (apply rejects with the
 * RedisStoreError; the store never decides open or closed itself), a process killed holding leases,
 * bad data and bad options.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  FakeClock,
  isConfigurationError,
  type LeaseToken,
  MemoryStore,
  type Plan,
  type PlanScope,
  type Policy,
  presets,
  type StoreOutcome,
  window,
} from '../../src/index.js';
import {
  ioredisClient,
  nodeRedisClient,
  RedisNotReadyError,
  type RedisScriptClient,
  RedisStore,
  RedisStoreError,
  type RedisStoreOptions,
  redisStoreErrorCodes,
} from '../../src/redis/index.js';
import { releaseScript } from '../../src/redis/release-script.js';
import {
  adminClient,
  type ClientKind,
  clientKinds,
  connect,
  ManualTimer,
  RedisServer,
  type TestClient,
} from '../support/redis-server.js';
import { thrown } from '../support/thrown.js';

/** What apply answered, or what it rejected with: an outage is reported, never decided. */
const settle = (outcome: Promise<StoreOutcome>): Promise<StoreOutcome | unknown> =>
  outcome.then(
    (o) => o,
    (e: unknown) => e,
  );

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
let server: RedisServer;
let admin: Redis;
const clients = new Map<ClientKind, TestClient>();
let prefixes = 0;

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await RedisServer.start();
  admin = await adminClient(server.port);
  for (const kind of clientKinds) clients.set(kind, await connect(kind, server.port));
});

afterAll(async () => {
  for (const c of clients.values()) await c.close();
  admin.disconnect();
  await server.stop();
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

function scope(
  clientId: string,
  accountCode: string,
  resource: string,
  policies: readonly Policy[],
  active: readonly number[] = policies.map((_, i) => i),
): PlanScope {
  return { clientId, accountCode, resource, policies, active };
}

/** The hash tag Redis Cluster hashes: between the first `{` and the next `}`. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** How many hash tags the keys of one command carry: more than one is a CROSSSLOT in a cluster. */
function tagCount(keys: readonly string[]): number {
  return new Set(keys.map(hashTag)).size;
}

/** Redis Cluster's refusal of a command whose keys hash to more than one slot. */
function crossSlot(): Error {
  return new Error("CROSSSLOT Keys in request don't hash to the same slot");
}

async function keysUnder(prefix: string): Promise<string[]> {
  return (await admin.keys(`${prefix}*`)).sort();
}

async function commandCalls(): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
    calls[match[1]!] = Number(match[2]);
  }
  return calls;
}

const errorCodes = (errors: RedisStoreError[]) => errors.map((e) => e.code);

async function evalshaCalls(): Promise<number> {
  return (await commandCalls()).evalsha ?? 0;
}

/**
 * Under a throttle of 1, warm the store up (the script loaded), reset the command counts, then
 * take and give back one lease at a time, `times` times, each release sent without waiting (as
 * the middleware gives it back). Every decision must be admitted: only when the previous release
 * went first. Resolves once the last release is done.
 */
async function leasesInTurn(store: RedisStore, times: number): Promise<Plan> {
  const plan: Plan = {
    scopes: [scope('c', 'a', '', [concurrency(1, { name: 't', leaseTtl: '1h' })])],
  };
  const warm = await store.apply(plan, 0);
  if (warm.allowed && warm.lease) await store.release(warm.lease);
  await admin.config('RESETSTAT');
  let last: Promise<void> = Promise.resolve();
  for (let i = 0; i < times; i++) {
    const outcome = await store.apply(plan, i);
    expect(outcome.allowed).toBe(true);
    if (outcome.allowed && outcome.lease) last = store.release(outcome.lease);
  }
  await last;
  return plan;
}

/**
 * Each client, and ioredis with every argument and reply in text (the form a client that cannot
 * send or read bytes gets).
 */
const variants = [...clientKinds, 'ioredis, in text'] as const;

describe.each(variants)('RedisStore with %s', (kind) => {
  const base: ClientKind = kind === 'ioredis, in text' ? 'ioredis' : kind;
  const client = (): RedisScriptClient => {
    const own = clients.get(base)!.client;
    return base === kind ? own : { ...own, binaryArguments: false, binaryReplies: false };
  };
  const make = (options: Partial<RedisStoreOptions> = {}) =>
    new RedisStore({ client: client(), prefix: `${kind}-${++prefixes}:`, ...options });

  it('every key of one decision carries the same hash tag, and distinct clients and accounts never share one', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(
          fc.string({ minLength: 1, maxLength: 12 }),
          fc.string({ minLength: 1, maxLength: 12 }),
        ),
        fc.tuple(
          fc.string({ minLength: 1, maxLength: 12 }),
          fc.string({ minLength: 1, maxLength: 12 }),
        ),
        async ([c1, a1], [c2, a2]) => {
          fc.pre(c1 !== c2 || a1 !== a2);
          // Arrange
          const prefix = `tag-${kind}-${++prefixes}:`;
          const store = new RedisStore({ client: client(), prefix, timeSource: 'clock' });
          const w = [window(5, '1s', { name: 'w' })];
          const r = [window(2, '5min', { name: 'r' })];
          // Act
          for (const [c, a] of [
            [c1, a1],
            [c2, a2],
          ] as const) {
            await store.apply(
              { scopes: [scope(c, a, '', w), scope(c, a, 'PATCH /x/{1}', r)] },
              1_000,
            );
          }
          // Assert: four keys, two per pair, one tag per pair, the two tags distinct.
          const keys = await keysUnder(prefix);
          expect(keys).toHaveLength(4);
          const tags = new Set(keys.map(hashTag));
          expect(tags.size).toBe(2);
          expect(tags.has(undefined)).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('distinct client ids and account codes never share a key, also with braces, escapes and lone surrogates that UTF-8 cannot carry', async () => {
    // Characters that a key could confuse: the tag's braces, the escape character and what it
    // writes, separators, and lone surrogates (UTF-8 turns each into U+FFFD).
    const part = fc.string({
      unit: fc.constantFrom(
        'a',
        '{',
        '}',
        '%',
        '7',
        'B',
        'u',
        ':',
        '\uD800',
        '\uDBFF',
        '\uDC00',
        '\uFFFD',
      ),
      minLength: 1,
      maxLength: 6,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(part, part), {
          minLength: 2,
          maxLength: 4,
          selector: ([c, a]) => JSON.stringify([c, a]),
        }),
        async (pairs) => {
          // Arrange
          const prefix = `utf8-${kind}-${++prefixes}:`;
          const store = new RedisStore({ client: client(), prefix, timeSource: 'clock' });
          const w = [window(5, '1s', { name: 'w' })];
          // Act
          for (const [c, a] of pairs) {
            await store.apply({ scopes: [scope(c, a, '', w), scope(c, a, 'GET /x', w)] }, 1_000);
          }
          // Assert: two keys per pair, one tag per pair, no two pairs alike.
          const keys = (await admin.keysBuffer(`${prefix}*`)).map((k) => k.toString('latin1'));
          expect(keys).toHaveLength(2 * pairs.length);
          const tags = new Set(keys.map(hashTag));
          expect(tags.size).toBe(pairs.length);
          expect(tags.has(undefined)).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
    // The three ids that UTF-8 alone would write alike each get a counter of their own.
    const store = make({ timeSource: 'clock' });
    const one = [window(1, '1h', { name: 'w' })];
    for (const id of ['x\uD800', 'x\uDBFF', 'x\uFFFD']) {
      const outcome = await store.apply({ scopes: [scope(id, 'a', '', one)] }, 1_000);
      expect(outcome.allowed).toBe(true);
    }
  });

  it('every key expires on its own, no later than its state is fresh again plus the margin', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 3_000 }), { minLength: 1, maxLength: 60 }),
        async (gaps) => {
          // Arrange: the server's own time, so that key expiry and decisions share one clock.
          const prefix = `ttl-${kind}-${++prefixes}:`;
          const store = new RedisStore({ client: client(), prefix, expiryMarginMs: 250 });
          const policies = [
            window(5, '2s', { name: 'w' }),
            concurrency(2, { name: 'c', leaseTtl: '3s' }),
          ];
          const plan: Plan = { scopes: [scope('c', 'a', '', policies)] };
          // Act: decisions on the server's clock; the gaps only pick which leases to keep.
          for (const gap of gaps) {
            const outcome = await store.apply(plan, 0);
            if (outcome.allowed && outcome.lease && gap % 2 === 0)
              await store.release(outcome.lease);
          }
          // Assert: the horizon is at most a window, a lease or a block (whole seconds) away.
          for (const key of await keysUnder(prefix)) {
            const ttl = await admin.pttl(key);
            expect(ttl).toBeGreaterThan(0);
            expect(ttl).toBeLessThanOrEqual(3_000 + 250);
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it("decides on the server's TIME by default, whatever the caller's clock says", async () => {
    const store = make();
    const plan: Plan = { scopes: [scope('c', 'a', '', [window(5, '1s', { name: 'w' })])] };
    const serverMs = async () => {
      const [s, us] = await admin.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const before = await serverMs();
    const outcome = await store.apply(plan, 42);
    const after = await serverMs();
    expect(outcome.now).toBeGreaterThanOrEqual(before);
    expect(outcome.now).toBeLessThanOrEqual(after);
  });

  it('makes exactly one script call per decision and one per release', async () => {
    const store = make({ timeSource: 'clock' });
    const plan: Plan = {
      scopes: [
        scope('c', 'a', '', presets.live.policies),
        scope('c', 'a', 'PUT /r/{1}', [window(10, '20min', { name: 'r' })]),
      ],
    };
    const warm = await store.apply(plan, 0); // loads the script if needed
    if (warm.allowed && warm.lease) await store.release(warm.lease);
    await admin.config('RESETSTAT');
    let released = 0;
    for (let i = 0; i < 50; i++) {
      const outcome = await store.apply(plan, i);
      if (outcome.allowed && outcome.lease) {
        await store.release(outcome.lease);
        released++;
      }
    }
    const calls = await commandCalls();
    expect(released).toBeGreaterThan(0);
    expect(calls.evalsha).toBe(50 + released);
    expect(calls.eval).toBeUndefined();
  });

  it('a release travels with the next decision, which gives it back first: one script call per decision', async () => {
    const store = make({ timeSource: 'clock' });
    // The last release finds no decision and goes alone.
    const plan = await leasesInTurn(store, 50);
    const calls = await commandCalls();
    expect(calls.evalsha).toBe(51);
    expect(calls.append).toBe(50);
    expect((await store.apply(plan, 50)).allowed).toBe(true);
  });

  it('leases given back with no decision to travel with go together in one script call', async () => {
    const store = make({ timeSource: 'clock' });
    const throttle = [concurrency(1, { name: 't', leaseTtl: '1h' })];
    const plans = Array.from({ length: 10 }, (_, i) => ({
      scopes: [scope(`client-${i}`, 'a', '', throttle)],
    }));
    const leases = [];
    for (const plan of plans) {
      const outcome = await store.apply(plan, 0);
      if (outcome.allowed && outcome.lease) leases.push(outcome.lease);
    }
    expect(leases).toHaveLength(10);
    await admin.config('RESETSTAT');
    await Promise.all(leases.map((lease) => store.release(lease)));
    const calls = await commandCalls();
    expect(calls.evalsha).toBe(1);
    expect(calls.append).toBe(10);
    for (const plan of plans) expect((await store.apply(plan, 1)).allowed).toBe(true);
  });

  it('in a cluster, each release is one script call of its own, sent at once', async () => {
    const store = make({ timeSource: 'clock', client: { ...client(), cluster: true } });
    // Releases not awaited are sent before the next decision all the same.
    await leasesInTurn(store, 10);
    const calls = await commandCalls();
    expect(calls.evalsha).toBe(20);
    expect(calls.append).toBe(10);
  });

  it('a client that refuses keys of two clients in one command (CROSSSLOT) gets each release apart, and the decision is asked again', async () => {
    const errors: RedisStoreError[] = [];
    const inner = client();
    let refused = 0;
    const strict: RedisScriptClient = {
      cluster: false, // says it is not a cluster, but behaves as one
      evalSha: async (sha1, keys, args) => {
        if (tagCount(keys) > 1) {
          refused++;
          throw crossSlot();
        }
        return inner.evalSha(sha1, keys, args);
      },
      eval: async (text, keys, args) => {
        if (tagCount(keys) > 1) throw crossSlot();
        return inner.eval(text, keys, args);
      },
    };
    const store = make({ timeSource: 'clock', client: strict, onError: (e) => errors.push(e) });
    const throttle = [concurrency(1, { name: 't', leaseTtl: '1h' })];
    const a: Plan = { scopes: [scope('a', 'x', '', throttle)] };
    const b: Plan = { scopes: [scope('b', 'x', '', throttle)] };
    const first = await store.apply(a, 0);
    expect(first.allowed).toBe(true);
    const releasing = first.allowed && first.lease ? store.release(first.lease) : undefined;
    // Act: b's decision would carry a's release; the client refuses the pair.
    const second = await store.apply(b, 1);
    await releasing;
    // Assert: b decided, a's lease given back, nothing reported, and no second refusal.
    expect(second.allowed).toBe(true);
    expect(refused).toBe(1);
    expect((await store.apply(a, 2)).allowed).toBe(true);
    if (second.allowed && second.lease) await store.release(second.lease);
    expect((await store.apply(b, 3)).allowed).toBe(true);
    expect(refused).toBe(1);
    expect(errors).toEqual([]);
  });

  it('a decision carrying releases that fails otherwise (not CROSSSLOT) fails over; its releases are sent apart and later ones still travel', async () => {
    // Arrange: a client that fails the first command carrying a release with an ordinary error.
    const errors: RedisStoreError[] = [];
    const inner = client();
    let carrying = 0;
    const flaky: RedisScriptClient = {
      cluster: false,
      evalSha: async (sha1, keys, args) => {
        if (tagCount(keys) > 1 && ++carrying === 1)
          throw new Error('ERR max number of clients reached');
        return inner.evalSha(sha1, keys, args);
      },
      eval: (text, keys, args) => inner.eval(text, keys, args),
    };
    const store = make({
      timeSource: 'clock',
      client: flaky,
      onError: (e) => errors.push(e),
    });
    const throttled: Plan = {
      scopes: [scope('a', 'x', '', [concurrency(1, { name: 't', leaseTtl: '1h' })])],
    };
    // A plan without a throttle: the releases that travel with it bring the arguments they need.
    const windowed: Plan = { scopes: [scope('b', 'x', '', [window(5, '1s', { name: 'w' })])] };
    const first = await store.apply(throttled, 0);
    expect(first.allowed).toBe(true);
    const releasing = first.allowed && first.lease ? store.release(first.lease) : undefined;
    // Act
    const failed = await settle(store.apply(windowed, 1));
    await releasing;
    // Assert: the decision rejected with the outage, reported; the lease was given back all the same.
    expect(failed).toBeInstanceOf(RedisStoreError);
    expect(failed).toMatchObject({ code: 'redis_command_failed', operation: 'apply' });
    expect(errors.map((e) => [e.code, e.operation, e.message])).toEqual([
      [
        'redis_command_failed',
        'apply',
        'The apply script failed: ERR max number of clients reached',
      ],
    ]);
    const again = await store.apply(throttled, 2);
    expect(again.allowed).toBe(true);
    // Releases still travel with the next decision, which now succeeds.
    const releasingAgain = again.allowed && again.lease ? store.release(again.lease) : undefined;
    expect(await store.apply(windowed, 3)).toMatchObject({ allowed: true, values: [4, 1_000] });
    await releasingAgain;
    expect(carrying).toBe(2);
    expect((await store.apply(throttled, 4)).allowed).toBe(true);
    expect(errors).toHaveLength(1);
  });

  it('leases given back together that a client refuses in one command (CROSSSLOT) are each given back apart, and later releases go alone', async () => {
    // Arrange: a client that refuses keys of two clients in one command.
    const errors: RedisStoreError[] = [];
    const inner = client();
    let refused = 0;
    let releases = 0;
    const strict: RedisScriptClient = {
      cluster: false,
      evalSha: async (sha1, keys, args) => {
        if (tagCount(keys) > 1) {
          refused++;
          throw crossSlot();
        }
        if (sha1 === releaseSha) releases++;
        return inner.evalSha(sha1, keys, args);
      },
      eval: (text, keys, args) => inner.eval(text, keys, args),
    };
    const releaseSha = createHash('sha1').update(releaseScript(false)).digest('hex');
    const store = make({ timeSource: 'clock', client: strict, onError: (e) => errors.push(e) });
    const throttle = [concurrency(1, { name: 't', leaseTtl: '1h' })];
    const plans = ['a', 'b', 'c'].map((c): Plan => ({ scopes: [scope(c, 'x', '', throttle)] }));
    const leases = [];
    for (const plan of plans) {
      const outcome = await store.apply(plan, 0);
      if (outcome.allowed && outcome.lease) leases.push(outcome.lease);
    }
    expect(leases).toHaveLength(3);
    // Act: given back with no decision to travel with, the three go in one command.
    await Promise.all(leases.map((lease) => store.release(lease)));
    // Assert: refused once, then one release each; every lease is back, nothing reported.
    expect([refused, releases]).toEqual([1, 3]);
    const again = [];
    for (const plan of plans) {
      const outcome = await store.apply(plan, 1);
      expect(outcome.allowed).toBe(true);
      again.push(outcome);
    }
    // From now on a release is sent at once, alone: no decision carries it.
    for (const outcome of again)
      if (outcome.allowed && outcome.lease) await store.release(outcome.lease);
    expect([refused, releases]).toEqual([1, 6]);
    expect(errors).toEqual([]);
  });

  it('counts a time from the caller that is not finite as standing still, as the memory store does', async () => {
    const store = make({ timeSource: 'clock' });
    const memory = new MemoryStore();
    const plan: Plan = { scopes: [scope('c', 'a', '', [window(2, '1s', { name: 'w' })])] };
    for (const t of [5_000, Number.NaN, Number.POSITIVE_INFINITY, 5_500]) {
      expect(await store.apply(plan, t)).toEqual(memory.apply(plan, t));
    }
    const fresh = make({ timeSource: 'clock' });
    expect(await fresh.apply(plan, Number.NaN)).toMatchObject({ allowed: true, now: 0 });
  });

  it('decides as the memory store for a preset with resource limits and no policies of its own', async () => {
    // The client's own scope has no policies: the script reads and keeps it with none.
    const preset = {
      name: 'resources only',
      policies: [],
      rules: [{ route: 'GET /things/{id}', policies: [window(2, '1s', { name: 'thing' })] }],
    };
    const clock = new FakeClock(0);
    const memory = createLimiter({ preset, clock });
    const redis = createLimiter({ preset, clock, store: make({ timeSource: 'clock' }) });
    const steps: Array<[number, string]> = [
      [0, '/things/1'],
      [100, '/things/1'],
      [200, '/things/1'],
      [300, '/other'],
      [400, '/other'],
      [500, '/things/2'],
      [1_000, '/things/1'], // blocked until the 1 s the refusal announced has passed
      [1_200, '/things/1'],
    ];
    const decided: boolean[] = [];
    for (const [at, path] of steps) {
      clock.set(at);
      const request = { clientId: 'c', accountCode: 'a', method: 'GET', path };
      const expected = memory.check(request);
      const actual = await redis.check(request);
      expect(actual).toEqual(expected);
      expect(actual.statuses).toEqual(expected.statuses);
      decided.push(actual.allowed);
    }
    expect(decided).toEqual([true, true, false, true, true, true, false, true]);
  });

  it('keeps deciding as before after SCRIPT FLUSH, reloading the script with EVAL', async () => {
    const clock = new FakeClock(0);
    const policies = presets.development.policies;
    const memory = createLimiter({ policies, clock, store: new MemoryStore() });
    const errors: RedisStoreError[] = [];
    const redis = createLimiter({
      policies,
      clock,
      store: make({ timeSource: 'clock', onError: (e) => errors.push(e) }),
    });
    const request = { clientId: 'c', accountCode: 'a', method: 'GET', path: '/x' };
    for (let i = 0; i < 40; i++) {
      if (i === 20) {
        await admin.config('RESETSTAT');
        await admin.script('FLUSH');
      }
      clock.advance(130);
      const expected = memory.check(request);
      const actual = await redis.check(request);
      expect(actual.allowed).toBe(expected.allowed);
      expect(actual.statuses).toEqual(expected.statuses);
    }
    expect(errors).toEqual([]);
    expect((await commandCalls()).eval).toBe(1);
  });

  it('admits an empty plan and records nothing, as the memory store does', async () => {
    const prefix = `empty-${kind}-${++prefixes}:`;
    const store = new RedisStore({ client: client(), prefix, timeSource: 'clock' });
    const outcome = await store.apply({ scopes: [] }, 5);
    expect(outcome).toEqual(new MemoryStore().apply({ scopes: [] }, 5));
    expect(await keysUnder(prefix)).toEqual([]);
  });

  it('ignores a lease from another store, releases a lease once, and never lets an expired lease free a new one', async () => {
    const store = make({ timeSource: 'clock' });
    const other = make({ timeSource: 'clock' });
    const plan: Plan = {
      scopes: [scope('c', 'a', '', [concurrency(1, { name: 't', leaseTtl: '5s' })])],
    };
    const first = await store.apply(plan, 0);
    expect(first.allowed).toBe(true);
    const foreign = await other.apply(plan, 0);
    if (foreign.allowed && foreign.lease) await store.release(foreign.lease);
    expect((await store.apply(plan, 10)).allowed).toBe(false);
    const next = await store.apply(plan, 5_000); // the first lease expired
    expect(next.allowed).toBe(true);
    if (first.allowed && first.lease) {
      await store.release(first.lease);
      await store.release(first.lease);
    }
    // Still held by the second request (and now blocked for a second by the refusal).
    expect((await store.apply(plan, 5_002)).allowed).toBe(false);
    if (next.allowed && next.lease) await store.release(next.lease);
    expect((await store.apply(plan, 6_002)).allowed).toBe(true);
  });

  it('gives a lease back once: a second release sends nothing and answers the first one, and never frees another lease of the same expiry', async () => {
    // Arrange: two leases taken at one instant (one expiry, two ids), through a client that counts
    // the scripts it sends.
    const inner = client();
    let sent = 0;
    const counting: RedisScriptClient = {
      ...inner,
      evalSha: (sha1, keys, args) => {
        sent++;
        return inner.evalSha(sha1, keys, args);
      },
    };
    const store = make({ client: counting, timeSource: 'clock' });
    const plan: Plan = {
      scopes: [scope('c', 'a', '', [concurrency(2, { name: 't', leaseTtl: '1h' })])],
    };
    const first = await store.apply(plan, 0);
    expect((await store.apply(plan, 0)).allowed).toBe(true);
    const lease = first.allowed ? first.lease : undefined;
    expect(lease).toBeDefined();
    const before = sent;
    // Act: twice before it is back, once after.
    const once = store.release(lease!);
    const twice = store.release(lease!);
    await once;
    const again = store.release(lease!);
    await Promise.all([twice, again]);
    // Assert: one release script and one promise; the other lease is still held.
    expect(sent - before).toBe(1);
    expect(twice).toBe(once);
    expect(again).toBe(once);
    expect((await store.apply(plan, 1)).allowed).toBe(true);
    expect((await store.apply(plan, 2)).allowed).toBe(false);
  });

  it("a release is one APPEND to its scope's value, which keeps its expiry; the next decision takes the record out", async () => {
    const prefix = `append-${kind}-${++prefixes}:`;
    const store = new RedisStore({ client: client(), prefix, timeSource: 'clock' });
    const plan: Plan = {
      scopes: [scope('c', 'a', '', [concurrency(2, { name: 't', leaseTtl: '1h' })])],
    };
    const outcome = await store.apply(plan, 1_000);
    const [key] = await keysUnder(prefix);
    const before = await admin.strlen(key!);
    const ttl = await admin.pttl(key!);
    if (outcome.allowed && outcome.lease) await store.release(outcome.lease);
    expect(await admin.strlen(key!)).toBe(before + 24);
    expect(await admin.pttl(key!)).toBeGreaterThan(0);
    expect(await admin.pttl(key!)).toBeLessThanOrEqual(ttl);
    // The next decision gives the lease back (then one held of two, not two) and drops the
    // record: the value holds its own lease alone, as the first one did.
    expect(await store.apply(plan, 1_001)).toMatchObject({ allowed: true, values: [1, 0] });
    expect(await admin.strlen(key!)).toBe(before);
  });

  it('a lease given back after its scope has gone leaves no key behind', async () => {
    const prefix = `gone-${kind}-${++prefixes}:`;
    const store = new RedisStore({ client: client(), prefix, timeSource: 'clock' });
    const plan: Plan = {
      scopes: [scope('c', 'a', '', [concurrency(1, { name: 't', leaseTtl: '1s' })])],
    };
    const outcome = await store.apply(plan, 0);
    const [key] = await keysUnder(prefix);
    await admin.del(key!); // as when the key expires with its last lease
    if (outcome.allowed && outcome.lease) await store.release(outcome.lease);
    expect(await keysUnder(prefix)).toEqual([]);
  });

  it('a process killed while holding leases: the leases expire after their TTL', async () => {
    // Arrange: a child process takes all three leases at t = 10 s, then is killed.
    const prefix = `crash-${kind}-${++prefixes}:`;
    const file = join(import.meta.dirname, 'fixtures', 'hold-leases.ts');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', file, String(server.port), base, prefix, '10000', '3'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('held')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`exited early (${code})`)));
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // Act and assert: the same scope from this process, on the same timeline.
    const store = new RedisStore({ client: client(), prefix, timeSource: 'clock' });
    const plan: Plan = {
      scopes: [
        scope('crashing', 'ACME', '', [concurrency(3, { name: 'throttle', leaseTtl: '5s' })]),
      ],
    };
    const during = await store.apply(plan, 14_000);
    expect(during).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 1 });
    const after = await store.apply(plan, 15_000);
    expect(after).toMatchObject({ allowed: true, values: [2, 0] });
    // The key itself expires with the leases, plus the margin.
    for (const key of await keysUnder(prefix)) {
      expect(await admin.pttl(key)).toBeLessThanOrEqual(5_000 + 1_000);
    }
  });

  it('reports an outage within the timeout when Redis does not answer, then resumes', async () => {
    // Arrange
    const timer = new ManualTimer();
    const errors: RedisStoreError[] = [];
    const store = make({ timer, timeoutMs: 50, onError: (e) => errors.push(e) });
    const plan: Plan = { scopes: [scope('c', 'a', '', [window(5, '1s', { name: 'w' })])] };
    expect((await store.apply(plan, 0)).allowed).toBe(true);
    // Act: the server freezes; the decision waits until its timeout fires.
    server.pause();
    let outcome: unknown;
    try {
      const pending = settle(store.apply(plan, 123));
      expect(timer.pending.size).toBe(1);
      timer.fireAll();
      outcome = await pending;
    } finally {
      server.resume();
    }
    // Assert: the rejection is the error reported, nothing decided.
    expect(outcome).toBeInstanceOf(RedisStoreError);
    expect(errors).toEqual([outcome]);
    expect(errorCodes(errors)).toEqual(['redis_timeout']);
    expect(errors[0]).toMatchObject({ operation: 'apply', name: 'RedisStoreError' });
    // Once the server answers again, so does the store.
    const later = await store.apply(plan, 0);
    expect(later.allowed).toBe(true);
    expect(later.policies).toHaveLength(1);
    expect(timer.pending.size).toBe(0);
  });

  it('a throttle decision that times out and that Redis runs later gives its lease back: the caller holds none', async () => {
    // Arrange
    const timer = new ManualTimer();
    const errors: RedisStoreError[] = [];
    const store = make({
      timer,
      timeSource: 'clock',
      onError: (e) => errors.push(e),
    });
    const throttled: Plan = {
      scopes: [scope('c', 'a', '', [concurrency(1, { name: 't', leaseTtl: '1h' })])],
    };
    const other: Plan = { scopes: [scope('o', 'a', '', [window(5, '1s', { name: 'w' })])] };
    // The scripts loaded, so that every reply below comes in the order its command was sent.
    const warm = await store.apply(
      { scopes: [scope('w', 'a', '', throttled.scopes[0]!.policies)] },
      0,
    );
    if (warm.allowed && warm.lease) await store.release(warm.lease);
    await store.apply(other, 0);
    // Act: the server freezes; the decision times out, then runs once the server is back.
    server.pause();
    let failed: unknown;
    try {
      const pending = settle(store.apply(throttled, 0));
      timer.fireAll();
      failed = await pending;
    } finally {
      server.resume();
    }
    // Its reply comes before this one's, on the same connection.
    expect((await store.apply(other, 1)).allowed).toBe(true);
    const after = await store.apply(throttled, 2);
    // Assert: the caller got no lease, and none is left held in Redis for its TTL.
    expect(failed).toBeInstanceOf(RedisStoreError);
    expect(after).toMatchObject({ allowed: true, values: [0, 0] });
    expect(errorCodes(errors)).toEqual(['redis_timeout']);
    if (after.allowed && after.lease) await store.release(after.lease);
  });

  it('rejects with the RedisStoreError, through a limiter that leaves outages to its caller (the default)', async () => {
    const timer = new ManualTimer();
    const errors: RedisStoreError[] = [];
    const store = make({ timer, onError: (e) => errors.push(e) });
    const limiter = createLimiter({ policies: [window(5, '1s', { name: 'w' })], store });
    const request = { clientId: 'c', accountCode: 'a', method: 'GET', path: '/x' };
    expect((await limiter.check(request)).allowed).toBe(true);
    server.pause();
    try {
      const pending = limiter.check(request);
      timer.fireAll();
      const error = await pending.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RedisStoreError);
      expect(error).toMatchObject({ code: 'redis_timeout', operation: 'apply' });
      expect(errors).toEqual([error]);
    } finally {
      server.resume();
    }
    expect((await limiter.check(request)).allowed).toBe(true);
  });

  it('reports an outage when Redis stops mid-run, without a crash or an unhandled rejection, and resumes with the script reloaded once it restarts', async () => {
    // Arrange
    const errors: RedisStoreError[] = [];
    const open = make({ onError: (e) => errors.push(e) });
    const closed = make({});
    const limiter = createLimiter({
      preset: presets.live,
      store: open,
      outage: 'open',
      onOutage: () => undefined,
    });
    const request = { clientId: 'c', accountCode: 'a', method: 'GET', path: '/x' };
    const plan: Plan = { scopes: [scope('c', 'a', '', presets.live.policies)] };
    expect((await limiter.check(request)).allowed).toBe(true);
    const held = await open.apply(plan, 0);
    expect(held.allowed && held.lease !== undefined).toBe(true);
    // Act: the server goes away mid-run.
    await server.stop();
    const whileDown = await Promise.all(Array.from({ length: 20 }, () => limiter.check(request)));
    const refused = await settle(closed.apply(plan, 7));
    const admittedOpen = await settle(open.apply(plan, 7));
    // Assert: the store reports each outage; the limiter decides it (here open, as asked).
    expect(whileDown.every((d) => d.allowed && d.statuses.length === 0)).toBe(true);
    for (const d of whileDown) if (d.allowed) d.release(); // nothing to give back
    expect(refused).toMatchObject({ name: 'RedisStoreError', code: 'redis_command_failed' });
    expect(admittedOpen).toMatchObject({ name: 'RedisStoreError', code: 'redis_command_failed' });
    // A release that cannot reach Redis resolves; the lease will expire after its TTL.
    if (held.allowed && held.lease) await expect(open.release(held.lease)).resolves.toBeUndefined();
    expect(errors.length).toBe(22);
    expect(new Set(errorCodes(errors))).toEqual(new Set(['redis_command_failed']));
    expect(errors.map((e) => e.operation).filter((o) => o === 'release')).toHaveLength(1);
    // Restart (empty data set, empty script cache) and wait for the client to reconnect.
    await server.restart();
    await clients.get(base)!.ready();
    admin.disconnect();
    admin = await adminClient(server.port);
    const after = await limiter.check(request);
    expect(after.allowed).toBe(true);
    expect(after.statuses).toHaveLength(4);
    expect((await commandCalls()).eval).toBe(1);
    if (after.allowed) after.release();
  });

  it('never overwrites a key of another type: a script error is an outage and the data stays', async () => {
    const prefix = `clash-${kind}-${++prefixes}:`;
    const errors: RedisStoreError[] = [];
    const store = new RedisStore({ client: client(), prefix, onError: (e) => errors.push(e) });
    const plan: Plan = { scopes: [scope('c', 'a', '', [window(5, '1s', { name: 'w' })])] };
    await store.apply(plan, 0);
    const [key] = await keysUnder(prefix);
    await admin.del(key!);
    await admin.rpush(key!, 'not ours');
    const outcome = await settle(store.apply(plan, 0));
    expect(outcome).toBeInstanceOf(RedisStoreError);
    expect(errorCodes(errors)).toEqual(['redis_command_failed']);
    expect(await admin.lrange(key!, 0, -1)).toEqual(['not ours']);
  });

  it('reads a value not in its layout as a fresh state', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 80 }), async (bytes) => {
        const prefix = `junk-${kind}-${++prefixes}:`;
        const store = new RedisStore({ client: client(), prefix, timeSource: 'clock' });
        const policies = [window(2, '1s', { name: 'w' }), concurrency(1, { name: 'c' })];
        const plan: Plan = { scopes: [scope('c', 'a', '', policies)] };
        await store.apply(plan, 0);
        const [key] = await keysUnder(prefix);
        await admin.set(key!, Buffer.from(bytes));
        const outcome = await store.apply(plan, 5_000);
        expect(outcome).toMatchObject({ allowed: true, values: [1, 1_000, 0, 0] });
      }),
      { numRuns: 30 },
    );
  });

  it.each([
    ['text from a client that says it replies in bytes', true, (r: unknown) => String(r)],
    ['bytes cut short', true, (r: unknown) => (r as Buffer).subarray(1)],
    ['an array where text was asked for', false, (r: unknown) => [String(r)]],
  ] as const)('reports a reply it cannot read (%s) as an outage', async (_, binary, spoil) => {
    const errors: RedisStoreError[] = [];
    const c = client();
    const spoilt: RedisScriptClient = {
      evalSha: async (sha, keys, args) => spoil(await c.evalSha(sha, keys, args)),
      eval: async (text, keys, args) => spoil(await c.eval(text, keys, args)),
      binaryReplies: binary,
    };
    const store = new RedisStore({
      client: spoilt,
      prefix: `spoilt-${kind}-${++prefixes}:`,
      onError: (e) => errors.push(e),
    });
    const outcome = await settle(
      store.apply({ scopes: [scope('c', 'a', '', [window(5, '1s', { name: 'w' })])] }, 9),
    );
    expect(outcome).toBeInstanceOf(RedisStoreError);
    expect(errorCodes(errors)).toEqual(['redis_bad_reply']);
  });

  it('decides the same whichever of arguments and replies go as bytes, with leases given back on the way', async () => {
    // Arrange: one store per combination of the client's binaryArguments and binaryReplies.
    const own = client();
    const forms = [
      [false, false],
      [false, true],
      [true, false],
      [true, true],
    ] as const;
    const stores = forms.map(([binaryArguments, binaryReplies]) =>
      make({ timeSource: 'clock', client: { ...own, binaryArguments, binaryReplies } }),
    );
    const throttle = concurrency(2, { name: 't', leaseTtl: '10s' });
    const plans = ['a', 'b'].map(
      (c): Plan => ({ scopes: [scope(c, 'x', '', [window(3, '1s', { name: 'w' }), throttle])] }),
    );
    // Act: decisions that take leases; every other one gives back the lease taken before it,
    // which then travels with the next decision of either client.
    const held: (LeaseToken | undefined)[] = stores.map(() => undefined);
    for (let i = 0; i < 12; i++) {
      const plan = plans[i % 2]!;
      const outcomes = await Promise.all(stores.map((store) => store.apply(plan, 100 * i)));
      // Assert: the same decision from every form.
      const plain = outcomes.map((o) => ({
        ...o,
        lease: o.allowed ? o.lease !== undefined : false,
      }));
      for (const o of plain.slice(1)) expect(o).toEqual(plain[0]);
      for (const [k, store] of stores.entries()) {
        const previous = held[k];
        const outcome = outcomes[k]!;
        held[k] = outcome.allowed ? outcome.lease : undefined;
        if (i % 2 === 1 && previous !== undefined) void store.release(previous);
      }
    }
  });

  it('decides the same with replies in text, also when the client hands the text over as bytes', async () => {
    const c = client();
    const policies = [...presets.live.policies, window(2, '1s', { name: 'w' })];
    const plan: Plan = { scopes: [scope('c', 'a', '', policies)] };
    const asBytes: RedisScriptClient = {
      evalSha: async (sha, keys, args) => c.evalSha(sha, keys, args),
      eval: async (text, keys, args) => c.eval(text, keys, args),
    };
    const stores = [
      make({ timeSource: 'clock' }),
      make({ timeSource: 'clock', client: asBytes }),
      make({ timeSource: 'clock', client: { ...asBytes, binaryReplies: false } }),
    ];
    // Fractional rates and remaining times exercise the text's 17-digit form too; every other
    // decision asks for no statuses, so that an admission replies with five numbers only.
    for (const [i, t] of [0, 0.5, 1, 333.25, 1_000, 1_000.125, 1_000.5, 1_001].entries()) {
      const asked = { ...plan, statuses: i % 2 === 0 };
      const outcomes = await Promise.all(stores.map((store) => store.apply(asked, t)));
      const plain = outcomes.map((o) => ({ ...o, lease: undefined }));
      expect(plain[1]).toEqual(plain[0]);
      expect(plain[2]).toEqual(plain[0]);
    }
  });

  it('survives an onError that throws', async () => {
    server.pause();
    const timer = new ManualTimer();
    const store = make({
      timer,
      onError: () => {
        throw new Error('logger down');
      },
    });
    try {
      const pending = store.apply({ scopes: [scope('c', 'a', '', [window(1, '1s')])] }, 0);
      timer.fireAll();
      // The outage is still reported to the caller, whatever the logger did.
      expect(await settle(pending)).toBeInstanceOf(RedisStoreError);
      // A release that times out resolves too (it is sent at the end of the event loop's turn).
      const lease = {
        store,
        keys: ['k'],
        throttles: [{ scope: 0, position: '1', ttlMs: 1_000, copies: '1' }],
        id: '1',
        t: 0,
      };
      const releasing = store.release(lease as never);
      await new Promise((resolve) => setImmediate(resolve));
      timer.fireAll();
      await expect(releasing).resolves.toBeUndefined();
    } finally {
      server.resume();
    }
  });

  // maxBatch: while decisions are in Redis, the next ones of a turn go together, each decided in
  // the order asked. A decision that finds none in Redis goes alone, so of four asked at once
  // the first two go alone (none, then one, in Redis) and the last two together (two in Redis).
  const batched = (options: Partial<RedisStoreOptions> = {}) =>
    make({ timeSource: 'clock', maxBatch: 8, ...options });
  const account = presets.live.policies;
  const throttled = (i: number): Plan => ({
    scopes: [scope(`c${i}`, 'a', '', [concurrency(1, { name: 't', leaseTtl: '1h' })])],
  });
  /** Four decisions at once, after loading the scripts of one decision and of several. */
  const fourAtOnce = async (store: RedisStore, plan: (i: number) => Plan, warm: number) => {
    const outcomes = await Promise.all([0, 1, 2, 3].map((i) => store.apply(plan(warm + i), 0)));
    for (const o of outcomes) if (o.allowed && o.lease) await store.release(o.lease);
  };

  it('sends a decision alone when none is in Redis, and the next ones of the turn together: as many as are in Redis, at most maxBatch, a decision of another shape after the ones before it', async () => {
    const store = batched({ maxBatch: 8 });
    const one = (i: number): Plan => ({ scopes: [scope(`c${i}`, 'a', '', account)] });
    const exempt = (i: number): Plan => ({ scopes: [scope(`c${i}`, 'a', '', account, [0, 1, 2])] });
    await fourAtOnce(store, one, 100); // loads both scripts
    await admin.config('RESETSTAT');
    // Act: a lone decision.
    const lone = await store.apply(one(50), 1);
    const afterLone = await evalshaCalls();
    // Act: 20 decisions of one shape in one turn: calls of 1, 1, 2, 4, 8 (at most maxBatch), then
    // the 4 left at the end of the turn.
    const twenty = await Promise.all(Array.from({ length: 20 }, (_, i) => store.apply(one(i), 1)));
    const afterTwenty = await evalshaCalls();
    // Act: shapes alternating in one turn: one(30) and one(31) alone; exempt(30) waits, and goes
    // alone when one(32), of another shape, comes; one(32) at the end of the turn.
    const mixed = await Promise.all([
      store.apply(one(30), 2),
      store.apply(one(31), 2),
      store.apply(exempt(30), 2),
      store.apply(one(32), 2),
    ]);
    // Assert
    expect(lone.allowed).toBe(true);
    expect(afterLone).toBe(1);
    expect(twenty.every((o) => o.allowed && o.lease !== undefined)).toBe(true);
    expect(afterTwenty - afterLone).toBe(6);
    expect(mixed.map((o) => o.allowed)).toEqual([true, true, true, true]);
    expect((await evalshaCalls()) - afterTwenty).toBe(4);
    // The window counts of client 30 saw its first decision before its second.
    expect(mixed[2]!.values[0]).toBe(mixed[0]!.values[0]! - 1);
  });

  it('a call of several decisions gives each key the expiry a lone decision gives it: fresh again plus the margin', async () => {
    const prefix = `expiry-batch-${kind}-${++prefixes}:`;
    const store = batched({ prefix, expiryMarginMs: 1_000 });
    const throttle = concurrency(2, { name: 't', leaseTtl: '5s' });
    const windows = ['60s', '60s', '20s', '20s'] as const;
    const plans: Plan[] = windows.map((w, i) => ({
      scopes: [scope(`k${i}`, 'x', '', [window(3, w, { name: 'w' }), throttle])],
    }));
    await fourAtOnce(store, (i) => plans[i % 4]!, 0); // loads both scripts, under another prefix
    await admin.config('RESETSTAT');
    // Act: four at once, the last two in one call; the last one's lease given back.
    const outcomes = await Promise.all(plans.map((plan) => store.apply(plan, 1_000)));
    expect(outcomes.every((o) => o.allowed)).toBe(true);
    const last = outcomes[3]!;
    if (last.allowed && last.lease) await store.release(last.lease);
    const calls = await evalshaCalls();
    const keys = await keysUnder(prefix);
    const ttls = await Promise.all(keys.map((key) => admin.pttl(key)));
    // Assert: each key lives until its newest admission leaves its window, plus the margin.
    expect(calls).toBe(4); // 1, 1, one call of 2, and the release
    expect(keys).toHaveLength(4);
    const expected = [61_000, 61_000, 21_000, 21_000];
    for (const [i, ttl] of ttls.entries()) {
      expect(ttl).toBeLessThanOrEqual(expected[i]!);
      expect(ttl).toBeGreaterThan(expected[i]! - 2_000);
    }
  });

  it('with maxBatch 1 every decision is a script call of its own', async () => {
    const store = make({ maxBatch: 1 });
    const one = (i: number): Plan => ({ scopes: [scope(`c${i}`, 'a', '', account, [0, 1, 2])] });
    await store.apply(one(0), 0);
    await admin.config('RESETSTAT');
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.apply(one(i), 1)));
    expect(await evalshaCalls()).toBe(10);
  });

  it('reports an outage for every decision of a call that times out, and a throttle decision that Redis runs later gives its lease back', async () => {
    // Arrange
    const timer = new ManualTimer();
    const errors: RedisStoreError[] = [];
    const store = batched({ timer, onError: (e) => errors.push(e) });
    await fourAtOnce(store, throttled, 100); // loads both scripts
    // Act: the server freezes; the four decisions' three calls time out.
    server.pause();
    let settled: PromiseSettledResult<StoreOutcome>[];
    try {
      const pending = [0, 1, 2, 3].map((i) => store.apply(throttled(i), 5));
      await new Promise((resolve) => process.nextTick(resolve)); // every call is sent
      expect(timer.pending.size).toBe(3);
      timer.fireAll();
      settled = await Promise.allSettled(pending);
    } finally {
      server.resume();
    }
    // Assert: each rejected with its outage, no lease taken; each failure reported.
    for (const result of settled) {
      expect(result.status).toBe('rejected');
      const reason = (result as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(RedisStoreError);
      expect(reason).toMatchObject({ code: 'redis_timeout', operation: 'apply' });
    }
    expect(errors.map((e) => e.code)).toEqual(Array.from({ length: 4 }, () => 'redis_timeout'));
    // The late calls' replies come before this one's, on the same connection: they took the
    // leases, and they were given back, so each throttle has room again.
    await store.apply({ scopes: [scope('other', 'a', '', account, [0, 1, 2])] }, 6);
    const after = await Promise.all([0, 1, 2, 3].map((i) => store.apply(throttled(i), 6)));
    expect(after.map((o) => o.allowed)).toEqual([true, true, true, true]);
  });

  it('fails every decision of a call that Redis refuses, and sends the releases it carried apart', async () => {
    // Arrange: a client that fails the first call of several decisions (its keys: two decisions'
    // and the lease given back before the first).
    const errors: RedisStoreError[] = [];
    const inner = client();
    let failures = 0;
    const failing: RedisScriptClient = {
      ...inner,
      cluster: false,
      evalSha: (sha1, keys, args) =>
        keys.length >= 3 && ++failures === 1
          ? Promise.reject(new Error('ERR max number of clients reached'))
          : inner.evalSha(sha1, keys, args),
    };
    const store = batched({ client: failing, onError: (e) => errors.push(e) });
    await fourAtOnce(store, throttled, 100); // loads both scripts
    const held = await store.apply(throttled(0), 0);
    expect(held.allowed).toBe(true);
    // Act: two decisions in Redis; the lease given back; two more, together, carry it.
    const first = [store.apply(throttled(1), 1), store.apply(throttled(2), 1)];
    const releasing = held.allowed && held.lease ? store.release(held.lease) : undefined;
    const failed = await Promise.all([
      settle(store.apply(throttled(3), 1)),
      settle(store.apply(throttled(4), 1)),
    ]);
    await Promise.all([...first, releasing]);
    // Assert: both rejected with the outage, both reported; the release still went, apart.
    expect(failures).toBe(1);
    expect(failed.map((o) => o instanceof RedisStoreError)).toEqual([true, true]);
    expect(errors.map((e) => e.code)).toEqual(['redis_command_failed', 'redis_command_failed']);
    expect((await store.apply(throttled(0), 2)).allowed).toBe(true);
  });

  it('a client that refuses keys of several clients in one command (CROSSSLOT) gets each decision asked again apart', async () => {
    const errors: RedisStoreError[] = [];
    const inner = client();
    let refused = 0;
    const strict: RedisScriptClient = {
      ...inner,
      cluster: false, // says it is not a cluster, but behaves as one
      evalSha: (sha1, keys, args) => {
        if (tagCount(keys) > 1) {
          refused++;
          return Promise.reject(crossSlot());
        }
        return inner.evalSha(sha1, keys, args);
      },
    };
    const store = batched({ client: strict, onError: (e) => errors.push(e) });
    const plan = (i: number): Plan => ({ scopes: [scope(`c${i}`, 'a', '', account, [0, 1, 2])] });
    // Act: the last two of four go together, and are refused.
    const first = await Promise.all([0, 1, 2, 3].map((i) => store.apply(plan(i), 0)));
    const second = await Promise.all([0, 1, 2, 3].map((i) => store.apply(plan(i), 1)));
    // Assert: decided, and counted once each; only that call was refused.
    expect(first.every((o) => o.allowed)).toBe(true);
    expect(second.map((o) => o.values[0])).toEqual([198, 198, 198, 198]);
    expect(refused).toBe(1);
    expect(errors).toEqual([]);
  });

  it('reports a reply that is not one reply per decision as redis_bad_reply for each', async () => {
    const errors: RedisStoreError[] = [];
    const inner = client();
    const shorter = (replies: unknown) => (Array.isArray(replies) ? replies.slice(1) : replies);
    const short: RedisScriptClient = {
      ...inner,
      evalSha: async (sha1, keys, args) => shorter(await inner.evalSha(sha1, keys, args)),
      eval: async (text, keys, args) => shorter(await inner.eval(text, keys, args)),
    };
    const store = batched({ client: short, onError: (e) => errors.push(e) });
    const plan = (i: number): Plan => ({ scopes: [scope(`c${i}`, 'a', '', account, [0, 1, 2])] });
    const outcomes = await Promise.all([0, 1, 2, 3].map((i) => settle(store.apply(plan(i), 0))));
    // The two alone decided; the two together were answered with one reply.
    expect(
      outcomes.map((o) => (o instanceof RedisStoreError ? o.code : (o as StoreOutcome).allowed)),
    ).toEqual([true, true, 'redis_bad_reply', 'redis_bad_reply']);
    expect(errors.map((e) => e.code)).toEqual(['redis_bad_reply', 'redis_bad_reply']);
  });

  it('keeps deciding after SCRIPT FLUSH, reloading the script of several decisions with EVAL', async () => {
    const store = batched();
    const plan = (i: number): Plan => ({ scopes: [scope(`c${i}`, 'a', '', account, [0, 1, 2])] });
    await Promise.all([0, 1, 2, 3].map((i) => store.apply(plan(i), 0)));
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    const after = await Promise.all([0, 1, 2, 3].map((i) => store.apply(plan(i), 1)));
    expect(after.map((o) => o.values[0])).toEqual([198, 198, 198, 198]);
    // Each of the three calls found no script, and sent it with EVAL.
    expect((await commandCalls()).eval).toBe(3);
  });
  it.each([
    ['no options', undefined],
    ['no client', {}],
    ['a client without eval', { client: { evalSha: async () => '' } }],
    ['a prefix with a brace', { prefix: 'a{b' }],
    ['an unknown time source', { timeSource: 'local' }],
    ['a timeout of 0', { timeoutMs: 0 }],
    ['a negative margin', { expiryMarginMs: -1 }],
    ['an instance id of 0', { instanceId: 0 }],
    // Lease ids hold the instance id below 2^32: 2^32 + 1 would take the lease ids of 1.
    ['an instance id of 2^32, whose lease ids another store would share', { instanceId: 2 ** 32 }],
    // Timers wait at most 2^31 - 1 ms; a longer timeout would fire after 1 ms.
    ['a timeout longer than a timer can wait', { timeoutMs: 2 ** 31 }],
    // UTF-8 writes every lone surrogate as U+FFFD: two such prefixes would share every key.
    ['a prefix with a lone surrogate', { prefix: 'limits\uD800:' }],
    ['an onError that is not a function', { onError: 'log' }],
    ['a timer without clearTimeout', { timer: { setTimeout: () => 0 } }],
    ['a maxBatch of 0', { maxBatch: 0 }],
    ['a fractional maxBatch', { maxBatch: 1.5 }],
    ['a maxBatch above 1024', { maxBatch: 1_025 }],
    ['a maxBatch in text', { maxBatch: '8' }],
  ])('refuses %s with a ConfigurationError', (_, options) => {
    const withClient =
      options === undefined || 'client' in options || _ === 'no client'
        ? options
        : { client: client(), ...options };
    expect(isConfigurationError(thrown(() => new RedisStore(withClient as never)))).toBe(true);
  });

  it.each([
    ['in text', false],
    ['as bytes', true],
  ] as const)(
    'lease ids (%s) stay exact whole numbers below 2^53 up to the largest instance id, and differ from those of any other id',
    async (_, binaryArguments) => {
      // Arrange: a client that records the lease id argument, the first argument when the time
      // comes from the server.
      const ids: number[] = [];
      const admitting: RedisScriptClient = {
        evalSha: async (__, ___, args) => {
          const id = args[0]!;
          if (binaryArguments) {
            expect(Buffer.isBuffer(id) && id.length === 8).toBe(true);
            ids.push((id as Buffer).readDoubleLE(0));
          } else {
            expect(typeof id).toBe('string');
            expect(String(Number(id))).toBe(id);
            ids.push(Number(id));
          }
          return '1,5,0,0,0,0,0';
        },
        eval: async () => '',
        binaryArguments,
      };
      const plan: Plan = { scopes: [scope('c', 'a', '', [concurrency(1, { name: 't' })])] };
      // Act
      for (const instanceId of [2 ** 32 - 1, 1]) {
        const store = new RedisStore({ client: admitting, instanceId });
        // The reply is not one the store reads (an outage, reported): only the ids sent matter.
        for (let i = 0; i < 3; i++) await settle(store.apply(plan, 0));
      }
      // Assert
      expect(new Set(ids).size).toBe(6);
      for (const id of ids) expect(Number.isSafeInteger(id)).toBe(true);
    },
  );

  it.each([
    ['ioredisClient', ioredisClient],
    ['nodeRedisClient', nodeRedisClient],
  ] as const)('%s refuses an object without the script commands', (_, adapt) => {
    expect(thrown(() => adapt({} as never))).toMatchObject({
      name: 'ConfigurationError',
      code: 'invalid_redis_client',
    });
  });

  it('the adapters say whether the client is a cluster and reads replies as bytes, from the client itself', async () => {
    const { Cluster, Redis: IoRedis } = await import('ioredis');
    const { createClient, createCluster } = await import('redis');
    const single = new IoRedis({ lazyConnect: true });
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      expect(ioredisClient(single).cluster).toBe(false);
      expect(ioredisClient(cluster).cluster).toBe(true);
      expect(nodeRedisClient(createClient()).cluster).toBe(false);
      expect(
        nodeRedisClient(createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] })).cluster,
      ).toBe(true);
      // An ioredis-like object that does not say is taken for a cluster, and replies in text.
      const bare = ioredisClient({ evalsha: async () => 1, eval: async () => 1 });
      expect([bare.cluster, bare.binaryReplies]).toEqual([true, false]);
      // Both clients can hand over bulk strings as bytes.
      expect(ioredisClient(single).binaryReplies).toBe(true);
      expect(nodeRedisClient(createClient()).binaryReplies).toBe(true);
    } finally {
      single.disconnect();
      cluster.disconnect();
    }
  });

  it('the adapters work with clients that lack the optional parts: a connection that cannot be corked, no bytes replies', async () => {
    // Arrange: an ioredis client seen without its stream and Buffer commands (as a Cluster is, or
    // an older ioredis), and a node-redis client without withTypeMapping (node-redis 4).
    const { Redis: IoRedis } = await import('ioredis');
    const { createClient } = await import('redis');
    const io = new IoRedis({ port: server.port, host: '127.0.0.1', lazyConnect: true });
    const nr = createClient({ socket: { host: '127.0.0.1', port: server.port } });
    io.on('error', () => undefined);
    nr.on('error', () => undefined);
    await io.connect();
    await nr.connect();
    try {
      const adapted = [
        ioredisClient({
          get status() {
            return io.status;
          },
          isCluster: false,
          stream: {} as never,
          evalsha: (sha1, n, ...rest) => io.evalsha(sha1, n, ...rest),
          eval: (text, n, ...rest) => io.eval(text, n, ...rest),
        }),
        nodeRedisClient({
          isReady: true,
          evalSha: (sha1, options) => nr.evalSha(sha1, options),
          eval: (text, options) => nr.eval(text, options),
        }),
      ];
      for (const [i, adapter] of adapted.entries()) {
        expect(adapter.binaryReplies).toBe(false);
        const store = new RedisStore({
          client: adapter,
          prefix: `bare-${i}:`,
          timeSource: 'clock',
        });
        const plan: Plan = { scopes: [scope('c', 'a', '', [window(1, '1s', { name: 'w' })])] };
        // Act and assert: decided in text replies, the script loaded by the first call.
        expect(await store.apply(plan, 0)).toMatchObject({ allowed: true, values: [0, 1_000] });
        expect(await store.apply(plan, 1)).toMatchObject({
          allowed: false,
          reason: 'limit',
          retryAfterSeconds: 1,
        });
      }
    } finally {
      io.disconnect();
      nr.destroy();
    }
  });

  it('the adapters send nothing while the client is not ready: the command rejects with RedisNotReadyError, and the store fails over', async () => {
    // Arrange: clients that count what they are asked to send.
    let sent = 0;
    const count = async () => {
      sent++;
      return 'ok';
    };
    const adapted = [
      ioredisClient({ status: 'reconnecting', isCluster: false, evalsha: count, eval: count }),
      nodeRedisClient({ isReady: false, evalSha: count, eval: count }),
    ];
    for (const adapter of adapted) {
      // Act and assert: both commands reject, nothing is sent.
      for (const command of [adapter.evalSha('sha', ['k'], []), adapter.eval('x', ['k'], [])]) {
        expect(
          await command.then(
            () => undefined,
            (e: unknown) => e,
          ),
        ).toBeInstanceOf(RedisNotReadyError);
      }
      const errors: RedisStoreError[] = [];
      const store = new RedisStore({
        client: adapter,
        onError: (e) => errors.push(e),
      });
      const outcome = await settle(
        store.apply({ scopes: [scope('c', 'a', '', [window(1, '1s')])] }, 7),
      );
      expect(outcome).toBeInstanceOf(RedisStoreError);
      expect(errorCodes(errors)).toEqual(['redis_command_failed']);
      expect(errors[0]?.cause).toBeInstanceOf(RedisNotReadyError);
    }
    expect(sent).toBe(0);
  });

  it('a client whose commands throw instead of rejecting never makes the store throw: decisions and releases fail over and are reported', async () => {
    const boom = () => {
      throw new Error('connection is closed');
    };
    const plan: Plan = { scopes: [scope('c', 'a', '', [concurrency(1, { name: 't' })])] };
    const throwing: RedisScriptClient[] = [
      ioredisClient({ status: 'ready', isCluster: false, evalsha: boom, eval: boom }),
      { evalSha: boom, eval: boom, cluster: false },
    ];
    for (const client of throwing) {
      for (const maxBatch of [1, 8]) {
        const errors: RedisStoreError[] = [];
        const store = new RedisStore({ client, maxBatch, onError: (e) => errors.push(e) });
        // Four at once: with maxBatch 8, the last two in one call.
        const failed = await Promise.all([0, 1, 2, 3].map(() => settle(store.apply(plan, 3))));
        expect(failed.every((o) => o instanceof RedisStoreError)).toBe(true);
        expect(errorCodes(errors)).toEqual(Array.from({ length: 4 }, () => 'redis_command_failed'));
      }
    }
    // A client whose commands answer, and whose flush (after a call of several) throws.
    const errors: RedisStoreError[] = [];
    const flushing: RedisScriptClient = { ...client(), cluster: false, flush: boom };
    const store = new RedisStore({
      client: flushing,
      prefix: `flush-${kind}-${++prefixes}:`,
      maxBatch: 8,
      onError: (e) => errors.push(e),
    });
    const outcomes = await Promise.all(
      [0, 1, 2, 3].map((i) => settle(store.apply(throttled(i), 3))),
    );
    // The two alone decided; the two together rejected with the outage.
    expect(
      outcomes.map((o) =>
        o instanceof RedisStoreError ? o.code : (o as StoreOutcome).allowed && 'admitted',
      ),
    ).toEqual(['admitted', 'admitted', 'redis_command_failed', 'redis_command_failed']);
    expect(errorCodes(errors)).toEqual(['redis_command_failed', 'redis_command_failed']);
  });

  it('ioredisClient joins the writes of one turn: corked before the first, uncorked after every 16th, at the end of the turn and on flush()', async () => {
    // Arrange: an ioredis-like client whose connection records how it is corked.
    class Stream {
      depth = 0;
      corks = 0;
      uncorks = 0;
      cork() {
        this.depth++;
        this.corks++;
      }
      uncork() {
        this.depth--;
        this.uncorks++;
      }
    }
    let stream = new Stream();
    const whileCorked: boolean[] = [];
    const fake = {
      status: 'ready',
      isCluster: false,
      get stream() {
        return stream;
      },
      evalsha: async () => {
        whileCorked.push(stream.depth > 0);
        return 'ok';
      },
      eval: async () => 'ok',
    };
    const adapted = ioredisClient(fake);
    // Act: 40 commands in one turn.
    const replies = Array.from({ length: 40 }, () => adapted.evalSha('sha', ['k'], []));
    // Assert: every write held; two batches sent so far, the rest at the end of the turn.
    expect(whileCorked).toEqual(Array.from({ length: 40 }, () => true));
    expect([stream.corks, stream.uncorks, stream.depth]).toEqual([3, 2, 1]);
    await Promise.all(replies);
    await new Promise((resolve) => setImmediate(resolve)); // the turn has ended
    expect([stream.corks, stream.uncorks, stream.depth]).toEqual([3, 3, 0]);
    // A new connection (a reconnect) mid-turn: the old one is uncorked before the new is corked.
    const old = stream;
    void adapted.evalSha('sha', ['k'], []);
    stream = new Stream();
    await adapted.evalSha('sha', ['k'], []);
    await new Promise((resolve) => setImmediate(resolve));
    expect([old.corks, old.uncorks, old.depth]).toEqual([4, 4, 0]);
    expect([stream.corks, stream.uncorks, stream.depth]).toEqual([1, 1, 0]);
    // flush() writes what is held at once (the store calls it after a call of several decisions).
    void adapted.evalSha('sha', ['k'], []);
    expect(stream.depth).toBe(1);
    adapted.flush?.();
    expect([stream.corks, stream.uncorks, stream.depth]).toEqual([2, 2, 0]);
    adapted.flush?.(); // nothing held: nothing to do
    expect(stream.uncorks).toBe(2);
  });

  it('pins the catalogue of Redis store error codes', () => {
    expect([...redisStoreErrorCodes]).toEqual([
      'redis_timeout',
      'redis_command_failed',
      'redis_bad_reply',
    ]);
    expect(new RedisStoreError('redis_timeout', 'apply', 'm')).toBeInstanceOf(Error);
  });
});

describe('RedisStore replies', () => {
  const plan = (statuses?: boolean): Plan => ({
    scopes: [scope('c', 'a', '', [window(5, '1s', { name: 'w' })])],
    ...(statuses === undefined ? {} : { statuses }),
  });
  /** A client whose every script call answers `reply`. */
  const replying = (reply: unknown, binaryReplies: boolean): RedisScriptClient => ({
    evalSha: async () => reply,
    eval: async () => reply,
    binaryReplies,
  });
  const doubles = (...values: number[]) => {
    const bytes = Buffer.alloc(8 * values.length);
    for (const [i, value] of values.entries()) bytes.writeDoubleLE(value, 8 * i);
    return bytes;
  };

  // The script replies to a refusal: 0, time, reason code, Retry-After, the refusing policy's
  // place (from 1), then what remains of each policy and when its quota is back; to an admission:
  // 1, time, then (with statuses) each policy's count after it (a window's, here), from which the
  // store works out the statuses.
  it.each<[string, unknown, boolean, boolean | undefined, Partial<StoreOutcome>]>([
    [
      'a refusal in text',
      '0,5,1,3,1,0,1000',
      false,
      undefined,
      { reason: 'limit', retryAfterSeconds: 3 },
    ],
    ['a refusal in bytes', doubles(0, 5, 2, 3, 1, 0, 1000), true, undefined, { reason: 'blocked' }],
    ['an admission without statuses', '1,5', false, false, { allowed: true, values: [] }],
    ['an admission in text', '1,5,3', false, undefined, { allowed: true, values: [2, 1_000] }],
    [
      'an admission in bytes',
      doubles(1, 5.5, 5),
      true,
      true,
      { allowed: true, now: 5.5, values: [0, 1_000] },
    ],
  ])('reads %s as the script writes it', async (_, reply, binary, statuses, expected) => {
    const store = new RedisStore({ client: replying(reply, binary) });
    expect(await store.apply(plan(statuses), 9)).toMatchObject({
      allowed: false,
      now: 5,
      ...expected,
    });
  });

  it.each<[string, unknown, boolean, boolean | undefined]>([
    ['text with a number too few', '0,5,1,3,1,0', false, undefined],
    ['text with a number that is not one', '0,5,1,3,1,0,NaN', false, undefined],
    ['text with an empty field', '0,5,1,3,1,,1000', false, undefined],
    ['an unknown reason code', '0,5,7,3,1,0,1000', false, undefined],
    ['a refusing policy at place 0', '0,5,1,3,0,0,1000', false, undefined],
    ['a refusing policy past the last', '0,5,1,3,2,0,1000', false, undefined],
    ['a refusal without its statuses', '0,5,1,3,1', false, false],
    ['an admission without its count', '1,5', false, undefined],
    ['an admission with a number too many', '1,5,3,0', false, undefined],
    ['an admission without statuses with more than its time', '1,5,0,0,0', false, false],
    ['a decision that is neither admitted nor refused', '2,5,1,3,1,0,1000', false, undefined],
    ['a reply shorter than a decision', '1', false, false],
    [
      'bytes with a number that is not finite',
      doubles(0, 5, 1, 3, 1, 0, Infinity),
      true,
      undefined,
    ],
  ])(
    'a garbled reply (%s) is a redis_bad_reply the store rejects with, never a decision',
    async (_, reply, binary, statuses) => {
      // Arrange
      const errors: RedisStoreError[] = [];
      const options = {
        client: replying(reply, binary),
        onError: (e: RedisStoreError) => errors.push(e),
      };
      const store = new RedisStore(options);
      // Act
      const rejection = await settle(store.apply(plan(statuses), 9));
      // Assert
      expect(rejection).toBeInstanceOf(RedisStoreError);
      expect(rejection).toMatchObject({ code: 'redis_bad_reply', operation: 'apply' });
      expect(errors).toEqual([rejection]);
      expect(errors[0]?.message).toMatch(/^Unexpected reply from the decision script: /);
    },
  );

  it('reports a script that fails with a value that is not an Error, naming the value', async () => {
    const errors: RedisStoreError[] = [];
    const store = new RedisStore({
      client: { evalSha: () => Promise.reject('READONLY'), eval: () => Promise.reject('READONLY') },
      onError: (e) => errors.push(e),
    });
    const rejection = await settle(store.apply(plan(), 9));
    expect(errors).toEqual([rejection]);
    expect(errors[0]).toMatchObject({
      code: 'redis_command_failed',
      operation: 'apply',
      message: 'The apply script failed: "READONLY"',
      cause: 'READONLY',
    });
  });

  it('reports an outage, not a crash, when Redis is down and the time it was given is not finite', async () => {
    const down: RedisScriptClient = {
      evalSha: () => Promise.reject(new Error('connect ECONNREFUSED')),
      eval: () => Promise.reject(new Error('connect ECONNREFUSED')),
    };
    const store = new RedisStore({ client: down, onError: () => undefined });
    expect(await settle(store.apply(plan(), Number.NaN))).toMatchObject({
      name: 'RedisStoreError',
      code: 'redis_command_failed',
    });
  });

  it.each([
    [
      'failMode',
      { failMode: 'open' },
      /^failMode must be left out, as RedisStore has no option failMode any more: the store reports an outage \(apply rejects with a RedisStoreError\) and never decides it; decide in one place, the middleware's failure option \('open' or 'closed', a 503\) or createLimiter's outage option \('open', 'closed', 'fallback' or 'reject'\), got "open"\.$/,
    ],
    ['failMode', { failMode: 'reject' }, /^failMode must be left out, .*, got "reject"\.$/],
    [
      'failClosedRetryAfterSeconds',
      { failClosedRetryAfterSeconds: 3 },
      /^failClosedRetryAfterSeconds must be left out, as RedisStore has no option failClosedRetryAfterSeconds any more: set the Retry-After of an outage where it is decided, createLimiter's outageRetryAfterSeconds \(with outage: 'closed'\) or the middleware's failureRetryAfterSeconds \(with failure: 'closed'\), got 3\.$/,
    ],
    ['a misspelt option', { timeoutMS: 50 }, /no option "timeoutMS"; did you mean "timeoutMs"\?/],
  ])(
    'refuses the removed option %s, and unknown ones, saying what to use instead',
    (_, extra, message) => {
      const client: RedisScriptClient = { evalSha: async () => 0, eval: async () => 0 };
      let thrownError: unknown;
      try {
        new RedisStore({ client, ...(extra as object) });
      } catch (error) {
        thrownError = error;
      }
      expect(thrownError).toMatchObject({ name: 'ConfigurationError', code: 'invalid_option' });
      expect((thrownError as Error).message).toMatch(message);
    },
  );
});
