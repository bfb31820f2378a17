import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  isConfigurationError,
  MemoryStore,
  type Plan,
  type Policy,
  presets,
  rate,
  window,
} from '../../src/index.js';
import { request, runEngine, runOracle } from '../support/limits.js';
import { ExactOracle } from '../support/oracle.js';
import { thrown } from '../support/thrown.js';

/**
 * A limiter on a memory store beside the exact oracle, fed the same requests (counted per client
 * and account): each decision must equal the oracle's, Retry-After and refusing policy included.
 * An admitted request ends at once, or is held to be given back later with `giveBack`.
 */
class OracleTwin {
  readonly clock = new FakeClock(0);
  readonly oracle = new ExactOracle();
  readonly held: Array<{ decision: Decision; leaseId: number }> = [];
  readonly #limiter;

  constructor(
    readonly policies: readonly Policy[],
    store: MemoryStore,
  ) {
    this.#limiter = createLimiter({ policies, clock: this.clock, store });
  }

  /** `statuses` false: the decision skips them, and the store may leave expired times in place. */
  check(clientId: string, accountCode: string, hold: boolean, statuses = true): void {
    const decision = this.#limiter.check({ ...request, clientId, accountCode }, { statuses });
    const expected = this.oracle.decideEntries(
      this.clock.now(),
      this.policies.map((policy) => ({
        id: `${clientId}|${accountCode}|${policy.name}`,
        policy,
      })),
    );
    expect(decision.allowed).toBe(expected.allowed);
    if (!decision.allowed) {
      expect(decision.retryAfterSeconds).toBe(expected.retryAfterSeconds);
      expect(decision.policy?.name).toBe(expected.policy);
    } else if (hold) this.held.push({ decision, leaseId: expected.leaseId! });
    else {
      decision.release();
      this.oracle.release(expected.leaseId!);
    }
  }

  /** Give back `count` held leases from `index` on, to both. */
  giveBack(index: number, count = 1): void {
    for (const { decision, leaseId } of this.held.splice(index, count)) {
      if (decision.allowed) decision.release();
      this.oracle.release(leaseId);
    }
  }
}

describe('MemoryStore', () => {
  it('decides synchronously: check returns a decision, not a promise', () => {
    const limiter = createLimiter({ preset: presets.live, clock: new FakeClock(0) });
    const decision = limiter.check(request);
    expect(decision).not.toBeInstanceOf(Promise);
    expect(decision.allowed).toBe(true);
  });

  it('reclaims a key once its longest window has passed, with no timer, as other traffic sweeps', () => {
    const clock = new FakeClock(0);
    const store = new MemoryStore();
    const limiter = createLimiter({ preset: presets.live, clock, store });
    for (let i = 0; i < 1_000; i++) {
      const d = limiter.check({ ...request, clientId: `c${i}` });
      if (d.allowed) d.release();
    }
    expect(store.size).toBe(1_000);
    clock.advance(59_999);
    for (let i = 0; i < 1_000; i++) limiter.check({ ...request, clientId: 'steady' });
    expect(store.size).toBe(1_001); // nothing is quiet yet: the 60 s window still holds them
    clock.advance(2);
    // The default sweep examines one client every 8 decisions: 9,000 decisions visit all of them.
    for (let i = 0; i < 9_000; i++) {
      const d = limiter.check({ ...request, clientId: 'steady', accountCode: `a${i % 3}` });
      if (d.allowed) d.release();
    }
    expect(store.size).toBeLessThanOrEqual(4);
  });

  it('keeps a key while a lease is held, even after its windows have passed', () => {
    const clock = new FakeClock(0);
    const store = new MemoryStore({ sweepInterval: 1 });
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 't', leaseTtl: '1h' })],
      clock,
      store,
    });
    const held = limiter.check(request);
    expect(held.allowed).toBe(true);
    clock.advance(120_000);
    for (let i = 0; i < 20; i++) limiter.check({ ...request, clientId: `other${i}` });
    expect(limiter.check(request).allowed).toBe(false);
    if (held.allowed) held.release();
  });

  it('reclaims a key whose leases were all given back once its windows have passed, long before the lease TTL', () => {
    const clock = new FakeClock(0);
    const store = new MemoryStore({ sweepInterval: 1 });
    const limiter = createLimiter({
      policies: [window(10, '1s'), concurrency(2, { name: 't', leaseTtl: '1h' })],
      clock,
      store,
    });
    const first = limiter.check(request);
    const second = limiter.check(request);
    if (!first.allowed || !second.allowed) throw new Error('both must be admitted');
    first.release();
    second.release();
    clock.advance(1_001);
    for (let i = 0; i < 4; i++) limiter.check({ ...request, clientId: 'other' });
    expect(store.size).toBe(1); // only 'other': the given-back leases keep nothing
    // A lease still held keeps its key past every window, until it is given back.
    const held = limiter.check(request);
    clock.advance(5_000);
    for (let i = 0; i < 4; i++) limiter.check({ ...request, clientId: 'other' });
    expect(store.size).toBe(2);
    if (held.allowed) held.release();
    for (let i = 0; i < 4; i++) limiter.check({ ...request, clientId: 'other' });
    expect(store.size).toBe(1);
  });

  it('bounds memory when an attacker rotates client ids: at the cap, new keys are refused with reason capacity and existing keys keep their limits', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 500 }),
        (maxKeys, attempts) => {
          const clock = new FakeClock(0);
          const store = new MemoryStore({ maxKeys });
          const limiter = createLimiter({
            policies: [window(2, '60s', { name: 'w' })],
            clock,
            store,
          });
          let refusedForCapacity = 0;
          for (let i = 0; i < attempts; i++) {
            const d = limiter.check({ ...request, clientId: `attacker-${i}` });
            if (!d.allowed) {
              expect(d).toMatchObject({
                reason: 'capacity',
                retryAfterSeconds: 1,
                policy: undefined,
              });
              refusedForCapacity++;
            }
            expect(store.size).toBeLessThanOrEqual(maxKeys);
          }
          expect(refusedForCapacity).toBe(Math.max(0, attempts - maxKeys));
          // Once the windows have passed, the keys are reclaimed and new clients are admitted again.
          clock.advance(60_000);
          expect(limiter.check({ ...request, clientId: 'newcomer' }).allowed).toBe(true);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('ignores a lease from another store and a lease whose key was reclaimed', () => {
    const clock = new FakeClock(0);
    const a = createLimiter({ policies: [concurrency(1, { name: 't', leaseTtl: '1s' })], clock });
    const b = createLimiter({ policies: [concurrency(1, { name: 't', leaseTtl: '1s' })], clock });
    const fromA = a.check(request);
    const fromB = b.check(request);
    expect(fromA.allowed && fromB.allowed).toBe(true);
    const plan: Plan = { scopes: [] };
    expect(a.store.apply(plan, 0)).toMatchObject({ allowed: true });
    if (fromB.allowed)
      b.store.release(
        (b.store.apply(plan, 0) as { lease?: never }).lease ?? ({ store: {} } as never),
      );
    clock.advance(2_000); // the lease expired
    const next = a.check(request);
    expect(next.allowed).toBe(true);
    if (fromA.allowed) fromA.release(); // the expired lease must not free the new one
    expect(a.check(request).allowed).toBe(false);
  });

  it("ignores a lease of a record's earlier life when the record comes back with other policies", () => {
    // The client's entry is the record of its first account. Dropped while the client still
    // holds another account, it waits without a block and is given to the next account-level
    // scope, here with another layout: the old lease's offset now points into a window's slots
    // (its count is where the lease's id was), so giving that lease back must change nothing.
    const clock = new FakeClock(0);
    const old = [window(10, '1s', { name: 'w' }), concurrency(2, { name: 't', leaseTtl: '1s' })];
    const revived = [rate(100, 100, { name: 'r' }), window(1, '10s', { name: 'once' })];
    const other = [window(1_000, '1h', { name: 'hour' })];
    const limiter = createLimiter({
      policies: ({ path }) => (path === '/old' ? old : path === '/new' ? revived : other),
      store: new MemoryStore({ sweepInterval: 1 }),
      clock,
    });
    const held = limiter.check({ ...request, accountCode: 'A', path: '/old' });
    expect(held.allowed).toBe(true);
    expect(limiter.check({ ...request, accountCode: 'B', path: '/other' }).allowed).toBe(true);
    clock.set(5_000); // lease and window have expired: the sweep drops account A's record
    // The sweep's cursor reaches the end of the clients on every other step: two steps.
    for (let i = 0; i < 2; i++) {
      expect(limiter.check({ ...request, accountCode: 'B', path: '/other' }).allowed).toBe(true);
    }
    expect(limiter.store.size).toBe(1);
    expect(limiter.check({ ...request, accountCode: 'A', path: '/new' }).allowed).toBe(true);
    if (held.allowed) held.release();
    const again = limiter.check({ ...request, accountCode: 'A', path: '/new' });
    expect(again).toMatchObject({
      allowed: false,
      policy: { name: 'once' },
      retryAfterSeconds: 10,
    });
  });

  it('counts a time that is not finite as the latest time seen (0 before any): never as fresh room', () => {
    const policies = [window(2, '1s', { name: 'w' })];
    const plan: Plan = {
      scopes: [{ clientId: 'c', accountCode: 'a', resource: '', policies, active: [0] }],
    };
    expect(new MemoryStore().apply(plan, Number.NaN)).toMatchObject({ allowed: true, now: 0 });
    const store = new MemoryStore();
    expect(store.apply(plan, 5_000)).toMatchObject({ allowed: true, now: 5_000 });
    expect(store.apply(plan, Number.NaN)).toMatchObject({ allowed: true, now: 5_000 });
    expect(store.apply(plan, Number.POSITIVE_INFINITY)).toMatchObject({
      allowed: false,
      now: 5_000,
      reason: 'limit',
      retryAfterSeconds: 1,
    });
  });

  // A global window of 2 and a window of 5 per thing (`GET /things/{id}`), on the store given.
  const thingsLimiter = (clock: FakeClock, store: MemoryStore) =>
    createLimiter({
      preset: {
        name: 'test',
        policies: [window(2, '60s', { name: 'global' })],
        rules: [{ route: 'GET /things/{id}', policies: [window(5, '60s', { name: 'thing' })] }],
      },
      clock,
      store,
    });

  it('at its cap, refuses with reason capacity a request whose resource needs a record, and counts it nowhere', () => {
    const clock = new FakeClock(0);
    const store = new MemoryStore({ maxKeys: 1, sweepInterval: 0 });
    const limiter = thingsLimiter(clock, store);
    // The client's own record takes the one key; its resource finds no room.
    expect(limiter.check({ ...request, path: '/things/1' })).toMatchObject({
      allowed: false,
      reason: 'capacity',
      retryAfterSeconds: 1,
      policy: undefined,
    });
    expect(store.size).toBe(1);
    // The refused request left the global limit whole: two more pass, the third is refused by it.
    expect(limiter.check(request).allowed).toBe(true);
    expect(limiter.check(request).allowed).toBe(true);
    const third = limiter.check(request);
    expect(third).toMatchObject({ allowed: false, reason: 'limit' });
    expect(third.allowed || third.policy?.name).toBe('global');
  });

  it('starts a resource afresh when its policies are replaced; a lease of the replaced record given back frees nothing in the new one', () => {
    // Arrange: a throttle per client and one per resource; the resource's list is then replaced
    // (same numbers, a new list, as when a preset's rules change).
    const store = new MemoryStore();
    const global = [concurrency(5, { name: 'client throttle' })];
    const before = [concurrency(1, { name: 'thing throttle' })];
    const after = [concurrency(1, { name: 'thing throttle' })];
    const plan = (thing: readonly Policy[]): Plan => ({
      scopes: [
        { clientId: 'c', accountCode: 'a', resource: '', policies: global, active: [0] },
        {
          clientId: 'c',
          accountCode: 'a',
          resource: 'GET /t/{id} id=1',
          policies: thing,
          active: [0],
        },
      ],
    });
    const old = store.apply(plan(before), 0);
    expect(old.allowed).toBe(true);
    expect(store.apply(plan(before), 0)).toMatchObject({ allowed: false, reason: 'limit' });
    // Act: the new list replaces the resource's record, which starts with nothing in flight.
    const fresh = store.apply(plan(after), 0);
    expect(fresh.allowed).toBe(true);
    expect(store.size).toBe(2);
    if (old.allowed && old.lease) store.release(old.lease);
    // Assert: the old lease freed its client slot only; the new record still holds its one lease.
    expect(store.apply(plan(after), 0)).toMatchObject({
      allowed: false,
      reason: 'limit',
      policy: { name: 'thing throttle' },
      values: [4, 0, 0, 0],
    });
    if (fresh.allowed && fresh.lease) store.release(fresh.lease);
    expect(store.apply(plan(after), 1_000)).toMatchObject({ allowed: true, values: [4, 0, 0, 0] });
  });

  it.each([
    ['maxKeys 0', { maxKeys: 0 }],
    ['maxKeys 1.5', { maxKeys: 1.5 }],
    ['negative sweep', { sweepInterval: -1 }],
  ])('refuses bad options: %s', (_, options) => {
    const caught = thrown(() => new MemoryStore(options));
    expect(isConfigurationError(caught)).toBe(true);
  });

  it('equals the exact oracle for many clients and accounts while records are reclaimed, their blocks reused and leases of earlier lives given back late', () => {
    const policies = [
      window(3, '1s', { name: 'w1' }),
      rate(2, 3, { name: 'r' }),
      window(5, '10s', { name: 'w10' }),
      concurrency(2, { name: 'c', leaseTtl: '2s' }),
    ];
    const step = fc.record({
      gap: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 25_000 })),
      client: fc.integer({ min: 0, max: 5 }),
      account: fc.integer({ min: 0, max: 2 }),
      // Give back one of the leases held (perhaps long expired, its record reclaimed), or none.
      release: fc.option(fc.nat(), { nil: undefined }),
      statuses: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 300 }), (steps) => {
        const twin = new OracleTwin(policies, new MemoryStore({ sweepInterval: 1 }));
        for (const { gap, client, account, release, statuses } of steps) {
          twin.clock.advance(gap);
          if (release !== undefined && twin.held.length > 0) {
            twin.giveBack(release % twin.held.length);
          }
          twin.check(`c${client}`, `a${account}`, true, statuses);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('equals the exact oracle for dozens of keys whose rings grow, empty and are reclaimed, their blocks handed to other keys', () => {
    const policies = [
      window(40, '2s', { name: 'w2' }),
      window(60, '30s', { name: 'w30' }),
      concurrency(8, { name: 'c', leaseTtl: '1s' }),
    ];
    const step = fc.record({
      // Mostly close together, so that rings grow and the arena fills; now and then a long pause
      // that lets keys go quiet and be reclaimed.
      gap: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 50 }), weight: 12 },
        { arbitrary: fc.integer({ min: 0, max: 40_000 }), weight: 1 },
      ),
      client: fc.integer({ min: 0, max: 29 }),
      burst: fc.integer({ min: 1, max: 30 }),
      hold: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      // Decisions without statuses leave expired times in the rings until they matter.
      statuses: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 60, maxLength: 160 }), (steps) => {
        const twin = new OracleTwin(policies, new MemoryStore({ sweepInterval: 2 }));
        for (const { gap, client, burst, hold, statuses } of steps) {
          twin.clock.advance(gap);
          for (let i = 0; i < burst; i++) {
            twin.check(`c${client}`, request.accountCode, hold, statuses);
          }
          // Leases held across steps are given back, some after their blocks were handed on.
          if (twin.held.length > 6) twin.giveBack(0, 3);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('grows a ring only as far as the admissions inside its window need, also when decisions skip statuses', () => {
    // At most 4 admissions lie inside any 1 s at one per 300 ms, so the ring stays at 4 slots,
    // though the limit (1,000) would let times that have left the window pile up to 1,024.
    const bytesAfter = (statuses: boolean): number => {
      const clock = new FakeClock(0);
      const store = new MemoryStore();
      const limiter = createLimiter({
        policies: [window(1_000, '1s', { name: 'w' })],
        clock,
        store,
      });
      for (let i = 0; i < 2_000; i++) {
        clock.advance(300);
        expect(limiter.check(request, { statuses }).allowed).toBe(true);
      }
      return store.bytes;
    };
    expect(bytesAfter(false)).toBe(bytesAfter(true));
  });

  it('keeps a window ring in time order when it grows after wrapping round', () => {
    // Limit 10 in 1 s, gaps up to 400 ms: admissions leave the window while others arrive, so the
    // ring wraps before it grows from 4 to 8 to 16; refusals' Retry-After read its oldest times.
    const policies = [window(10, '1s', { name: 'w' })];
    const arbitraryBursts = fc.array(fc.integer({ min: 0, max: 400 }), {
      minLength: 20,
      maxLength: 120,
    });
    fc.assert(
      fc.property(arbitraryBursts, (g) => {
        expect(runEngine(policies, g)).toEqual(runOracle(policies, g));
      }),
      { numRuns: 200 },
    );
  });

  it('gives memory back once a burst of keys has gone, and still equals the exact oracle, leases held across the move included', () => {
    const policies = [
      window(8, '1s', { name: 'w1' }),
      window(30, '10s', { name: 'w10' }),
      concurrency(4, { name: 'c', leaseTtl: '30s' }),
    ];
    const arrivals = fc.array(
      fc.record({
        gap: fc.integer({ min: 0, max: 300 }),
        client: fc.integer({ min: 0, max: 7 }),
        hold: fc.boolean(),
      }),
      { minLength: 20, maxLength: 80 },
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 2_000, max: 3_000 }),
        arrivals,
        arrivals,
        (burst, before, after) => {
          const store = new MemoryStore({ sweepInterval: 1 });
          const twin = new OracleTwin(policies, store);
          const check = (client: string, hold: boolean) =>
            twin.check(client, request.accountCode, hold);
          const run = (steps: typeof before) => {
            for (const { gap, client, hold } of steps) {
              twin.clock.advance(gap);
              check(`steady${client}`, hold);
            }
          };
          run(before);
          // A burst of keys, each with rings grown past their first blocks.
          for (let k = 0; k < burst; k++) for (let i = 0; i < 10; i++) check(`burst${k}`, false);
          const grown = store.bytes;
          // Long enough for every burst key to go quiet (the steady keys' leases live 30 s).
          twin.clock.advance(11_000);
          run(after);
          // The sweep visits one client per decision; the arenas are looked at every 64 steps.
          for (let i = 0; i < 2 * burst + 100; i++) check(`steady${i % 8}`, i % 3 === 0);
          expect(store.bytes).toBeLessThan(grown);
          // Leases taken before the move are given back to the moved records.
          twin.giveBack(0, twin.held.length);
          run(after);
        },
      ),
      { numRuns: 8 },
    );
  });

  it('gives memory back once a burst of keys has gone, and keeps the state of the resources and the unused windows of the keys that stay', () => {
    // Arrange: a per-resource limit, and a route exempt from the hourly window, so that the keys
    // that stay hold a resource record and a window that has never counted a request.
    const clock = new FakeClock(0);
    const store = new MemoryStore({ sweepInterval: 1 });
    const limiter = createLimiter({
      preset: {
        name: 'test',
        policies: [
          window(1_000, '1s', { name: 'per second' }),
          window(100_000, '1h', { name: 'per hour' }),
        ],
        rules: [
          { route: 'GET /things/{id}', policies: [window(3, '1h', { name: 'thing' })] },
          { route: 'GET /ping', exempt: ['per hour'] },
        ],
      },
      clock,
      store,
    });
    const check = (clientId: string, path: string) => limiter.check({ ...request, clientId, path });
    const burst = 3_000;
    for (let k = 0; k < burst; k++) expect(check(`burst${k}`, '/things/1').allowed).toBe(true);
    const grown = store.bytes;
    clock.advance(7_200_000); // every burst key is quiet
    const start = clock.now();
    expect(check('owner', '/things/7').allowed).toBe(true);
    clock.advance(1_000);
    expect(check('owner', '/things/7').allowed).toBe(true);
    // Act: steady traffic sweeps the burst keys away; the arenas are looked at every 64 steps.
    for (let i = 0; i < 2 * burst + 100; i++) {
      clock.advance(10);
      expect(check('pinger', '/ping').allowed).toBe(true);
    }
    // Assert
    expect(store.bytes).toBeLessThan(grown);
    expect(store.size).toBe(3);
    expect(check('owner', '/things/7').allowed).toBe(true);
    const refused = check('owner', '/things/7');
    expect(refused).toMatchObject({
      allowed: false,
      reason: 'limit',
      retryAfterSeconds: Math.ceil((start + 3_600_000 - clock.now()) / 1_000),
    });
    expect(refused.allowed || refused.policy?.name).toBe('thing');
    clock.advance(10);
    const counted = check('pinger', '/other');
    // The pings of the last second and this request; this request alone in the hour.
    expect(counted.allowed && counted.statuses.map((s) => s.remaining)).toEqual([
      1_000 - 100,
      100_000 - 1,
    ]);
  });

  it('at its cap, never drops a record that the decision under way has already found', () => {
    const clock = new FakeClock(0);
    const store = new MemoryStore({ maxKeys: 2, sweepInterval: 0 });
    const limiter = thingsLimiter(clock, store);
    const get = (id: number) => limiter.check({ ...request, path: `/things/${id}` });
    expect(get(1).allowed).toBe(true);
    clock.set(61_000);
    // The global record (quiet, found first) and the thing record (quiet): the new resource needs
    // room, and only the one this decision has not found may go.
    expect(get(2).allowed).toBe(true);
    expect(store.size).toBe(2);
    clock.set(62_000);
    expect(get(2).allowed).toBe(true);
    clock.set(63_000);
    const refused = get(2);
    expect(refused).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 58 });
    expect(refused.allowed || refused.policy?.name).toBe('global');
  });
});
