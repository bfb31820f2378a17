import { EventEmitter } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AsyncLimitStore,
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  isConfigurationError,
  isInvalidRequestError,
  type LimitRequest,
  MemoryStore,
  type Plan,
  type Policy,
  presets,
  rate,
  type SyncLimitStore,
  window,
} from '../../src/index.js';
import { describe as describeValue } from '../../src/internal/describe.js';
import { RequestFields } from '../../src/limits/limit-request.js';
import { arbitraryGaps, burstyGaps, edgeGaps, steadyGaps } from '../support/arrivals.js';
import { AsyncMemoryStore } from '../support/async-store.js';
import { admittedTimes, request, runEngine, runOracle } from '../support/limits.js';
import { ExactOracle, maxInAnyWindow } from '../support/oracle.js';
import { thrown } from '../support/thrown.js';

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

const windowed = (policies: readonly Policy[]) =>
  policies.filter((p): p is Extract<Policy, { kind: 'window' }> => p.kind === 'window');

/** Policy lists to draw from: the presets and small random ones (limits of 1 included). */
const policyLists: fc.Arbitrary<readonly Policy[]> = fc.oneof(
  fc.constant(presets.live.policies),
  fc.constant(presets.development.policies),
  fc
    .tuple(
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1, max: 5_000 }),
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 60_000 }),
      fc.option(
        fc.tuple(fc.double({ min: 0.2, max: 50, noNaN: true }), fc.integer({ min: 1, max: 10 })),
      ),
    )
    .map(([l1, w1, l2, w2, r]) => [
      window(l1, w1, { name: 'a' }),
      window(l2, w2, { name: 'b' }),
      ...(r === null ? [] : [rate(r[0], r[1], { name: 'c' })]),
    ]),
);

const sequences = fc.oneof(arbitraryGaps(), burstyGaps(), edgeGaps(1_000), edgeGaps(60_000));

/** Any sequence followed by a burst larger than every limit drawn here, so that something is refused. */
const overloaded = sequences.map((gaps) => [...gaps, ...Array.from({ length: 201 }, () => 0)]);

describe('limiter: invariants against an exact sliding-log oracle (fake clock)', () => {
  it('never admits more than limit in any window, for any arrival sequence (invariant 1)', () => {
    fc.assert(
      fc.property(policyLists, sequences, (policies, gaps) => {
        const admitted = admittedTimes(runEngine(policies, gaps));
        for (const p of windowed(policies)) {
          expect(maxInAnyWindow(admitted, p.windowMs)).toBeLessThanOrEqual(p.limit);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('admits at least 98% of what the exact oracle admits, and never more (invariant 2)', () => {
    fc.assert(
      fc.property(policyLists, fc.oneof(burstyGaps(), arbitraryGaps()), (policies, gaps) => {
        const engine = admittedTimes(runEngine(policies, gaps)).length;
        const oracle = admittedTimes(runOracle(policies, gaps)).length;
        expect(engine).toBeGreaterThanOrEqual(Math.ceil(0.98 * oracle));
        expect(engine).toBeLessThanOrEqual(oracle);
      }),
      { numRuns: 200 },
    );
  });

  it('decides exactly as the oracle, step by step, including Retry-After and the refusing limit', () => {
    fc.assert(
      fc.property(policyLists, sequences, (policies, gaps) => {
        expect(runEngine(policies, gaps)).toEqual(runOracle(policies, gaps));
      }),
      { numRuns: 200 },
    );
  });

  it('admits every request of steady traffic at the Live 3500 per 60 s limit, as the oracle does', () => {
    fc.assert(
      fc.property(steadyGaps(3500, 60_000, 8_000), (gaps) => {
        const steps = runEngine(presets.live.policies, gaps);
        expect(steps).toEqual(runOracle(presets.live.policies, gaps));
        expect(steps.every((s) => s.allowed)).toBe(true);
      }),
      { numRuns: 5 },
    );
  });

  it('admits every request of steady traffic at the Development 5 per second limit', () => {
    fc.assert(
      fc.property(steadyGaps(5, 1_000, 150), (gaps) => {
        const steps = runEngine(presets.development.policies, gaps);
        expect(steps.every((s) => s.allowed)).toBe(true);
      }),
      { numRuns: 20 },
    );
  });

  it('announces an integer Retry-After >= 1, and the retry it announces is admitted (invariant 3)', () => {
    fc.assert(
      fc.property(policyLists, overloaded, (policies, gaps) => {
        const clock = new FakeClock(0);
        const limiter = createLimiter({ policies, clock });
        let refusals = 0;
        for (const gap of gaps) {
          clock.advance(gap);
          const decision = limiter.check(request);
          if (decision.allowed) {
            decision.release();
            continue;
          }
          refusals++;
          expect(Number.isInteger(decision.retryAfterSeconds)).toBe(true);
          expect(decision.retryAfterSeconds).toBeGreaterThanOrEqual(1);
          expect(decision.retryAt).toBe(clock.now() + decision.retryAfterSeconds * 1000);
          clock.set(decision.retryAt);
          const retry = limiter.check(request);
          expect(retry.allowed).toBe(true);
          if (retry.allowed) retry.release();
        }
        expect(refusals).toBeGreaterThan(0);
      }),
      { numRuns: 200 },
    );
  });

  it('a request retried before its Retry-After elapsed is not processed and gets the remaining time', () => {
    fc.assert(
      fc.property(
        policyLists,
        overloaded,
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (policies, gaps, fraction) => {
          const clock = new FakeClock(0);
          const limiter = createLimiter({ policies, clock });
          for (const gap of gaps) {
            clock.advance(gap);
            const decision = limiter.check(request);
            if (decision.allowed) {
              decision.release();
              continue;
            }
            const early = clock.now() + Math.floor(fraction * decision.retryAfterSeconds * 1000);
            clock.set(early);
            const again = limiter.check(request);
            expect(again.allowed).toBe(false);
            if (!again.allowed) {
              expect(again.retryAt).toBeGreaterThanOrEqual(decision.retryAt);
              expect(again.retryAfterSeconds).toBe(
                Math.max(1, Math.ceil((decision.retryAt - early) / 1000)),
              );
            }
            return;
          }
          throw new Error('the overloaded sequence was never refused');
        },
      ),
      { numRuns: 200 },
    );
  });

  it('rejected requests change no counter: replaying only the admitted ones admits them all with the same remaining (invariant 4)', () => {
    fc.assert(
      fc.property(policyLists, sequences, (policies, gaps) => {
        const clock = new FakeClock(0);
        const limiter = createLimiter({ policies, clock });
        const admitted: Array<{ at: number; remaining: number[] }> = [];
        let before: number[] | undefined;
        for (const gap of gaps) {
          clock.advance(gap);
          const decision = limiter.check(request);
          // Releasing a lease changes the throttle's count, so compare the counting policies only.
          const remaining = decision.statuses
            .filter((s) => s.policy.kind !== 'concurrency')
            .map((s) => s.remaining);
          if (decision.allowed) {
            admitted.push({ at: clock.now(), remaining });
            decision.release();
          } else if (before !== undefined && gap === 0) {
            // Same instant as the previous decision: a refusal must leave every counter as it was.
            expect(remaining).toEqual(before);
          }
          before = remaining;
        }
        const replayClock = new FakeClock(0);
        const replay = createLimiter({ policies, clock: replayClock });
        for (const { at, remaining } of admitted) {
          replayClock.set(at);
          const decision = replay.check(request);
          expect(decision.allowed).toBe(true);
          expect(
            decision.statuses
              .filter((s) => s.policy.kind !== 'concurrency')
              .map((s) => s.remaining),
          ).toEqual(remaining);
          if (decision.allowed) decision.release();
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('limiter: leases (invariant 6)', () => {
  type Op =
    | { kind: 'start' }
    | { kind: 'end'; which: number; twice: boolean }
    | { kind: 'wait'; ms: number };
  const ops = fc.array(
    fc.oneof(
      fc.constant<Op>({ kind: 'start' }),
      fc.record({ kind: fc.constant('end' as const), which: fc.nat(), twice: fc.boolean() }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 500 }) }),
    ),
    { maxLength: 200, size: 'max' },
  );

  it('leases always come back: once every request has ended (finished, failed, aborted, released twice), nothing is in flight', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), ops, (max, script) => {
        const clock = new FakeClock(0);
        const throttle = concurrency(max, { name: 'throttle' });
        const limiter = createLimiter({ policies: [throttle], clock });
        const open: Array<Extract<Decision, { allowed: true }>> = [];
        for (const op of script) {
          if (op.kind === 'wait') clock.advance(op.ms);
          else if (op.kind === 'start') {
            const d = limiter.check(request);
            if (d.allowed) open.push(d);
            // Never more in flight than max.
            expect(open.length).toBeLessThanOrEqual(max);
          } else if (open.length > 0) {
            const [d] = open.splice(op.which % open.length, 1);
            d!.release();
            if (op.twice) d!.release();
          }
        }
        for (const d of open.splice(0)) d.release();
        clock.advance(1_000); // past any block a refusal set
        const probe = limiter.check(request);
        expect(probe.allowed).toBe(true);
        expect(probe.statuses[0]!.remaining).toBe(max - 1);
        if (probe.allowed) probe.release();
      }),
      { numRuns: 300 },
    );
  });

  it('a lease released twice frees one slot, not two', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [concurrency(2, { name: 't' })], clock });
    const a = limiter.check(request);
    const b = limiter.check(request);
    expect(a.allowed && b.allowed).toBe(true);
    if (!a.allowed) return;
    a.release();
    a.release();
    const c = limiter.check(request);
    expect(c.allowed).toBe(true);
    expect(c.statuses[0]!.remaining).toBe(0);
    const d = limiter.check(request);
    expect(d.allowed).toBe(false);
  });

  it("a store that passes on the memory store's admissions is asked for every release itself", () => {
    // Arrange: a synchronous store that forwards to a memory store and counts the releases.
    const memory = new MemoryStore();
    const released: unknown[] = [];
    const store: SyncLimitStore = {
      synchronous: true,
      apply: (plan, now) => memory.apply(plan, now),
      release: (lease) => {
        released.push(lease);
        memory.release(lease);
      },
    };
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 't' })],
      store,
      clock: new FakeClock(0),
    });
    // Act
    const first = limiter.check(request);
    if (first.allowed) first.release();
    const second = limiter.check(request);
    // Assert: the release went through the forwarding store, and freed the one lease.
    expect(first.allowed).toBe(true);
    expect(released).toHaveLength(1);
    expect(second.allowed).toBe(true);
  });

  it('an admitted decision shows only what it reports: serialised, it is its discriminant and time', () => {
    const clock = new FakeClock(5_000);
    const limiter = createLimiter({ preset: presets.live, clock });
    const decision = limiter.check(request);
    expect(decision.allowed).toBe(true);
    expect(JSON.parse(JSON.stringify(decision))).toEqual({ allowed: true, now: 5_000 });
    expect(Object.keys(decision).sort()).toEqual(['allowed', 'now']);
    expect(decision.statuses).toHaveLength(presets.live.policies.length);
  });

  it('a release that an asynchronous store fails to carry out raises no unhandled rejection, is asked once, and hands the failure to a caller who wants it', async () => {
    // Arrange: a networked store that decides but cannot give a lease back (the lease then
    // expires after its TTL).
    const memory = new MemoryStore();
    let releases = 0;
    const store: AsyncLimitStore = {
      synchronous: false,
      apply: (plan: Plan, now: number) => Promise.resolve(memory.apply(plan, now)),
      release: () => {
        releases++;
        return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6380'));
      },
    };
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 't' })],
      store,
      clock: new FakeClock(0),
    });
    const decision = await limiter.check(request);
    expect(decision.allowed).toBe(true);
    if (!decision.allowed) return;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // Act: the first call hands on the store's promise; the second has nothing to give back.
      const first = (decision.release as () => unknown)();
      expect(decision.release()).toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
      await expect(first).rejects.toThrow('ECONNREFUSED');
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    // Assert
    expect(unhandled).toEqual([]);
    expect(releases).toBe(1);
  });

  it('a lease that is never released expires after its TTL', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 't', leaseTtl: '30s' })],
      clock,
    });
    expect(limiter.check(request).allowed).toBe(true);
    clock.set(29_999);
    expect(limiter.check(request).allowed).toBe(false);
    clock.set(31_000); // the TTL has passed and so has the 1 s block of the refusal
    const next = limiter.check(request);
    expect(next.allowed).toBe(true);
  });

  it('a concurrency refusal announces the recommended one second and blocks the scope until then', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [concurrency(1, { name: 't' })], clock });
    const held = limiter.check(request);
    const refused = limiter.check(request);
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 1, reason: 'limit' });
    if (held.allowed) held.release();
    clock.advance(500);
    expect(limiter.check(request)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 1,
      reason: 'blocked',
    });
    clock.advance(500);
    expect(limiter.check(request).allowed).toBe(true);
  });
});

describe('limiter: decision rules', () => {
  it('two policies refusing at once: the later release time wins the Retry-After and names the limit', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [window(1, '1s', { name: 'short' }), window(1, '10s', { name: 'long' })],
      clock,
    });
    expect(limiter.check(request).allowed).toBe(true);
    const refused = limiter.check(request);
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 10, reason: 'limit' });
    expect(refused.allowed ? undefined : refused.policy?.name).toBe('long');
  });

  it('time that does not move: a window of 3 admits three requests at one instant and refuses the fourth', () => {
    const clock = new FakeClock(42);
    const limiter = createLimiter({ policies: [window(3, '1s', { name: 'w' })], clock });
    const results = Array.from({ length: 5 }, () => limiter.check(request));
    expect(results.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(results[3]).toMatchObject({ retryAfterSeconds: 1, retryAt: 1_042 });
  });

  it('limits of 1: window(1), rate(burst 1) and concurrency(1) each admit exactly one at a time', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [
        window(1, '2s', { name: 'w' }),
        rate(1, 1, { name: 'r' }),
        concurrency(1, { name: 'c' }),
      ],
      clock,
    });
    const first = limiter.check(request);
    expect(first.allowed).toBe(true);
    if (first.allowed) first.release();
    const second = limiter.check(request);
    expect(second).toMatchObject({ allowed: false, retryAfterSeconds: 2 });
    clock.set(2_000);
    expect(limiter.check(request).allowed).toBe(true);
  });

  it('after a full burst at t = 0, a request at t = window is admitted (half-open windows)', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [window(200, '1s', { name: 'w' })], clock });
    for (let i = 0; i < 200; i++) expect(limiter.check(request).allowed).toBe(true);
    clock.set(1_000);
    expect(limiter.check(request).allowed).toBe(true);
  });

  it('a refusal blocks until the instant it announced, even when room appears earlier', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [window(200, '1s', { name: 'w' })], clock });
    for (let i = 0; i < 200; i++) limiter.check(request);
    clock.set(999);
    const refused = limiter.check(request);
    expect(refused).toMatchObject({
      allowed: false,
      retryAfterSeconds: 1,
      retryAt: 1_999,
      reason: 'limit',
    });
    clock.set(1_000); // the window has room again, but the announced instant has not come
    expect(limiter.check(request)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 1,
      reason: 'blocked',
    });
    clock.set(1_999);
    expect(limiter.check(request).allowed).toBe(true);
  });

  it('counts per client id and account code: another client or account has its own limits', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [window(1, '1s', { name: 'w' })], clock });
    expect(limiter.check(request).allowed).toBe(true);
    expect(limiter.check(request).allowed).toBe(false);
    expect(limiter.check({ ...request, clientId: 'client-2' }).allowed).toBe(true);
    expect(limiter.check({ ...request, accountCode: 'OTHER' }).allowed).toBe(true);
  });

  it('keys cannot be forged by moving characters between client id and account code', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 8 }),
        fc.string({ minLength: 1, maxLength: 8 }),
        fc.string({ minLength: 1, maxLength: 8 }),
        (a, b, c) => {
          fc.pre(a + b !== '' && a !== a + b.slice(0, 0) + c);
          const limiter = createLimiter({
            policies: [window(1, '1s', { name: 'w' })],
            clock: new FakeClock(0),
          });
          const one = { ...request, clientId: a, accountCode: b + c };
          const two = { ...request, clientId: a + b, accountCode: c };
          expect(limiter.check(one).allowed).toBe(true);
          expect(limiter.check(two).allowed).toBe(true);
        },
      ),
    );
  });

  it('reports what remains of each policy', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.live, clock });
    const d = limiter.check(request);
    expect(d.statuses.map((s) => [s.policy.name, s.remaining])).toEqual([
      ['global: 200 per 1 s', 199],
      ['global: 100 per s average, burst 200', 199],
      ['global: 3500 per 60 s', 3499],
      ['throttle: 20 concurrent', 19],
    ]);
    expect(d.statuses[0]!.resetAfterMs).toBe(1_000);
    expect(d.statuses[2]!.resetAfterMs).toBe(60_000);
  });

  it('picks the preset by account type, and the strictest by default', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset: presets.byAccountType, clock });
    const live = limiter.check({ ...request, accountType: 'live' });
    const trial = limiter.check({ ...request, clientId: 'c2', accountType: 'trial' });
    const none = limiter.check({ ...request, clientId: 'c3' });
    expect(live.statuses[0]!.policy.name).toBe('global: 200 per 1 s');
    expect(trial.statuses[0]!.policy.name).toBe('global: 5 per 1 s');
    expect(none.statuses[0]!.policy.name).toBe('global: 5 per 1 s');
    const custom = createLimiter({
      preset: presets.byAccountType,
      defaultAccountType: 'live',
      clock,
    });
    expect(custom.check(request).statuses[0]!.policy.name).toBe('global: 200 per 1 s');
  });

  it('accepts a different set of policies per request', () => {
    const clock = new FakeClock(0);
    const strict = [window(1, '1s', { name: 'strict' })];
    const loose = [window(100, '1s', { name: 'loose' })];
    const limiter = createLimiter({
      policies: (r) => (r.method === 'PATCH' ? strict : loose),
      clock,
    });
    expect(limiter.check({ ...request, method: 'PATCH' }).allowed).toBe(true);
    expect(limiter.check({ ...request, method: 'PATCH' }).allowed).toBe(false);
    expect(limiter.check(request).allowed).toBe(true);
    // A selector that builds equal lists afresh each time still shares one counter.
    const fresh = createLimiter({ policies: () => [window(1, '1s', { name: 'w' })], clock });
    expect(fresh.check(request).allowed).toBe(true);
    expect(fresh.check(request).allowed).toBe(false);
  });

  it('with an asynchronous store, check returns a promise of the same decision', async () => {
    const memory = new MemoryStore();
    const store: AsyncLimitStore = {
      synchronous: false,
      apply: (plan: Plan, now: number) => Promise.resolve(memory.apply(plan, now)),
      release: (lease) => Promise.resolve(memory.release(lease)),
    };
    const limiter = createLimiter({
      policies: [window(1, '1s', { name: 'w' })],
      store,
      clock: new FakeClock(0),
    });
    const first = limiter.check(request);
    expect(first).toBeInstanceOf(Promise);
    expect((await first).allowed).toBe(true);
    expect(await limiter.check(request)).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
  });

  it('a clock stepped backwards counts as standing still, never as fresh room', () => {
    const clock = new FakeClock(10_000);
    const limiter = createLimiter({ policies: [window(1, '1s', { name: 'w' })], clock });
    expect(limiter.check(request).allowed).toBe(true);
    clock.set(0);
    expect(limiter.check(request)).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
  });

  it('a clock that decides another request from inside now() does not change whose request is decided', () => {
    const clock = new FakeClock(0);
    let inner: (() => unknown) | undefined;
    const limiter = createLimiter({
      policies: [window(1, '1s', { name: 'w' })],
      clock: {
        now: () => {
          const nested = inner;
          inner = undefined;
          nested?.();
          return clock.now();
        },
      },
    });
    inner = () => limiter.check({ ...request, clientId: 'inner' });
    expect(limiter.check({ ...request, clientId: 'outer' }).allowed).toBe(true);
    // Each was counted under its own client: both are full now, nobody else is.
    expect(limiter.check({ ...request, clientId: 'outer' }).allowed).toBe(false);
    expect(limiter.check({ ...request, clientId: 'inner' }).allowed).toBe(false);
    expect(limiter.check({ ...request, clientId: 'other' }).allowed).toBe(true);
  });

  it('a store other than the memory store gets a plan of its own on every check, which later checks leave alone', () => {
    const kept: Array<{ plan: Plan; clientId: string; statuses: boolean }> = [];
    class KeepingStore extends MemoryStore {
      override apply(plan: Plan, now: number) {
        kept.push({ plan, clientId: plan.scopes[0]!.clientId, statuses: plan.statuses !== false });
        return super.apply(plan, now);
      }
    }
    const limiter = createLimiter({
      preset: presets.live,
      store: new KeepingStore(),
      clock: new FakeClock(0),
    });
    for (const [i, statuses] of [true, false, true].entries()) {
      limiter.check({ ...request, clientId: `client-${i}` }, { statuses });
    }
    expect(new Set(kept.map((k) => k.plan)).size).toBe(3);
    for (const { plan, clientId, statuses } of kept) {
      expect(plan.scopes.map((scope) => scope.clientId)).toEqual([clientId]);
      expect(plan.statuses !== false).toBe(statuses);
    }
  });
});

describe('limiter: bad input', () => {
  const limiter = createLimiter({ preset: presets.byAccountType, clock: new FakeClock(0) });
  const bad: Array<[string, unknown, string]> = [
    ['no request', undefined, 'invalid_request'],
    ['empty client id', { ...request, clientId: '' }, 'invalid_client_id'],
    ['numeric client id', { ...request, clientId: 42 }, 'invalid_client_id'],
    ['very long client id', { ...request, clientId: 'x'.repeat(257) }, 'invalid_client_id'],
    ['empty account code', { ...request, accountCode: '' }, 'invalid_account_code'],
    ['object account code', { ...request, accountCode: {} }, 'invalid_account_code'],
    ['unknown account type', { ...request, accountType: 'gold' }, 'invalid_account_type'],
    ['numeric account type', { ...request, accountType: 1 }, 'invalid_account_type'],
    ['method with a space', { ...request, method: 'GE T' }, 'invalid_method'],
    ['missing method', { ...request, method: undefined }, 'invalid_method'],
    ['non-string path', { ...request, path: ['/a'] }, 'invalid_path'],
    [
      'a getter that throws',
      {
        ...request,
        get clientId(): string {
          throw new Error('boom');
        },
      },
      'invalid_request',
    ],
    [
      'a proxy that throws',
      new Proxy(
        {},
        {
          get() {
            throw new Error('boom');
          },
        },
      ),
      'invalid_request',
    ],
  ];

  it.each(bad)(
    '%s gets an InvalidRequestError with a code and a message that says what to change',
    (_, input, code) => {
      // Deliberately not a request of the limiter's account types.
      const caught = thrown(() => limiter.check(input as LimitRequest<never>));
      expect(isInvalidRequestError(caught)).toBe(true);
      expect((caught as { code: string }).code).toBe(code);
      expect((caught as Error).message).toMatch(/must|use one of|pass plain values/);
    },
  );

  // Plain values only: a getter or a proxy is what the read-once copy is for.
  it.each(bad.filter(([name]) => !/throws|no request/.test(name)))(
    '%s, read once into RequestFields (as the gate does), gets the same InvalidRequestError',
    (_, input, code) => {
      const { clientId, accountCode, accountType, method, path } = input as LimitRequest;
      const fields = new RequestFields(clientId, accountCode, accountType, method, path);
      const caught = thrown(() => limiter.check(fields as LimitRequest<never>));
      expect(isInvalidRequestError(caught)).toBe(true);
      expect((caught as { code: string }).code).toBe(code);
    },
  );

  it('any client id and account code of 1 to 256 characters, whatever they contain, is keyed safely and never throws', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 256, unit: 'binary' }),
        fc.string({ minLength: 1, maxLength: 256, unit: 'binary' }),
        (clientId, accountCode) => {
          const decision = limiter.check({
            ...request,
            clientId,
            accountCode,
            accountType: 'live',
          });
          expect(decision.allowed).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  const badConfig: Array<[string, () => unknown, string, RegExp]> = [
    [
      'neither preset nor policies',
      () => createLimiter({}),
      'invalid_option',
      /^createLimiter options must be an object with exactly one of preset and policies, got one with neither\.$/,
    ],
    [
      'both preset and policies',
      () => createLimiter({ preset: presets.live, policies: [] }),
      'invalid_option',
      /^createLimiter options must be an object with exactly one of preset and policies, got one with preset and policies\.$/,
    ],
    [
      'no policies',
      () => createLimiter({ policies: [] }),
      'invalid_policy',
      /^policies must be an array of at least one policy, got an array\.$/,
    ],
    [
      'a policy that is not one',
      () =>
        createLimiter({
          policies: [{ kind: 'window', name: 'x', limit: 0, windowMs: 1 } as Policy],
        }),
      'invalid_policy',
      /^policies\[0\]\.limit must be a whole number from 1 to 9007199254740991 \(Number\.MAX_SAFE_INTEGER\), got 0\.$/,
    ],
    [
      'duplicate policy names',
      () =>
        createLimiter({
          policies: [window(1, '1s', { name: 'x' }), window(2, '2s', { name: 'x' })],
        }),
      'duplicate_policy_name',
      /^policies\[1\]\.name must be a name no other policy of the list has \(the 429 body uses it to say which limit was hit\), got "x"\.$/,
    ],
    [
      'a default account type with no preset',
      // TypeScript refuses it too: the type is the presets' account types.
      () => createLimiter({ preset: presets.byAccountType, defaultAccountType: 'gold' as never }),
      'invalid_option',
      /^defaultAccountType must be one of "live", "development", "trial", got "gold"\.$/,
    ],
    [
      'maxIdLength 0',
      () => createLimiter({ preset: presets.live, maxIdLength: 0 }),
      'invalid_option',
      /^maxIdLength must be a whole number from 1 to 9007199254740991 \(Number\.MAX_SAFE_INTEGER\), got 0\.$/,
    ],
    [
      'a clock without now()',
      () => createLimiter({ preset: presets.live, clock: {} as FakeClock }),
      'invalid_option',
      /^clock must be a Clock with now\(\), got an object\.$/,
    ],
    [
      'a store without release()',
      () =>
        createLimiter({
          preset: presets.live,
          store: { synchronous: true, apply: () => new MemoryStore().apply({ scopes: [] }, 0) },
        } as never),
      'invalid_option',
      /^store must be a LimitStore with apply\(\) and release\(\), got an object\.$/,
    ],
    [
      'a preset that is a name, not a preset',
      () => createLimiter({ preset: 'live' as never }),
      'invalid_option',
      /^preset must be a LimitPreset or presets by account type such as presets\.byAccountType, got "live"\.$/,
    ],
    [
      'an empty map of presets by account type',
      () => createLimiter({ preset: {} }),
      'invalid_option',
      /^preset must be a LimitPreset or presets by account type such as presets\.byAccountType, got an object\.$/,
    ],
    [
      'a map of presets with a member that is not a preset',
      () => createLimiter({ preset: { live: presets.live, trial: 'development' as never } }),
      'invalid_option',
      /^preset\.trial must be a LimitPreset, got "development"\.$/,
    ],
  ];

  it.each(badConfig)(
    '%s throws a ConfigurationError that says what to change',
    (_, make, code, message) => {
      const caught = thrown(() => make());
      expect(isConfigurationError(caught)).toBe(true);
      expect((caught as { code: string }).code).toBe(code);
      expect((caught as Error).message).toMatch(message);
    },
  );

  it('a clock that returns NaN is a ConfigurationError, not a silent decision', () => {
    const broken = createLimiter({ preset: presets.live, clock: { now: () => Number.NaN } });
    expect(() => broken.check(request)).toThrow(
      'clock.now() must be a time a clock may return: milliseconds since the Unix epoch, from 0 to 8640000000000000 (the range of a Date from 1970 on), got NaN.',
    );
  });

  it('a clock reading is decided on exactly when it is milliseconds from 0 to 8.64e15; any other is a ConfigurationError that says what a clock must return', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double(),
          fc.double({ min: -1e4, max: 1e4 }),
          fc.double({ min: 8.6e15, max: 8.7e15 }),
          fc.constantFrom<unknown>('5', 5n, null, undefined, {}),
        ),
        (reading) => {
          // Arrange
          const limiter = createLimiter({
            policies: [window(1, '1s', { name: 'w' })],
            clock: { now: () => reading as number },
          });
          const inRange = typeof reading === 'number' && reading >= 0 && reading <= 8.64e15;
          // Act
          let decision: Decision | undefined;
          const caught = thrown(() => {
            decision = limiter.check(request);
          });
          // Assert
          if (inRange) expect(decision?.allowed).toBe(true);
          else {
            expect(isConfigurationError(caught) && caught.code).toBe('invalid_option');
            expect((caught as Error).message).toBe(
              `clock.now() must be a time a clock may return: milliseconds since the Unix epoch, from 0 to 8640000000000000 (the range of a Date from 1970 on), got ${describeValue(reading)}.`,
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each([-5_000, -1, 1e17, 1e20])(
    'a clock reading of %s is refused, never decided on',
    (reading) => {
      const limiter = createLimiter({
        policies: [window(2, '1s', { name: 'w' })],
        clock: { now: () => reading },
      });
      expect(isConfigurationError(thrown(() => limiter.check(request)))).toBe(true);
    },
  );

  it.each<[string, unknown]>([
    ['a revoked proxy', revokedProxy()],
    [
      'an object whose statuses getter throws',
      {
        get statuses(): boolean {
          throw new Error('boom');
        },
      },
    ],
  ])(
    'check() options that are %s are a ConfigurationError invalid_option with the cause',
    (_, options) => {
      const caught = thrown(() => limiter.check(request, options as never));
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_option');
      expect((caught as Error).message).toBe(
        'check() options must be plain data, got an object that threw when read.',
      );
      expect((caught as Error).cause).toBeInstanceOf(Error);
    },
  );

  it.each(['clientId', 'accountCode', 'accountType', 'method', 'path'])(
    'a request whose %s is a revoked proxy gets an InvalidRequestError',
    (field) => {
      const caught = thrown(() => limiter.check({ ...request, [field]: revokedProxy() }));
      expect(isInvalidRequestError(caught)).toBe(true);
    },
  );

  it.each<[string, () => unknown, string, RegExp]>([
    [
      'no options',
      () => createLimiter(undefined as never),
      'invalid_option',
      /^createLimiter options must be an object such as \{ preset: … \}, got undefined\.$/,
    ],
    [
      'an option misspelt',
      () => createLimiter({ preset: presets.live, maxIdLenght: 64 } as never),
      'invalid_option',
      /^createLimiter has no option "maxIdLenght"; did you mean "maxIdLength"\?/,
    ],
    [
      'a fallback store that is not synchronous',
      () =>
        createLimiter({
          preset: presets.live,
          outage: 'fallback',
          fallbackStore: { synchronous: false, apply() {}, release() {} } as never,
        }),
      'invalid_option',
      /^fallbackStore must be a synchronous store \(a MemoryStore\) with apply\(\) and release\(\), got an object\.$/,
    ],
    [
      'null options',
      () => createLimiter(null as never),
      'invalid_option',
      /^createLimiter options must be an object such as \{ preset: … \}, got null\.$/,
    ],
    [
      'options that are a revoked proxy',
      () => createLimiter(revokedProxy() as never),
      'invalid_option',
      /^createLimiter options must be plain data, got an object that threw when read\.$/,
    ],
    [
      'a default account type that is a BigInt',
      () => createLimiter({ preset: presets.byAccountType, defaultAccountType: 1n as never }),
      'invalid_option',
      /^defaultAccountType must be one of "live", "development", "trial", got 1n\.$/,
    ],
    [
      'a preset that is a revoked proxy',
      () => createLimiter({ preset: revokedProxy() as never }),
      'invalid_option',
      /^preset must be a LimitPreset, got an object that threw when read\.$/,
    ],
    [
      'presets by type with a member that is a revoked proxy',
      () => createLimiter({ preset: { live: presets.live, trial: revokedProxy() as never } }),
      'invalid_option',
      /^preset\.trial must be a LimitPreset, got an object that threw when read\.$/,
    ],
    [
      'a clock that is a revoked proxy',
      () => createLimiter({ preset: presets.live, clock: revokedProxy() as never }),
      'invalid_option',
      /^clock must be a Clock with now\(\), got an object that threw when read\.$/,
    ],
    [
      'a store that is a revoked proxy',
      () => createLimiter({ preset: presets.live, store: revokedProxy() as never }),
      'invalid_option',
      /^store must be a LimitStore with apply\(\) and release\(\), got an object that threw when read\.$/,
    ],
    [
      'a maxIdLength that is a revoked proxy',
      () => createLimiter({ preset: presets.live, maxIdLength: revokedProxy() as never }),
      'invalid_option',
      /^maxIdLength must be a whole number from 1 to 9007199254740991 \(Number\.MAX_SAFE_INTEGER\), got an object\.$/,
    ],
    [
      'a policies list that is a revoked proxy',
      () => {
        const { proxy, revoke } = Proxy.revocable([], {});
        revoke();
        return createLimiter({ policies: proxy });
      },
      'invalid_policy',
      /^policies must be an array of policies made with window\(\), rate\(\) or concurrency\(\), got an object\.$/,
    ],
  ])('%s is a ConfigurationError that names the option', (_, make, code, message) => {
    const caught = thrown(make);
    expect(isConfigurationError(caught) && caught.code).toBe(code);
    expect((caught as Error).message).toMatch(message);
  });
});

describe('limiter: release apart from its decision', () => {
  it('decision.release passed on as a callback gives the lease back, once', () => {
    // Arrange
    const limiter = createLimiter({
      policies: [concurrency(1, { name: 't' })],
      clock: new FakeClock(0),
    });
    const decision = limiter.check(request);
    expect(decision.allowed).toBe(true);
    if (!decision.allowed) return;
    const response = new EventEmitter();
    response.once('finish', decision.release);
    // Act
    response.emit('finish');
    const next = limiter.check(request);
    // Assert: released, and a second call through either path does nothing more.
    expect(next.allowed).toBe(true);
    const { release } = decision;
    release();
    decision.release();
    expect(limiter.check(request).allowed).toBe(false);
  });

  it('every read of release gives the same function, so a listener added with it can be removed with it', () => {
    const limiter = createLimiter({ policies: [concurrency(2, { name: 't' })] });
    const decision = limiter.check(request);
    if (!decision.allowed) throw new Error('expected an admission');
    expect(decision.release).toBe(decision.release);
    const signal = new EventEmitter();
    signal.on('abort', decision.release);
    signal.off('abort', decision.release);
    expect(signal.listenerCount('abort')).toBe(0);
    expect(Object.keys(decision).sort()).toEqual(['allowed', 'now']);
  });

  it('leases always come back when every release is called detached, with any this (invariant 6)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.oneof(fc.constant('start' as const), fc.nat()), { maxLength: 60 }),
        (max, script) => {
          // Arrange
          const clock = new FakeClock(0);
          const limiter = createLimiter({
            policies: [concurrency(max, { name: 't' }), window(1_000, '1s', { name: 'w' })],
            clock,
          });
          const open: Array<() => void> = [];
          for (const op of script) {
            // Act: start a request, or end one through its detached release, called with
            // another `this` each time (as an event emitter does).
            if (op === 'start') {
              const d = limiter.check(request);
              if (d.allowed) open.push(d.release);
              expect(open.length).toBeLessThanOrEqual(max);
            } else if (open.length > 0) {
              const [release] = open.splice(op % open.length, 1);
              release!.call({ unrelated: true });
              release!.call(undefined);
            }
          }
          for (const release of open.splice(0)) release();
          clock.advance(1_000);
          // Assert: nothing is in flight.
          const probe = limiter.check(request);
          expect(probe.allowed && probe.statuses[0]!.remaining).toBe(max - 1);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a decision that holds no lease has a release that does nothing', () => {
    const limiter = createLimiter({ policies: [window(5, '1s', { name: 'w' })] });
    const decision = limiter.check(request);
    if (!decision.allowed) throw new Error('expected an admission');
    const { release } = decision;
    expect(() => release()).not.toThrow();
  });
});

describe('oracle self-check', () => {
  it('the oracle itself never admits more than limit in any window', () => {
    fc.assert(
      fc.property(policyLists, sequences, (policies, gaps) => {
        const oracle = new ExactOracle(policies);
        let t = 0;
        const times: number[] = [];
        for (const gap of gaps) {
          t += gap;
          const d = oracle.decide(t);
          if (d.allowed) times.push(t);
          if (d.leaseId !== undefined) oracle.release(d.leaseId);
        }
        for (const p of windowed(policies))
          expect(maxInAnyWindow(times, p.windowMs)).toBeLessThanOrEqual(p.limit);
      }),
      { numRuns: 100 },
    );
  });
});

describe('limiter: statuses', () => {
  it('a window reports what remains and when its full limit is back, from the admissions inside it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 3_000 }),
        arbitraryGaps(150),
        (limit, windowMs, gaps) => {
          const clock = new FakeClock(0);
          const limiter = createLimiter({
            policies: [window(limit, windowMs, { name: 'w' })],
            clock,
          });
          const admitted: number[] = [];
          for (const gap of gaps) {
            clock.advance(gap);
            const t = clock.now();
            const decision = limiter.check(request);
            if (decision.allowed) admitted.push(t);
            const inside = admitted.filter((a) => a > t - windowMs);
            const [status] = decision.statuses;
            expect(status!.remaining).toBe(limit - inside.length);
            expect(status!.resetAfterMs).toBe(
              inside.length === 0 ? 0 : inside.at(-1)! + windowMs - t,
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('limiter: decisions without statuses', () => {
  it('decides as with statuses, and every decision that reports them counts exactly what lies inside each window', () => {
    const arbitraryWindow = fc.record({
      limit: fc.integer({ min: 1, max: 6 }),
      windowMs: fc.integer({ min: 1, max: 3_000 }),
    });
    fc.assert(
      fc.property(
        arbitraryWindow,
        arbitraryWindow,
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 1_500 }), statuses: fc.boolean() }), {
          minLength: 1,
          maxLength: 150,
          size: 'max',
        }),
        (a, b, steps) => {
          // Two windows: one may refuse while the other, skipped by a decision without statuses,
          // still holds times that have left it; the refusal's statuses must not count them.
          const windows = [a, b];
          const policies = windows.map((w, i) => window(w.limit, w.windowMs, { name: `w${i}` }));
          const clock = new FakeClock(0);
          const limiter = createLimiter({ policies, clock });
          const oracle = new ExactOracle(policies);
          const admitted: number[] = [];
          for (const { gap, statuses } of steps) {
            clock.advance(gap);
            const t = clock.now();
            const decision = limiter.check(request, { statuses });
            const expected = oracle.decide(t);
            expect(decision.allowed).toBe(expected.allowed);
            if (decision.allowed) admitted.push(t);
            else expect(decision.retryAfterSeconds).toBe(expected.retryAfterSeconds);
            if (decision.allowed && !statuses) {
              expect(decision.statuses).toEqual([]);
              continue;
            }
            // Asked for, or refused (a refusal always reports them): exact.
            for (const [i, { limit, windowMs }] of windows.entries()) {
              const inside = admitted.filter((at) => at > t - windowMs);
              const status = decision.statuses[i]!;
              expect(status.remaining).toBe(Math.max(0, limit - inside.length));
              expect(status.resetAfterMs).toBe(
                inside.length === 0 ? 0 : inside.at(-1)! + windowMs - t,
              );
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each([
    [
      'null',
      null,
      'check() options must be an object such as { statuses: false }, or left out, got null.',
    ],
    [
      'a number',
      5,
      'check() options must be an object such as { statuses: false }, or left out, got 5.',
    ],
    [
      'an array',
      [],
      'check() options must be an object such as { statuses: false }, or left out, got an array.',
    ],
    ['statuses as a string', { statuses: 'no' }, 'statuses must be true or false, got "no".'],
    ['statuses as a number', { statuses: 0 }, 'statuses must be true or false, got 0.'],
    [
      'statuses misspelt',
      { status: false },
      'check() has no option "status"; did you mean "statuses"? Its options are statuses, cost.',
    ],
    [
      'cost misspelt',
      { cots: 2 },
      'check() has no option "cots"; did you mean "cost"? Its options are statuses, cost.',
    ],
  ])(
    'refuses check options it cannot read (%s) with a ConfigurationError that says what to pass',
    (_, options, message) => {
      const limiter = createLimiter({ policies: [window(1, '1s', { name: 'w' })] });
      const caught = thrown(() => limiter.check(request, options as never));
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_option');
      expect((caught as Error).message).toBe(message);
      // Nothing was counted: the request is admitted with valid options.
      expect(limiter.check(request, {}).allowed).toBe(true);
    },
  );

  it('an admitted decision has no statuses whatever the store reports, and a refused one has them', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      policies: [window(1, '1s', { name: 'w' })],
      clock,
      store: new AsyncMemoryStore(),
    });
    const admitted = await limiter.check(request, { statuses: false });
    expect(admitted.allowed).toBe(true);
    expect(admitted.statuses).toEqual([]);
    const refused = await limiter.check(request, { statuses: false });
    expect(refused.allowed).toBe(false);
    expect(refused.statuses.map((s) => [s.policy.name, s.remaining])).toEqual([['w', 0]]);
  });
});

describe('limiter: requests read once', () => {
  it('a field that answers differently on each read is counted under the value that was checked', () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ policies: [window(1, '1s', { name: 'w' })], clock });
    let reads = 0;
    const shifty = {
      ...request,
      get clientId(): string {
        reads++;
        return reads === 1 ? 'client-1' : '';
      },
    };
    expect(limiter.check(shifty).allowed).toBe(true);
    expect(reads).toBe(1);
    expect(limiter.check(request).allowed).toBe(false);
  });

  it('a policies function is handed the values that were read and checked, in plain fields', () => {
    const seen: LimitRequest[] = [];
    const limits = [window(5, '1s', { name: 'w' })];
    const limiter = createLimiter({
      policies: (r) => {
        seen.push(r);
        return limits;
      },
      clock: new FakeClock(0),
    });
    let reads = 0;
    const counted = {
      ...request,
      accountType: 'live',
      get path(): string {
        reads++;
        return '/booking/v1/reservations';
      },
    };
    expect(limiter.check(counted).allowed).toBe(true);
    expect(reads).toBe(1);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(RequestFields);
    expect({ ...seen[0] }).toEqual({
      clientId: request.clientId,
      accountCode: request.accountCode,
      accountType: 'live',
      method: request.method,
      path: '/booking/v1/reservations',
    });
  });
});

describe('limiter: check() options, read on every call', () => {
  const make = () => createLimiter({ preset: presets.live, clock: new FakeClock(0) });
  const req = { clientId: 'c', accountCode: 'a', method: 'GET', path: '/booking/v1/offers' };

  it('reads each option once, whatever shape the object has', () => {
    const reads: string[] = [];
    const options = {
      get statuses() {
        reads.push('statuses');
        return false;
      },
      get cost() {
        reads.push('cost');
        return 2;
      },
    };
    const decision = make().check(req, options);
    expect(decision.allowed).toBe(true);
    expect(decision.statuses).toEqual([]);
    expect(reads.sort()).toEqual(['cost', 'statuses']);
  });

  it('refuses an unknown key with the nearest name, and a bad value in the one wording', () => {
    const limiter = make();
    expect(() => limiter.check(req, { statuses: true, cots: 2 } as never)).toThrow(
      /^check\(\) has no option "cots"; did you mean "cost"\?/,
    );
    expect(() => limiter.check(req, { statuses: 'yes' } as never)).toThrow(
      'statuses must be true or false, got "yes".',
    );
    expect(() => limiter.peek(req, { statuses: false } as never)).toThrow(
      /^peek\(\) has no option "statuses"/,
    );
    // An inherited key is the object's too: it goes to the reader, which reads own keys only.
    const inherited = Object.create({ cost: 3 }) as { statuses?: boolean };
    inherited.statuses = false;
    expect(limiter.check(req, inherited).allowed).toBe(true);
  });
});
