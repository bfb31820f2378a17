/**
 * The block rule's scenarios and properties, declared once and run on any store: a refusal outside
 * a block announces `R = max(1, ceil(seconds to the earliest admission))` and blocks what refused
 * until `now + R`; a request before then is refused as blocked, counts nowhere, changes nothing and
 * answers `ceil((B - t) / 1 s)`; from then on it is decided afresh. Checked against the
 * specification's oracle (test/support/spec-oracle.ts), which shares nothing with the stores, and
 * Retry-After on fractional rates and clocks, without a float tolerance. Every `check` is awaited,
 * so a synchronous and an asynchronous store run the same tests.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  FakeClock,
  type LimitPreset,
  type LimitStore,
  type Policy,
  presets,
  rate,
  window,
} from '../../src/index.js';
import { arbitraryTraffic, type LibraryTarget, runLockstep } from './block-traffic.js';
import { SPEC_DEVELOPMENT, SPEC_LIVE, type SpecAccount, SpecOracle } from './spec-oracle.js';

/** How hard the properties search on a store. */
export interface BlockSuiteOptions {
  /** Runs of each traffic property. */
  readonly numRuns: number;
  /** The most arrivals of a traffic run (the traffic's own default when absent). */
  readonly maxLength?: number;
  /** The fractional-rate property: its runs and the most arrivals of a run. */
  readonly fractional: { readonly numRuns: number; readonly maxLength: number };
}

const who = { clientId: 'client-1', accountCode: 'ACME' };

const accounts: ReadonlyArray<[string, LimitPreset, SpecAccount]> = [
  ['Live', presets.live, SPEC_LIVE],
  ['Development', presets.development, SPEC_DEVELOPMENT],
];

/** Fractional rates (1000 / 0.2 and 1000 / 3 are not exact in doubles), with windows. */
const fractional: ReadonlyArray<readonly Policy[]> = [
  [rate(0.2, 2, { name: 'r' })],
  [rate(3, 4, { name: 'r' }), window(5, '1s', { name: 'w' })],
  [rate(0.7, 1, { name: 'r' }), window(3, '2.5s', { name: 'w' })],
  [window(2, '1s', { name: 'w' })],
];

/**
 * Declare the block rule's suite.
 * @param label - the store, for the titles
 * @param makeStore - a fresh, empty store; called inside the tests, so after the file's hooks ran
 * @param options - runs and lengths of the properties
 */
export function blockRuleSuite(
  label: string,
  makeStore: () => LimitStore,
  options: BlockSuiteOptions,
): void {
  const traffic = (holds: boolean) =>
    arbitraryTraffic(
      options.maxLength === undefined ? { holds } : { holds, maxLength: options.maxLength },
    );

  /** A limiter of `preset` on a fresh store, asked at the times given. */
  function target(preset: LimitPreset): LibraryTarget {
    const clock = new FakeClock(0);
    const limiter = createLimiter({ preset, clock, store: makeStore() });
    return {
      check: async (method, path, t) => {
        clock.set(t);
        const d = await limiter.check({ ...who, method, path });
        return d.allowed
          ? { allowed: true, retryAfterSeconds: undefined, reason: undefined, release: d.release }
          : { allowed: false, retryAfterSeconds: d.retryAfterSeconds, reason: d.reason };
      },
    };
  }

  /** Steps of each role and answer seen by the properties, so that none of them is vacuous. */
  const seen = new Map<string, number>();
  const tally = (
    steps: ReadonlyArray<{
      role: string;
      library: { allowed: boolean; reason?: string | undefined };
    }>,
  ) => {
    for (const s of steps) {
      const key = `${s.role} ${s.library.allowed ? 'admitted' : s.library.reason}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  };

  describe(`a block never moves once announced (${label})`, () => {
    it('Live: 200 at t = 0, the 201st refused for 1 s, an early call at 999 ms leaves the block, the call at 1 s is admitted', async () => {
      // Arrange
      const clock = new FakeClock(0);
      const limiter = createLimiter({ preset: presets.live, clock, store: makeStore() });
      const call = () => limiter.check({ ...who, method: 'GET', path: '/booking/v1/reservations' });
      for (let i = 0; i < 200; i++) {
        const d = await call();
        expect(d.allowed).toBe(true);
        if (d.allowed) d.release();
      }

      // Act
      const refused = await call();
      clock.set(999);
      const early = await call();
      clock.set(1_000);
      const onTime = await call();

      // Assert
      expect(refused).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 1 });
      expect(early).toMatchObject({ allowed: false, reason: 'blocked', retryAfterSeconds: 1 });
      expect(onTime.allowed).toBe(true);
    });

    it('Development: refused at 40 s for 20 s, other workers calling early every second, admitted at 60 s', async () => {
      // Arrange: 5 a second from 0 s, 200 in the minute by 39.8 s.
      const clock = new FakeClock(0);
      const limiter = createLimiter({ preset: presets.development, clock, store: makeStore() });
      const call = () => limiter.check({ ...who, method: 'GET', path: '/booking/v1/reservations' });
      for (let i = 0; i < 200; i++) {
        clock.set(i * 200);
        const d = await call();
        expect(d.allowed).toBe(true);
        if (d.allowed) d.release();
      }

      // Act
      clock.set(40_000);
      const refused = await call();
      const early: Array<[number, unknown]> = [];
      for (let at = 40_500; at < 60_000; at += 1_000) {
        clock.set(at);
        const d = await call();
        early.push([at, d.allowed ? 'admitted' : [d.reason, d.retryAfterSeconds]]);
      }
      clock.set(60_000);
      const onTime = await call();

      // Assert: each early call is told the time left to 60 s, and 60 s holds.
      expect(refused).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 20 });
      expect(early).toEqual(
        early.map(([at]) => [at, ['blocked', Math.ceil((60_000 - (at as number)) / 1_000)]]),
      );
      expect(onTime.allowed).toBe(true);
    });

    it('an early call under a throttle-exempt route is decided on its own: the throttle block does not reach it', async () => {
      // Arrange: 20 in flight on Live, the 21st refused by the throttle for the recommended second.
      const clock = new FakeClock(0);
      const limiter = createLimiter({ preset: presets.live, clock, store: makeStore() });
      const throttled = () =>
        limiter.check({ ...who, method: 'GET', path: '/booking/v1/reservations' });
      for (let i = 0; i < 20; i++) expect((await throttled()).allowed).toBe(true);
      const refused = await throttled();

      // Act
      clock.set(500);
      const exempt = await limiter.check({ ...who, method: 'GET', path: '/booking/v1/offers' });
      const blocked = await throttled();

      // Assert
      expect(refused).toMatchObject({ allowed: false, reason: 'limit', retryAfterSeconds: 1 });
      expect(exempt.allowed).toBe(true);
      expect(blocked).toMatchObject({ allowed: false, reason: 'blocked', retryAfterSeconds: 1 });
    });

    for (const [name, preset, account] of accounts) {
      it(`${name}: every decision equals the specification's oracle, early retries and requests in flight included`, async () => {
        await fc.assert(
          fc.asyncProperty(traffic(true), async (traffic) => {
            // Arrange
            const oracle = new SpecOracle(account);

            // Act
            const steps = await runLockstep(traffic, target(preset), oracle);

            // Assert
            tally(steps);
            for (const step of steps) {
              expect(step.library, JSON.stringify(step)).toEqual(step.oracle);
            }
          }),
          { numRuns: options.numRuns },
        );
      });

      it(`${name}: a client that waits exactly what it was told is admitted, however many early calls came in between`, async () => {
        await fc.assert(
          fc.asyncProperty(traffic(false), async (traffic) => {
            // Arrange
            const oracle = new SpecOracle(account);

            // Act
            const steps = await runLockstep(traffic, target(preset), oracle);

            // Assert: every retry at the announced instant after nothing else was admitted.
            tally(steps);
            let admittedSinceRefusal = false;
            for (const step of steps) {
              expect(step.library, JSON.stringify(step)).toEqual(step.oracle);
              if (step.role === 'exact' && !admittedSinceRefusal) {
                expect(step.library.allowed, JSON.stringify(step)).toBe(true);
              }
              if (step.role === 'first') admittedSinceRefusal = false;
              else if (step.library.allowed) admittedSinceRefusal = true;
            }
          }),
          { numRuns: options.numRuns },
        );
      });
    }

    it('the traffic of the properties above reaches refusals, blocks and retries at the announced instant', () => {
      for (const key of ['first limit', 'first blocked', 'early blocked', 'exact admitted']) {
        expect(seen.get(key) ?? 0, key).toBeGreaterThan(0);
      }
    });
  });

  describe(`Retry-After without a float tolerance (${label})`, () => {
    it('a clock with sub-microsecond fractions: every Retry-After is honoured at its own instant, and early calls are told the least wait that reaches it', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...fractional),
          fc.array(
            fc.record({
              gap: fc.double({ min: 0, max: 3_000, noNaN: true }),
              early: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
                maxLength: 4,
              }),
            }),
            { maxLength: options.fractional.maxLength, size: 'max' },
          ),
          async (policies, arrivals) => {
            // Arrange
            const clock = new FakeClock(0);
            const limiter = createLimiter({ policies, clock, store: makeStore() });
            const request = { ...who, method: 'GET', path: '/x' };
            let t = 0;
            for (const { gap, early } of arrivals) {
              // Act
              t += gap;
              clock.set(t);
              const first = await limiter.check(request);
              if (first.allowed) continue;
              // The store decides on its time grid (1/1024 ms): the instant it announced is its
              // own time plus the wait; the client's clock, finer, waits from its own time.
              const announced = first.retryAt;
              const waited = t + first.retryAfterSeconds * 1_000;
              expect(announced).toBe(first.now + first.retryAfterSeconds * 1_000);
              expect(waited).toBeGreaterThanOrEqual(announced);
              for (const f of [...early].sort((a, b) => a - b)) {
                t = Math.max(t, t + f * (announced - t));
                if (t >= announced) break;
                clock.set(t);
                const d = await limiter.check(request);

                // Assert: refused as blocked, told the least whole wait whose instant is not
                // before the announced one.
                expect(d.allowed).toBe(false);
                if (d.allowed) return;
                expect(d.reason).toBe('blocked');
                expect(d.retryAt).toBeGreaterThanOrEqual(announced);
                expect(d.now + (d.retryAfterSeconds - 1) * 1_000 < announced).toBe(true);
              }
              t = waited;
              clock.set(t);
              expect((await limiter.check(request)).allowed).toBe(true);
            }
          },
        ),
        { numRuns: options.fractional.numRuns },
      );
    });

    it('a wait a hair over a whole second is announced as the next second, not rounded away', async () => {
      // Arrange: one admission at 0 leaves a window of 1.5 s at 1500 ms.
      const clock = new FakeClock(0);
      const limiter = createLimiter({
        policies: [window(1, '1.5s', { name: 'w' })],
        clock,
        store: makeStore(),
      });
      const request = { ...who, method: 'GET', path: '/x' };
      expect((await limiter.check(request)).allowed).toBe(true);

      // Act: 1000.0000005 ms before the window has room.
      clock.set(499.9999995);
      const refused = await limiter.check(request);
      clock.set(refused.allowed ? 0 : refused.retryAt);
      const retry = await limiter.check(request);

      // Assert
      expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 2 });
      expect(retry.allowed).toBe(true);
    });
  });
}
