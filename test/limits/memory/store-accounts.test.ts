import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  type Limiter,
  type LimitPreset,
  MemoryStore,
  rate,
  window,
} from '../../../src/index.js';
import { comparable, request } from '../../support/limits.js';
import { ExactOracle, type OracleEntry } from '../../support/oracle.js';

/**
 * Two account types whose presets share no policy name, each with a rule on one route: an account
 * code used under both has two account-level records (one per policy list), and a thing touched
 * under both has two resource records.
 */
const presetsByType: Record<'one' | 'two', LimitPreset> = {
  one: {
    name: 'one',
    policies: [
      window(3, '1s', { name: 'one: 3 per 1 s' }),
      rate(2, 3, { name: 'one: rate' }),
      concurrency(2, { name: 'one: 2 concurrent', leaseTtl: '2s' }),
    ],
    rules: [
      { route: 'GET /things/{id}', policies: [window(2, '5s', { name: 'one: 2 per thing' })] },
    ],
  },
  two: {
    name: 'two',
    policies: [
      window(5, '10s', { name: 'two: 5 per 10 s' }),
      concurrency(1, { name: 'two: 1 concurrent', leaseTtl: 1_500 }),
    ],
    rules: [
      {
        route: 'GET /things/{id}',
        policies: [
          window(3, '2s', { name: 'two: 3 per thing' }),
          concurrency(1, { name: 'two: thing in flight', leaseTtl: '3s' }),
        ],
      },
    ],
  },
};
const TYPES = ['one', 'two'] as const;
const PATHS = ['/other', '/things/1', '/things/2'];
// The longest window above: older admissions never count again.
const LONGEST_MS = 10_000;

/**
 * The same requests on two stores: every account under one client id (`together`), and each
 * account under a client id of its own (`apart`); beside them the exact oracle, which counts
 * per account and knows nothing of client ids.
 */
class Twins {
  readonly clock = new FakeClock(0);
  readonly oracle = new ExactOracle();
  readonly together: Limiter<MemoryStore>;
  readonly apart: Limiter<MemoryStore>;
  readonly held: Array<{ decisions: Decision[]; leaseId: number | undefined }> = [];
  /** Accounts made by the `new accounts` command so far. */
  fresh = 0;

  constructor(sweepInterval: number) {
    const limiter = () =>
      createLimiter({
        preset: presetsByType,
        defaultAccountType: 'one',
        clock: this.clock,
        store: new MemoryStore({ sweepInterval }),
      });
    this.together = limiter();
    this.apart = limiter();
  }

  check(account: string, type: 0 | 1, path: number, statuses: boolean, hold: boolean): void {
    const accountType = TYPES[type];
    const preset = presetsByType[accountType];
    const at = PATHS[path % PATHS.length]!;
    const entries: OracleEntry[] = preset.policies.map((policy) => ({
      id: `${account}|${policy.name}`,
      policy,
    }));
    if (at !== '/other') {
      for (const policy of preset.rules![0]!.policies!) {
        entries.push({ id: `${account}|${at}|${policy.name}`, policy });
      }
    }
    const one = { ...request, accountCode: account, accountType, path: at };
    const decisions = [
      this.together.check({ ...one, clientId: 'one client' }, { statuses }),
      this.apart.check({ ...one, clientId: `client of ${account}` }, { statuses }),
    ];
    const expected = this.oracle.decideEntries(this.clock.now(), entries);
    const want = expected.allowed
      ? 'admitted'
      : `refused by ${expected.policy}, retry after ${expected.retryAfterSeconds} s`;
    for (const d of decisions) {
      const got = d.allowed
        ? 'admitted'
        : `refused by ${d.policy?.name}, retry after ${d.retryAfterSeconds} s`;
      if (got !== want) expect(got).toBe(want);
    }
    // Statuses included: the two stores hold the same numbers.
    expect(comparable(decisions[0]!)).toEqual(comparable(decisions[1]!));
    if (!expected.allowed) return;
    if (hold && this.held.length < 40) this.held.push({ decisions, leaseId: expected.leaseId });
    else this.end({ decisions, leaseId: expected.leaseId });
  }

  end({ decisions, leaseId }: { decisions: Decision[]; leaseId: number | undefined }): void {
    for (const d of decisions) if (d.allowed) d.release();
    if (leaseId !== undefined) this.oracle.release(leaseId);
  }

  advance(ms: number): void {
    this.clock.advance(ms);
    // What can never count again leaves the oracle, which would otherwise filter it for ever.
    const t = this.clock.now();
    for (const [id, times] of this.oracle.admissions) {
      const kept = times.filter((a) => a > t - LONGEST_MS);
      if (kept.length === 0) this.oracle.admissions.delete(id);
      else this.oracle.admissions.set(id, kept);
    }
  }
}

describe('MemoryStore with many accounts under one client id', () => {
  it('decides for a client with many accounts as for the same accounts under separate clients, and as the exact oracle, while records are reclaimed, the account map emptied and filled again, and the arenas shrink', () => {
    type Cmd = (twins: Twins) => void;
    const account = fc.integer({ min: 0, max: 23 }).map((k) => `a${k}`);
    const check = fc
      .record({
        account,
        type: fc.constantFrom(0 as const, 1 as const),
        path: fc.nat({ max: 2 }),
        statuses: fc.boolean(),
        hold: fc.boolean(),
        times: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 6 })),
      })
      .map(
        ({ account, type, path, statuses, hold, times }): Cmd =>
          (twins) => {
            for (let i = 0; i < times; i++) twins.check(account, type, path, statuses, hold);
          },
      );
    const advance = fc
      .oneof(
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 3_000 }),
        fc.constant(LONGEST_MS + 1),
      )
      .map(
        (ms): Cmd =>
          (twins) =>
            twins.advance(ms),
      );
    const release = fc.nat().map(
      (index): Cmd =>
        (twins) => {
          if (twins.held.length > 0) twins.end(twins.held.splice(index % twins.held.length, 1)[0]!);
        },
    );
    const newAccounts = fc
      .record({
        count: fc.integer({ min: 1, max: 30 }),
        type: fc.constantFrom(0 as const, 1 as const),
        path: fc.nat({ max: 2 }),
      })
      .map(
        ({ count, type, path }): Cmd =>
          (twins) => {
            for (let k = 0; k < count; k++)
              twins.check(`new${twins.fresh++}`, type, path, false, false);
          },
      );
    // Perhaps a burst of new accounts (enough to grow the arenas past the size from which they
    // shrink), then a pause past every window and lease, then the traffic of a few accounts for
    // long enough that the sweep examines every record of the client of many accounts and the
    // arenas are looked at: the quiet records go, and the others keep their counts.
    const goQuiet = fc
      .record({
        burst: fc.oneof(fc.constant(0), fc.integer({ min: 1_200, max: 1_500 })),
        account,
        type: fc.constantFrom(0 as const, 1 as const),
      })
      .map(
        ({ burst, account, type }): Cmd =>
          (twins) => {
            for (let k = 0; k < burst; k++) {
              twins.check(`new${twins.fresh++}`, type, k % 3, false, false);
            }
            twins.advance(LONGEST_MS + 3_001);
            const before = twins.together.store.bytes;
            for (let i = 0; i < 1_200; i++) {
              twins.advance(150);
              twins.check(i % 2 === 0 ? account : 'a0', type, i % 3, false, i % 5 === 0);
              if (twins.held.length > 6) twins.end(twins.held.shift()!);
            }
            if (twins.together.store.bytes < before) shrinks++;
          },
      );
    const command = fc.oneof(
      { arbitrary: check, weight: 10 },
      { arbitrary: advance, weight: 3 },
      { arbitrary: release, weight: 2 },
      { arbitrary: newAccounts, weight: 1 },
      { arbitrary: goQuiet, weight: 1 },
    );
    let shrinks = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.array(command, { minLength: 1, maxLength: 40 }),
        (sweepInterval, commands) => {
          const twins = new Twins(sweepInterval);
          for (const run of commands) run(twins);
          for (const held of twins.held.splice(0)) twins.end(held);
        },
      ),
      { numRuns: 60 },
    );
    // The arenas did shrink in some runs, moving the records of the map of accounts.
    expect(shrinks).toBeGreaterThan(0);
  });

  it('counts 50,000 accounts of one client, and a thing of each, apart, finding each without going through the others (on a check or a sweep step), and reclaims them all once quiet', () => {
    // Arrange: one client, 50,000 accounts, each with a record of its own and one for a thing;
    // the sweep takes a step on every decision.
    const clock = new FakeClock(0);
    const store = new MemoryStore({ sweepInterval: 1 });
    const limiter = createLimiter({
      preset: {
        name: 'test',
        policies: [window(2, '1h', { name: 'account' })],
        rules: [{ route: 'GET /things/{id}', policies: [window(2, '1h', { name: 'thing' })] }],
      },
      clock,
      store,
    });
    const check = (accountCode: string, path = '/things/7') =>
      limiter.check({ ...request, clientId: 'one client', accountCode, path }, { statuses: false });
    const accounts = 50_000;
    // Act
    for (let k = 0; k < accounts; k++) {
      const first = check(`a${k}`);
      if (!first.allowed) expect(first.allowed).toBe(true);
    }
    // Assert: every account counted apart; the second request of each passes, the third does not.
    expect(store.size).toBe(2 * accounts);
    for (const k of [0, 1, 4, 5, 25_000, accounts - 1]) {
      clock.advance(1_000);
      expect(check(`a${k}`).allowed).toBe(true);
      // Both full until the same instant: the more specific limit is named.
      expect(check(`a${k}`)).toMatchObject({ allowed: false, policy: { name: 'thing' } });
      expect(check(`a${k}`, '/other')).toMatchObject({
        allowed: false,
        policy: { name: 'account' },
      });
    }
    // Once the hour has passed, the traffic of one more account sweeps the others away: each step
    // examines the next 8 accounts and the things of the next 8, so 6,250 steps reach them all.
    clock.advance(3_600_000);
    const grown = store.bytes;
    for (let i = 0; i < 8_000; i++) {
      clock.advance(1_000);
      check('steady', '/other');
    }
    expect(store.size).toBe(1);
    expect(store.bytes).toBeLessThan(grown);
  });
});
