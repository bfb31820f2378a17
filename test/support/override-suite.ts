/**
 * The properties of overrides, declared once and run on any store: traffic with overrides set,
 * changed and removed between its requests decides as the specification's oracle does when the
 * client's limits change at its next request and what each limit has counted stays counted
 * ("raising a limit never forgets what was already admitted"); a raise after traffic admits exactly
 * what the raised limits leave; removing the override returns to the default limits with every
 * admission still counted. Every call is awaited, so a synchronous and an asynchronous store run
 * the same tests.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Decision,
  FakeClock,
  type LimitPreset,
  type LimitStore,
  MemoryOverrides,
  presets,
} from '../../src/index.js';
import {
  SPEC_DEVELOPMENT,
  SPEC_LIVE,
  type SpecAccount,
  type SpecDecision,
  type SpecLimit,
  SpecOracle,
} from './spec-oracle.js';

/** How hard the properties search on a store. */
export interface OverrideSuiteOptions {
  readonly numRuns: number;
  readonly maxLength: number;
}

const who = { clientId: 'client-1', accountCode: 'ACME' };

const accounts: ReadonlyArray<[string, LimitPreset, SpecAccount]> = [
  ['Live', presets.live, SPEC_LIVE],
  ['Development', presets.development, SPEC_DEVELOPMENT],
];

/**
 * Multipliers whose rates stay whole per second and whose emission intervals (10 ms at 100 per
 * second) scale by powers of two, so the oracle's arithmetic is exact.
 */
const MULTIPLIERS = [0.5, 1, 2, 4] as const;

/**
 * The specification's limits of an account multiplied, as the library documents an override with
 * a multiplier: every limit of the client and account (windows, the average rate and its burst, the
 * throttle) times m, rounded down, never below 1; per-resource limits as they are.
 */
function multiplied(account: SpecAccount, m: number): SpecAccount {
  const times = (n: number) => Math.max(1, Math.floor(n * m));
  const scale = (limit: SpecLimit): SpecLimit => {
    switch (limit.kind) {
      case 'window':
        return { ...limit, limit: times(limit.limit) };
      case 'average':
        return { ...limit, perSecond: limit.perSecond * m, burst: times(limit.burst) };
      case 'concurrent':
        return { ...limit, max: times(limit.max) };
    }
  };
  return {
    ...account,
    global: account.global.map(scale),
    throttle: scale(account.throttle) as SpecAccount['throttle'],
  };
}

/** The most one request may count at once under a limit: a window's limit, a bucket's burst. */
function capacityOf(limit: SpecLimit): number {
  if (limit.kind === 'window') return limit.limit;
  return limit.kind === 'average' ? limit.burst : Number.POSITIVE_INFINITY;
}

const ROUTES = [
  ['GET', '/booking/v1/reservations'],
  ['GET', '/booking/v1/offers'],
  ['PATCH', '/booking/v1/bookings/B1'],
  ['PUT', '/rateplan/v1/rate-plans/P1/rates'],
] as const;

/** One step: a check (maybe peeked first), an override set (for the client or its account), one removed. */
const step = fc.oneof(
  {
    weight: 14,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      gap: fc.oneof(
        { weight: 5, arbitrary: fc.constant(0) },
        { weight: 3, arbitrary: fc.integer({ min: 1, max: 300 }) },
        { weight: 2, arbitrary: fc.integer({ min: 301, max: 5_000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 5_001, max: 120_000 }) },
      ),
      route: fc.integer({ min: 0, max: ROUTES.length - 1 }),
      cost: fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 5 })),
      peek: fc.boolean(),
      hold: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 10 })),
      // The same request again and again at once: enough to reach the Live limits.
      repeat: fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, fc.integer({ min: 10, max: 150 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('set' as const),
      multiplier: fc.constantFrom(...MULTIPLIERS),
      account: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const) }) },
);

type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

const answer = (d: Decision | SpecDecision) =>
  d.allowed
    ? { allowed: true, retryAfterSeconds: undefined, reason: undefined }
    : { allowed: false, retryAfterSeconds: d.retryAfterSeconds, reason: d.reason };

/**
 * Declare the suite.
 * @param label - the store, for the titles
 * @param makeStore - a fresh, empty store; called inside the tests
 */
export function overrideSuite(
  label: string,
  makeStore: () => LimitStore,
  options: OverrideSuiteOptions,
): void {
  const steps = fc.array(step, { maxLength: options.maxLength, size: 'max' });

  describe(`overrides (${label})`, () => {
    for (const [name, preset, account] of accounts) {
      it(`${name}: traffic with overrides set and removed between requests decides as the oracle whose limits change at the next request and keep what they counted, and a peek answers what the check after it answers`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, async (list) => {
            const clock = new FakeClock(0);
            const overrides = new MemoryOverrides({ clock });
            const limiter = createLimiter({ preset, clock, store: makeStore(), overrides });
            const oracle = new SpecOracle(account);
            // The client's own override and its account's: the account's wins.
            let own: number | undefined;
            let ofAccount: number | undefined;
            const inForce = () => ofAccount ?? own;
            const inFlight: Array<{
              left: number;
              release: () => void;
              lease: number | undefined;
            }> = [];
            const end = (e: { release: () => void; lease: number | undefined }) => {
              e.release();
              if (e.lease !== undefined) oracle.release(e.lease);
            };
            for (const s of list as Step[]) {
              if (s.kind === 'set') {
                const target = s.account ? who : { clientId: who.clientId };
                overrides.set(target, { multiplier: s.multiplier });
                if (s.account) ofAccount = s.multiplier;
                else own = s.multiplier;
                oracle.limits(multiplied(account, inForce()!));
                continue;
              }
              if (s.kind === 'remove') {
                overrides.delete(who);
                overrides.delete({ clientId: who.clientId });
                own = undefined;
                ofAccount = undefined;
                oracle.limits(account);
                continue;
              }
              for (let i = inFlight.length - 1; i >= 0; i--) {
                if (--inFlight[i]!.left <= 0) end(inFlight.splice(i, 1)[0]!);
              }
              clock.advance(s.gap);
              for (let r = 1; r < s.repeat; r++) {
                const [method, path] = ROUTES[s.route]!;
                const d = await limiter.check({ ...who, method, path });
                const expected = oracle.decide(method, path, clock.now());
                expect(answer(d), `repeat ${r} of ${method} ${path} at ${clock.now()}`).toEqual(
                  answer(expected),
                );
                if (d.allowed) end({ release: d.release, lease: expected.lease });
              }
              const [method, path] = ROUTES[s.route]!;
              const request = { ...who, method, path };
              // A cost above a limit in force is refused with a typed error, never admitted.
              const limits = new SpecOracle(multiplied(account, inForce() ?? 1)).counters(
                method,
                path,
              );
              if (limits.some(({ limit }) => s.cost > capacityOf(limit))) {
                const thrown = await (async () => limiter.check(request, { cost: s.cost }))().then(
                  () => undefined,
                  (error: unknown) => error,
                );
                expect(thrown).toMatchObject({ code: 'cost_above_limit' });
                continue;
              }
              const peeked = s.peek ? await limiter.peek(request, { cost: s.cost }) : undefined;
              const d = await limiter.check(request, { cost: s.cost });
              const expected = oracle.decide(method, path, clock.now(), s.cost);
              if (peeked !== undefined) expect(answer(peeked)).toEqual(answer(d));
              const { lease: _, ...oracleAnswer } = expected;
              expect(
                answer(d),
                `${s.cost} x ${method} ${path} at ${clock.now()} under x${inForce() ?? 1}`,
              ).toEqual(oracleAnswer);
              if (d.allowed) {
                const e = { left: s.hold, release: d.release, lease: expected.lease };
                if (s.hold === 0) end(e);
                else inFlight.push(e);
              }
            }
            for (const e of inFlight.splice(0)) end(e);
          }),
          { numRuns: options.numRuns },
        );
      });

      it(`${name}: raised after n admissions, a client is admitted exactly (raised limit - n) more times in the window, and (limit - n - more) after the override is removed`, async () => {
        await fc.assert(
          fc.asyncProperty(fc.integer({ min: 0, max: 5 }), fc.constantFrom(2, 4), async (n, m) => {
            const clock = new FakeClock(0);
            const overrides = new MemoryOverrides({ clock });
            const limiter = createLimiter({ preset, clock, store: makeStore(), overrides });
            const request = { ...who, method: 'GET', path: '/booking/v1/offers' };
            const perSecond = account.global[0]!;
            if (perSecond.kind !== 'window') throw new Error('the first limit is per second');
            const admitAll = async () => {
              let admitted = 0;
              for (;;) {
                const d = await limiter.check(request);
                if (!d.allowed) return { admitted, refused: d };
                d.release();
                admitted++;
              }
            };
            for (let i = 0; i < n; i++) expect((await limiter.check(request)).allowed).toBe(true);
            overrides.set({ clientId: who.clientId }, { multiplier: m });
            const raised = await admitAll();
            // The per-second window binds first on both presets: n were already counted in it.
            expect(raised.admitted).toBe(perSecond.limit * m - n);
            expect(raised.refused.policy?.name).toMatch(new RegExp(`\\(x${m}\\)$`));
            overrides.delete({ clientId: who.clientId });
            // Back to the default limits: everything admitted in the second is still counted.
            const after = await limiter.check(request);
            expect(after.allowed).toBe(false);
          }),
          { numRuns: Math.max(5, Math.floor(options.numRuns / 4)) },
        );
      });
    }
  });
}
