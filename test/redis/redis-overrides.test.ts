/**
 * RedisOverrides against a real redis-server, with both clients: set, delete, get and list; two
 * sources on one prefix (a change on one is applied by the other at its next refresh, and at once
 * by the one that made it); expiry; bad input refused before Redis is asked; entries written by
 * hand that do not parse skipped and reported; a refresh that fails keeps the table; close().
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createLimiter,
  FakeClock,
  isConfigurationError,
  isInvalidRequestError,
  type LimitPreset,
  MemoryOverrides,
  MemoryStore,
  window,
} from '../../src/index.js';
import {
  RedisOverrides,
  type RedisOverridesError,
  type RedisOverridesOptions,
  type RedisScriptClient,
  redisOverridesErrorCodes,
} from '../../src/redis/index.js';
import { refreshScript } from '../../src/redis/overrides-scripts.js';
import {
  adminClient,
  type ClientKind,
  clientKinds,
  connect,
  RedisServer,
  type TestClient,
} from '../support/redis-server.js';

const partner: LimitPreset = { name: 'partner', policies: [window(50, '1m')] };
const small: LimitPreset = { name: 'small', policies: [window(2, '1h')] };

let server: RedisServer;
let admin: Redis;
const clients = new Map<ClientKind, TestClient>();
const sources: RedisOverrides[] = [];
let prefixes = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = await adminClient(server.port);
  for (const kind of clientKinds) clients.set(kind, await connect(kind, server.port));
});

afterAll(async () => {
  for (const s of sources) await s.close();
  for (const c of clients.values()) await c.close();
  admin.disconnect();
  await server.stop();
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

function prefix(): string {
  return `ov${++prefixes}:`;
}

/** A source closed after the file, with a prefix of its own unless given one. */
function source(kind: ClientKind, options: Partial<RedisOverridesOptions> = {}): RedisOverrides {
  const s = new RedisOverrides({
    client: clients.get(kind)!.client,
    presets: { partner },
    refreshMs: 1_000,
    onError: () => undefined,
    ...options,
  });
  sources.push(s);
  return s;
}

describe.each(clientKinds)('RedisOverrides (%s)', (kind) => {
  it('set, get, list and delete round trip through Redis, and the setter applies a set at once', async () => {
    const p = prefix();
    const overrides = source(kind, { prefix: p });
    await overrides.ready();

    const entry = await overrides.set({ clientId: 'client-1' }, { multiplier: 3 });
    const account = await overrides.set(
      { clientId: 'client-1', accountCode: 'ACME' },
      { preset: 'partner', expiresAt: new Date('2100-01-01T00:00:00Z') },
    );

    expect(entry).toEqual({ clientId: 'client-1', multiplier: 3 });
    expect(account).toEqual({
      clientId: 'client-1',
      accountCode: 'ACME',
      preset: 'partner',
      expiresAt: Date.parse('2100-01-01T00:00:00Z'),
    });
    expect(overrides.get({ clientId: 'client-1' })).toEqual(entry);
    expect(overrides.lookup('client-1', 'OTHER', 0)).toEqual(entry);
    expect(overrides.lookup('client-1', 'ACME', 0)).toEqual(account);
    expect(overrides.list()).toEqual([entry, account]);
    expect(overrides.preset('partner')).toMatchObject({ name: 'partner' });
    // What Redis holds: one hash, a JSON field per target, the override alone as its value.
    const hash = await admin.hgetall(`${p}overrides`);
    expect(hash).toMatchObject({
      '["client-1"]': '{"multiplier":3}',
      '["client-1","ACME"]': `{"preset":"partner","expiresAt":${Date.parse('2100-01-01T00:00:00Z')}}`,
    });
    expect(Object.keys(hash).sort()).toEqual(['["client-1","ACME"]', '["client-1"]', 'version']);

    expect(await overrides.delete({ clientId: 'client-1' })).toBe(true);
    expect(await overrides.delete({ clientId: 'client-1' })).toBe(false);
    expect(overrides.get({ clientId: 'client-1' })).toBeUndefined();
    expect(overrides.lookup('client-1', 'OTHER', 0)).toBeUndefined();
    expect(overrides.list()).toEqual([account]);
    expect(await admin.hexists(`${p}overrides`, '["client-1"]')).toBe(0);

    // A fresh source on the prefix loads what Redis holds.
    const fresh = source(kind, { prefix: p });
    await fresh.ready();
    expect(fresh.list()).toEqual([account]);
  });

  it('a change on one source is applied by another on the same prefix at its next refresh', async () => {
    const p = prefix();
    const a = source(kind, { prefix: p });
    const b = source(kind, { prefix: p });
    const refreshes: boolean[] = [];
    const c = source(kind, { prefix: p, onRefresh: (r) => refreshes.push(r.changed) });
    await Promise.all([a.ready(), b.ready(), c.ready()]);

    await a.set({ clientId: 'client-1' }, { multiplier: 2 });
    expect(b.lookup('client-1', 'ACME', 0)).toBeUndefined();
    await b.refresh();
    expect(b.lookup('client-1', 'ACME', 0)).toEqual({ clientId: 'client-1', multiplier: 2 });

    await b.set({ clientId: 'client-1' }, { preset: 'partner' });
    await a.refresh();
    expect(a.lookup('client-1', 'ACME', 0)).toEqual({ clientId: 'client-1', preset: 'partner' });

    await a.delete({ clientId: 'client-1' });
    await b.refresh();
    expect(b.lookup('client-1', 'ACME', 0)).toBeUndefined();
    expect(b.list()).toEqual([]);

    // Nothing changed since: a refresh reads the version only.
    await c.refresh();
    await c.refresh();
    expect(refreshes.slice(-2)).toEqual([true, false]);
    expect(c.list()).toEqual([]);
  });

  it('an expired override is ignored by lookup, and removed from Redis by the next set', async () => {
    const p = prefix();
    const clock = new FakeClock(1_000_000);
    const a = source(kind, { prefix: p, clock });
    const b = source(kind, { prefix: p, clock });
    await Promise.all([a.ready(), b.ready()]);

    await a.set({ clientId: 'client-1' }, { multiplier: 2, expiresAt: 1_060_000 });
    await b.refresh();
    expect(a.lookup('client-1', 'ACME', 1_059_999)).toMatchObject({ multiplier: 2 });
    expect(b.lookup('client-1', 'ACME', 1_059_999)).toMatchObject({ multiplier: 2 });
    expect(a.lookup('client-1', 'ACME', 1_060_000)).toBeUndefined();
    expect(b.lookup('client-1', 'ACME', 1_060_000)).toBeUndefined();

    // An expiry that has passed is refused, as MemoryOverrides refuses it.
    clock.set(1_060_000);
    const late = await rejection(
      a.set({ clientId: 'client-2' }, { multiplier: 2, expiresAt: 1_060_000 }),
    );
    expect(isConfigurationError(late) && late.code).toBe('invalid_override');

    expect(await admin.hexists(`${p}overrides`, '["client-1"]')).toBe(1);
    await a.set({ clientId: 'client-2' }, { multiplier: 4 });
    expect(await admin.hexists(`${p}overrides`, '["client-1"]')).toBe(0);
    await b.refresh();
    expect(b.list()).toEqual([{ clientId: 'client-2', multiplier: 4 }]);
  });

  it('bad input is refused with the typed errors of MemoryOverrides, and nothing is written', async () => {
    const p = prefix();
    const overrides = source(kind, { prefix: p });
    await overrides.ready();

    const cases: Array<[unknown, unknown, string]> = [
      [{ clientId: '' }, { multiplier: 2 }, 'invalid_client_id'],
      [{ clientId: 'x'.repeat(257) }, { multiplier: 2 }, 'invalid_client_id'],
      [{ clientId: 'c', accountCode: 7 }, { multiplier: 2 }, 'invalid_account_code'],
      [{ clientId: 'c' }, {}, 'invalid_override'],
      [{ clientId: 'c' }, { multiplier: 2, preset: 'partner' }, 'invalid_override'],
      [{ clientId: 'c' }, { multiplier: 0 }, 'invalid_override'],
      [{ clientId: 'c' }, { multiplier: 1001 }, 'invalid_override'],
      [{ clientId: 'c' }, { multiplier: 2, expiresAt: 'tomorrow' }, 'invalid_override'],
      [{ clientId: 'c' }, { preset: 'gold' }, 'unknown_preset'],
      [null, { multiplier: 2 }, 'invalid_request'],
    ];
    for (const [target, override, code] of cases) {
      const error = await rejection(overrides.set(target as never, override as never));
      expect(
        (isConfigurationError(error) || isInvalidRequestError(error)) && error.code,
        JSON.stringify([target, override]),
      ).toBe(code);
      expect((error as Error).message.length).toBeGreaterThan(20);
    }
    const deleteError = await rejection(overrides.delete({ clientId: '' }));
    expect(isInvalidRequestError(deleteError) && deleteError.code).toBe('invalid_client_id');
    expect(() => overrides.get({ clientId: '' })).toThrow(/clientId/);
    expect(await admin.exists(`${p}overrides`)).toBe(0);
  });

  it('entries written by hand that do not parse, or name a preset it lacks, are skipped and reported once; decisions go on', async () => {
    const p = prefix();
    const key = `${p}overrides`;
    await admin.hset(key, {
      'not json': '{"multiplier":2}',
      '["c1"]': '{"multipler":2}',
      '["c2"]': '{"preset":"gold"}',
      '[ "c3" ]': '{"multiplier":2}',
      '["c4"]': 'not json',
      '["c5"]': '{"multiplier":-1}',
      '[""]': '{"multiplier":2}',
      '["c6",null]': '{"multiplier":2}',
      '["ok"]': '{"multiplier":2}',
    });
    const errors: RedisOverridesError[] = [];
    const overrides = source(kind, { prefix: p, onError: (e) => errors.push(e) });
    const limiter = createLimiter({ preset: small, store: new MemoryStore(), overrides });

    await overrides.ready();

    expect(overrides.list()).toEqual([{ clientId: 'ok', multiplier: 2 }]);
    expect(errors.map((e) => [e.code, e.operation, e.field]).sort()).toEqual(
      ['not json', '["c1"]', '["c2"]', '[ "c3" ]', '["c4"]', '["c5"]', '[""]', '["c6",null]']
        .map((field) => ['invalid_stored_override', 'refresh', field])
        .sort(),
    );
    expect(errors.find((e) => e.field === '["c1"]')!.message).toMatch(/multipler/);
    expect(errors.find((e) => e.field === '["c2"]')!.message).toMatch(/gold/);
    for (const clientId of ['c1', 'c2', 'c3', 'c4', 'c5']) {
      const decision = await limiter.check({
        clientId,
        accountCode: 'A',
        method: 'GET',
        path: '/x',
      });
      expect(decision.allowed).toBe(true);
      expect(decision.statuses.map((s) => (s.policy as { limit: number }).limit)).toEqual([2]);
    }
    const raised = await limiter.check({
      clientId: 'ok',
      accountCode: 'A',
      method: 'GET',
      path: '/x',
    });
    expect(raised.statuses.map((s) => (s.policy as { limit: number }).limit)).toEqual([4]);

    // Read whole again after a change: the same skipped entries are not reported again, a new one is.
    await overrides.set({ clientId: 'c7' }, { multiplier: 2 });
    await admin.hset(key, '["c8"]', '[]');
    await admin.hset(key, 'version', 'written-by-hand');
    await overrides.refresh();
    expect(errors.map((e) => e.field).slice(8)).toEqual(['["c8"]']);
    expect(overrides.list().map((e) => e.clientId)).toEqual(['ok', 'c7']);
  });
});

describe('RedisOverrides tables', () => {
  it('after any sets and deletes on two sources, both hold what one MemoryOverrides given them holds', async () => {
    const target = fc.record(
      {
        clientId: fc.constantFrom('c1', 'c2', 'c{3}%'),
        accountCode: fc.constantFrom(undefined, 'A', 'B'),
      },
      { requiredKeys: ['clientId'] },
    );
    const step = fc.oneof(
      fc.record({
        by: fc.nat(1),
        target,
        override: fc.oneof(
          fc.record({ multiplier: fc.constantFrom(0.5, 2, 3) }),
          fc.constant({ preset: 'partner' }),
        ),
      }),
      fc.record({ by: fc.nat(1), target }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 12 }), async (steps) => {
        // Arrange: two sources on a fresh prefix, and the model.
        const p = prefix();
        const pair = [source('ioredis', { prefix: p }), source('node-redis', { prefix: p })];
        const model = new MemoryOverrides({ presets: { partner } });
        await Promise.all(pair.map((s) => s.ready()));
        // Act: each step on one of the two.
        for (const s of steps) {
          const on = pair[s.by]!;
          if ('override' in s) {
            expect(await on.set(s.target, s.override)).toEqual(model.set(s.target, s.override));
          } else expect(await on.delete(s.target)).toBe(model.delete(s.target));
        }
        await Promise.all(pair.map((s) => s.refresh()));
        // Assert: the same table everywhere.
        const sorted = (list: readonly object[]) => list.map((e) => JSON.stringify(e)).sort();
        for (const s of pair) expect(sorted(s.list())).toEqual(sorted(model.list()));
        for (const s of pair.splice(0)) await s.close();
      }),
      { numRuns: 25 },
    );
  });

  it('a set answered while a refresh is under way is kept, and the next refresh reads the whole hash', async () => {
    const base = clients.get('ioredis')!.client;
    let hold: Promise<void> | undefined;
    const holding: RedisScriptClient = {
      // The refresh's reply, read before the set ran, reaches the source only after the set's.
      evalSha: async (sha1, keys, args) => {
        const reply = await base.evalSha(sha1, keys, args);
        if (sha1 === refreshScript.sha1 && hold !== undefined) await hold;
        return reply;
      },
      eval: (script, keys, args) => base.eval(script, keys, args),
    };
    const p = prefix();
    const refreshes: boolean[] = [];
    const overrides = source('ioredis', {
      client: holding,
      prefix: p,
      onRefresh: (r) => refreshes.push(r.changed),
    });
    const other = source('ioredis', { prefix: p });
    await overrides.ready();
    await other.set({ clientId: 'other' }, { multiplier: 2 });

    let release!: () => void;
    hold = new Promise((resolve) => {
      release = resolve;
    });
    const refreshing = overrides.refresh();
    await overrides.set({ clientId: 'mine' }, { multiplier: 3 });
    release();
    hold = undefined;
    await refreshing;

    expect(overrides.lookup('mine', 'A', 0)).toEqual({ clientId: 'mine', multiplier: 3 });
    expect(overrides.lookup('other', 'A', 0)).toEqual({ clientId: 'other', multiplier: 2 });
    await overrides.refresh();
    expect(refreshes.slice(-2)).toEqual([true, true]);
    expect(
      overrides
        .list()
        .map((e) => e.clientId)
        .sort(),
    ).toEqual(['mine', 'other']);
  });

  it('a key of another type at its name fails the refresh, which keeps the table', async () => {
    const p = prefix();
    const errors: RedisOverridesError[] = [];
    const overrides = source('node-redis', { prefix: p, onError: (e) => errors.push(e) });
    await overrides.set({ clientId: 'client-1' }, { multiplier: 2 });
    await overrides.ready();
    await admin.del(`${p}overrides`);
    await admin.set(`${p}overrides`, 'not a hash');

    const failed = await rejection(overrides.refresh());

    expect(failed).toMatchObject({ code: 'redis_command_failed', operation: 'refresh' });
    expect((failed as Error).message).toMatch(/WRONGTYPE/);
    expect(errors).toEqual([failed]);
    expect(overrides.list()).toEqual([{ clientId: 'client-1', multiplier: 2 }]);
  });
});

describe('RedisOverrides when Redis fails', () => {
  let own: RedisServer;
  let client: TestClient;
  let ownAdmin: Redis;

  beforeAll(async () => {
    own = await RedisServer.start();
    client = await connect('ioredis', own.port);
    ownAdmin = await adminClient(own.port);
  });

  afterAll(async () => {
    await client.close();
    ownAdmin.disconnect();
    await own.stop();
  });

  it('a refresh that fails keeps the table, rejects and reports; the default logs one line per failure streak', async () => {
    const errors: RedisOverridesError[] = [];
    const reported = new RedisOverrides({
      client: client.client,
      refreshMs: 1_000,
      onError: (e) => errors.push(e),
    });
    const logged = new RedisOverrides({ client: client.client, refreshMs: 1_000 });
    sources.push(reported, logged);
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    await reported.set({ clientId: 'client-1' }, { multiplier: 2 });
    await Promise.all([reported.ready(), logged.ready()]);
    expect(logged.list()).toEqual([{ clientId: 'client-1', multiplier: 2 }]);

    await own.stop();
    const failed = await rejection(reported.refresh());
    await rejection(logged.refresh());
    await rejection(logged.refresh());

    expect(failed).toMatchObject({ name: 'RedisOverridesError', operation: 'refresh' });
    expect(['redis_command_failed', 'redis_timeout']).toContain(
      (failed as RedisOverridesError).code,
    );
    expect(errors).toEqual([failed]);
    expect(reported.lookup('client-1', 'ACME', 0)).toEqual({ clientId: 'client-1', multiplier: 2 });
    expect(logged.lookup('client-1', 'ACME', 0)).toEqual({ clientId: 'client-1', multiplier: 2 });
    expect(log).toHaveBeenCalledTimes(1);
    expect(String(log.mock.calls[0]![0])).toMatch(/^RedisOverrides: The overrides refresh failed/);
    // A set that fails rejects and is reported.
    const setFailed = await rejection(reported.set({ clientId: 'client-2' }, { multiplier: 2 }));
    expect(setFailed).toMatchObject({ name: 'RedisOverridesError', operation: 'set' });
    expect(reported.get({ clientId: 'client-2' })).toBeUndefined();
    expect(errors).toHaveLength(2);

    // Back (empty, as a restarted server without persistence is): the table follows Redis.
    await own.restart();
    await client.ready();
    await logged.refresh();
    expect(logged.list()).toEqual([]);
    await own.stop();
    await rejection(logged.refresh());
    expect(log).toHaveBeenCalledTimes(2);
    await own.restart();
    await client.ready();
  });

  it('close() stops the timer; the timer never keeps the process alive', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    let calls = 0;
    const counting: RedisScriptClient = {
      evalSha: (...args) => {
        calls++;
        return client.client.evalSha(...args);
      },
      eval: (...args) => client.client.eval(...args),
    };
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const refreshes: unknown[] = [];
    const overrides = new RedisOverrides({
      client: counting,
      refreshMs: 250,
      onRefresh: (r) => refreshes.push(r),
    });
    sources.push(overrides);
    expect(timers()).toBe(before);

    vi.advanceTimersByTime(250);
    expect(calls).toBe(1);
    await vi.waitFor(() => expect(refreshes).toHaveLength(1));
    vi.advanceTimersByTime(250);
    expect(calls).toBe(2);
    await overrides.close();
    vi.advanceTimersByTime(10_000);
    await overrides.refresh();
    expect(calls).toBe(2);
  });
});

describe('RedisOverrides options', () => {
  it('refuses bad options with what to change', () => {
    const client = clients.get('ioredis')!.client;
    const cases: Array<[unknown, string, RegExp]> = [
      [undefined, 'invalid_option', /RedisOverrides options must be an object/],
      [{}, 'invalid_redis_client', /client must be a RedisScriptClient/],
      [{ client: {} }, 'invalid_redis_client', /evalSha\(\) and eval\(\)/],
      [
        { client, refreshMs: 0 },
        'invalid_option',
        /refreshMs must be a whole number from 10 to 1000/,
      ],
      [{ client, refreshMs: 1001 }, 'invalid_option', /refreshMs/],
      [{ client, refreshMs: 2.5 }, 'invalid_option', /refreshMs/],
      [{ client, prefix: 'a{b' }, 'invalid_option', /prefix/],
      [
        { client, presets: 'live' },
        'invalid_option',
        /^presets must be an object of presets by name, such as \{ \.\.\.presets\.byAccountType \}, got "live"\.$/,
      ],
      [
        { client, presets: { gold: 'live' } },
        'invalid_option',
        /^presets\.gold must be a LimitPreset, got "live"\.$/,
      ],
      [
        { client, preset: {} },
        'invalid_option',
        /^RedisOverrides has no option "preset"; did you mean "presets"\?/,
      ],
      [{ client, refreshMS: 100 }, 'invalid_option', /did you mean "refreshMs"/],
      [{ client, onError: 1 }, 'invalid_option', /onError/],
      [{ client, clock: {} }, 'invalid_option', /clock/],
    ];
    for (const [options, code, message] of cases) {
      const error = thrownSync(() => new RedisOverrides(options as RedisOverridesOptions));
      expect(isConfigurationError(error) && error.code, JSON.stringify(options)).toBe(code);
      expect((error as Error).message).toMatch(message);
    }
  });

  it('pins the catalogue of RedisOverridesError codes', () => {
    expect([...redisOverridesErrorCodes]).toEqual([
      'redis_timeout',
      'redis_command_failed',
      'redis_bad_reply',
      'invalid_stored_override',
    ]);
  });
});

/** What a promise rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

function thrownSync(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
