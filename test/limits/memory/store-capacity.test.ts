import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  concurrency,
  createLimiter,
  FakeClock,
  type LimitPreset,
  MemoryStore,
  window,
} from '../../../src/index.js';
import { request } from '../../support/limits.js';

// Limits that never refuse in these runs: a decision is admitted or refused for capacity. An
// admission keeps its records busy for a second, and a lease held keeps its account's record busy
// until it is given back or its three seconds have passed.
const preset: LimitPreset = {
  name: 'cap',
  policies: [window(1_000, '1s', { name: 'w' }), concurrency(1_000, { name: 'c', leaseTtl: '3s' })],
  rules: [{ route: 'GET /things/{id}', policies: [window(1_000, '1s', { name: 'thing' })] }],
};

describe('MemoryStore at its cap', () => {
  it('reclaims the idle records for a new client also when the sweep has just passed the last client', () => {
    // Arrange: two clients fill the cap; the steady sweep (every second decision) examines them in
    // turn and stops after the last one, so the cap's sweep starts at the end of the clients.
    const clock = new FakeClock(0);
    const store = new MemoryStore({ maxKeys: 2, sweepInterval: 2 });
    const limiter = createLimiter({ policies: [window(10, '1s')], clock, store });
    const check = (clientId: string) => limiter.check({ ...request, clientId });
    expect(check('c0').allowed).toBe(true);
    for (let i = 0; i < 4; i++) expect(check('c1').allowed).toBe(true);
    // Act: both records have been idle for a second.
    clock.set(2_000);
    const newcomer = check('c2');
    // Assert
    expect(newcomer.allowed).toBe(true);
    expect(store.size).toBe(1);
  });

  it('refuses a request for capacity only when no held record is idle: every record the cap holds is busy (a window or a lease in use), or found by the same request', () => {
    type Step =
      | { kind: 'check'; client: number; account: number; thing: number; hold: boolean }
      | { kind: 'advance'; ms: number }
      | { kind: 'release'; index: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        arbitrary: fc.record({
          kind: fc.constant('check' as const),
          client: fc.integer({ min: 0, max: 5 }),
          account: fc.integer({ min: 0, max: 7 }),
          // 0: the account's limits only; 1 to 3: a thing, which has a record of its own.
          thing: fc.integer({ min: 0, max: 3 }),
          hold: fc.boolean(),
        }),
        weight: 6,
      },
      {
        arbitrary: fc.record({
          kind: fc.constant('advance' as const),
          ms: fc.oneof(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 3_500 })),
        }),
        weight: 2,
      },
      {
        arbitrary: fc.record({ kind: fc.constant('release' as const), index: fc.nat() }),
        weight: 1,
      },
    );
    let capacityRefusals = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 4 }),
        fc.array(step, { minLength: 1, maxLength: 80 }),
        (maxKeys, sweepInterval, steps) => {
          // Arrange
          const clock = new FakeClock(0);
          const store = new MemoryStore({ maxKeys, sweepInterval });
          const limiter = createLimiter({ preset, clock, store });
          // The model: until when each scope is busy by its window, and the leases held.
          const busyUntil = new Map<string, number>();
          const held: Array<{ scope: string; expiry: number; release: () => void }> = [];
          const busy = (scope: string, t: number): boolean =>
            (busyUntil.get(scope) ?? 0) > t ||
            held.some((lease) => lease.scope === scope && lease.expiry > t);
          for (const s of steps) {
            if (s.kind === 'advance') clock.advance(s.ms);
            else if (s.kind === 'release') {
              if (held.length > 0) held.splice(s.index % held.length, 1)[0]!.release();
            } else {
              // Act
              const t = clock.now();
              const account = `c${s.client}|a${s.account}`;
              const scopes = s.thing === 0 ? [account] : [account, `${account}|${s.thing}`];
              const decision = limiter.check({
                ...request,
                clientId: `c${s.client}`,
                accountCode: `a${s.account}`,
                path: s.thing === 0 ? '/other' : `/things/${s.thing}`,
              });
              // Assert
              expect(store.size).toBeLessThanOrEqual(maxKeys);
              if (!decision.allowed) {
                expect(decision.reason).toBe('capacity');
                capacityRefusals++;
                // The records of busy scopes other than this request's, and those this request
                // found before the one it could not have (at most all of its scopes but one),
                // take the whole cap: no idle record was left to reclaim.
                const busyElsewhere = [
                  ...new Set([...busyUntil.keys(), ...held.map((l) => l.scope)]),
                ].filter((scope) => !scopes.includes(scope) && busy(scope, t)).length;
                expect(busyElsewhere + scopes.length - 1).toBeGreaterThanOrEqual(maxKeys);
                continue;
              }
              for (const scope of scopes) busyUntil.set(scope, t + 1_000);
              if (s.hold)
                held.push({ scope: account, expiry: t + 3_000, release: () => decision.release() });
              else decision.release();
            }
          }
        },
      ),
      { numRuns: 400 },
    );
    // The runs did meet the cap: the property was put to the test.
    expect(capacityRefusals).toBeGreaterThan(0);
  });
});
