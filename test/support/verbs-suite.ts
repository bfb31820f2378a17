/**
 * The properties of peek, reset, cost and overrides, declared once and run on any store by one
 * runner: traffic through a limiter on a fake clock, each decision against the specification's
 * oracle (which reads a cost of n as n requests decided together and knows nothing of peeks).
 *
 * The verbs: a peek answers what the check after it answers; peeks change nothing; a reset then a
 * replay equals a fresh limiter; a client that waits what a costly refusal told it is admitted.
 * The overrides: set, changed and removed between requests, they decide as the oracle does when
 * the client's limits change at its next request and what each limit has counted stays counted
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
import { comparable } from './limits.js';
import {
  SPEC_DEVELOPMENT,
  SPEC_LIVE,
  type SpecAccount,
  type SpecDecision,
  type SpecLimit,
  SpecOracle,
} from './spec-oracle.js';

/** How hard the properties search on a store. */
export interface SuiteOptions {
  readonly numRuns: number;
  readonly maxLength: number;
}

const who = { clientId: 'client-1', accountCode: 'ACME' };

const accounts: ReadonlyArray<[string, LimitPreset, SpecAccount]> = [
  ['Live', presets.live, SPEC_LIVE],
  ['Development', presets.development, SPEC_DEVELOPMENT],
];

type Route = readonly [string, string];

/** A check's wait, from none to `max` ms. */
const gap = (max: number) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 300 }) },
    { weight: 2, arbitrary: fc.integer({ min: 301, max: 5_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 5_001, max }) },
  );
// At most 5: the smallest limit of the Development tables.
const cost = fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 5 }));
const hold = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 10 }));

/** Global limits, the throttle and its exemption, resource limits through two version segments. */
const VERB_ROUTES: readonly Route[] = [
  ['GET', '/booking/v1/reservations'],
  ['GET', '/booking/v1/offers'],
  ['PATCH', '/booking/v1/bookings/B1'],
  ['PATCH', '/booking/v2/bookings/B1'],
  ['PATCH', '/booking/v1/bookings/B2'],
  ['PUT', '/rateplan/v1/rate-plans/P1/rates'],
  ['PATCH', '/rateplan/v1/rates'],
];

/** One step of the verbs: a check (maybe peeked first), or a reset of everything or of a route's resource. */
const verbStep = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      gap: gap(400_000),
      route: fc.integer({ min: 0, max: VERB_ROUTES.length - 1 }),
      cost,
      peek: fc.boolean(),
      hold,
      exact: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('reset' as const),
      route: fc.option(fc.constantFrom(2, 3, 5, 6), { nil: undefined }),
    }),
  },
);

const OVERRIDE_ROUTES: readonly Route[] = [
  ['GET', '/booking/v1/reservations'],
  ['GET', '/booking/v1/offers'],
  ['PATCH', '/booking/v1/bookings/B1'],
  ['PUT', '/rateplan/v1/rate-plans/P1/rates'],
];

/**
 * Multipliers whose rates stay whole per second and whose emission intervals (10 ms at 100 per
 * second) scale by powers of two, so the oracle's arithmetic is exact.
 */
const MULTIPLIERS = [0.5, 1, 2, 4] as const;

/** One step of the overrides: a check (maybe peeked first), an override set (for the client or its account), one removed. */
const overrideStep = fc.oneof(
  {
    weight: 14,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      gap: gap(120_000),
      route: fc.integer({ min: 0, max: OVERRIDE_ROUTES.length - 1 }),
      cost,
      peek: fc.boolean(),
      hold,
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

type Step =
  | (typeof verbStep extends fc.Arbitrary<infer T> ? T : never)
  | (typeof overrideStep extends fc.Arbitrary<infer T> ? T : never);

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

const answer = (d: Decision | SpecDecision) =>
  d.allowed
    ? { allowed: true, retryAfterSeconds: undefined, reason: undefined }
    : { allowed: false, retryAfterSeconds: d.retryAfterSeconds, reason: d.reason };

/** What a run drives: the limiter's preset and routes, and whether overrides change its limits. */
interface Traffic {
  readonly preset: LimitPreset;
  readonly account: SpecAccount;
  readonly routes: readonly Route[];
  readonly overrides: boolean;
}

/**
 * Run steps through a limiter on a fresh store from `at`; with an oracle, expect each check to
 * answer as it does; with `peeks`, peek first where a step says so. The limiter, its clock, and
 * what each check decided.
 */
async function run(
  makeStore: () => LimitStore,
  traffic: Traffic,
  list: readonly Step[],
  oracle: SpecOracle | undefined,
  peeks: boolean,
  at = 0,
) {
  const { preset, account, routes } = traffic;
  const clock = new FakeClock(at);
  const overrides = traffic.overrides ? new MemoryOverrides({ clock }) : undefined;
  const store = makeStore();
  const limiter = overrides
    ? createLimiter({ preset, clock, store, overrides })
    : createLimiter({ preset, clock, store });
  // The client's own override and its account's: the account's wins.
  let own: number | undefined;
  let ofAccount: number | undefined;
  const inForce = () => ofAccount ?? own;
  const decisions: unknown[] = [];
  const inFlight: Array<{ left: number; release: () => void; lease: number | undefined }> = [];
  const end = (e: { release: () => void; lease: number | undefined }) => {
    e.release();
    if (e.lease !== undefined) oracle?.release(e.lease);
  };
  for (const s of list) {
    if (s.kind === 'reset') {
      const route = s.route === undefined ? undefined : routes[s.route]!;
      if (route === undefined) await limiter.reset(who);
      else await limiter.reset({ ...who, method: route[0], path: route[1] });
      oracle?.reset(route?.[0], route?.[1]);
      continue;
    }
    if (s.kind === 'set') {
      overrides!.set(s.account ? who : { clientId: who.clientId }, { multiplier: s.multiplier });
      if (s.account) ofAccount = s.multiplier;
      else own = s.multiplier;
      oracle?.limits(multiplied(account, inForce()!));
      continue;
    }
    if (s.kind === 'remove') {
      overrides!.delete(who);
      overrides!.delete({ clientId: who.clientId });
      own = undefined;
      ofAccount = undefined;
      oracle?.limits(account);
      continue;
    }
    for (let i = inFlight.length - 1; i >= 0; i--) {
      if (--inFlight[i]!.left <= 0) end(inFlight.splice(i, 1)[0]!);
    }
    clock.advance(s.gap);
    const [method, path] = routes[s.route]!;
    const request = { ...who, method, path };
    for (let r = 1; r < ('repeat' in s ? s.repeat : 1); r++) {
      const d = await limiter.check(request);
      const expected = oracle!.decide(method, path, clock.now());
      expect(answer(d), `repeat ${r} of ${method} ${path} at ${clock.now()}`).toEqual(
        answer(expected),
      );
      if (d.allowed) end({ release: d.release, lease: expected.lease });
    }
    if (overrides !== undefined) {
      // A cost above a limit in force is refused with a typed error, never admitted.
      const limits = new SpecOracle(multiplied(account, inForce() ?? 1)).counters(method, path);
      if (limits.some(({ limit }) => s.cost > capacityOf(limit))) {
        const thrown = await (async () => limiter.check(request, { cost: s.cost }))().then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(thrown).toMatchObject({ code: 'cost_above_limit' });
        continue;
      }
    }
    const peeked = peeks && s.peek ? await limiter.peek(request, { cost: s.cost }) : undefined;
    const d = await limiter.check(request, { cost: s.cost });
    decisions.push(comparable(d));
    const expected = oracle?.decide(method, path, clock.now(), s.cost);
    // Assert, step by step: a peek answers what the check after it answers.
    if (peeked !== undefined) expect(answer(peeked)).toEqual(answer(d));
    if (expected !== undefined) {
      const { lease: _, ...oracleAnswer } = expected;
      const under = overrides === undefined ? '' : ` under x${inForce() ?? 1}`;
      expect(answer(d), `${s.cost} x ${method} ${path} at ${clock.now()}${under}`).toEqual(
        oracleAnswer,
      );
    }
    if (d.allowed) {
      const e = { left: s.hold, release: d.release, lease: expected?.lease };
      if (s.hold === 0) end(e);
      else inFlight.push(e);
    } else if ('exact' in s && s.exact && s.hold === 0 && inFlight.length === 0) {
      // Truthful Retry-After for any cost: waiting exactly what was told, the same request passes.
      clock.set(d.retryAt);
      const retry = await limiter.check(request, { cost: s.cost });
      decisions.push(comparable(retry));
      const again = oracle?.decide(method, path, clock.now(), s.cost);
      expect(retry.allowed, `retry of ${s.cost} x ${method} ${path}`).toBe(true);
      if (retry.allowed) {
        retry.release();
        if (again?.lease !== undefined) oracle?.release(again.lease);
      }
    }
  }
  for (const e of inFlight.splice(0)) end(e);
  return { limiter, clock, decisions };
}

/**
 * Declare the suite of peek, reset and cost.
 * @param label - the store, for the titles
 * @param makeStore - a fresh, empty store; called inside the tests
 */
export function verbsSuite(
  label: string,
  makeStore: () => LimitStore,
  options: SuiteOptions,
): void {
  const steps = fc.array(verbStep, { maxLength: options.maxLength, size: 'max' });
  const { numRuns } = options;

  describe(`peek, reset and cost (${label})`, () => {
    for (const [name, preset, account] of accounts) {
      const traffic = { preset, account, routes: VERB_ROUTES, overrides: false };

      it(`${name}: every decision with costs, peeks and resets interleaved equals the specification's oracle (cost n = n requests at once, all or nothing), and a peek answers what the check after it answers`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, async (list) => {
            await run(makeStore, traffic, list, new SpecOracle(account), true);
          }),
          { numRuns },
        );
      });

      it(`${name}: peeks change nothing: the same steps with peeks interleaved decide exactly as without them`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, async (list) => {
            const without = await run(makeStore, traffic, list, undefined, false);
            const withPeeks = await run(makeStore, traffic, list, undefined, true);
            expect(withPeeks.decisions).toEqual(without.decisions);
          }),
          { numRuns },
        );
      });

      it(`${name}: a reset of the client and account, then a replay, decides as a fresh limiter`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, steps, async (before, after) => {
            const checks = after.filter((s) => s.kind === 'check');
            const used = await run(makeStore, traffic, before, undefined, true);
            const replay = async (limiter: typeof used.limiter, clock: FakeClock) => {
              const decided: unknown[] = [];
              for (const s of checks) {
                clock.advance(s.gap);
                const [method, path] = VERB_ROUTES[s.route]!;
                const d = await limiter.check({ ...who, method, path }, { cost: s.cost });
                if (d.allowed) d.release();
                decided.push(comparable(d));
              }
              return decided;
            };
            // Act: reset, then replay on the used limiter, from its time on.
            await used.limiter.reset(who);
            const at = used.clock.now();
            const replayed = await replay(used.limiter, used.clock);
            // Assert: as a fresh limiter from the same time.
            const clock = new FakeClock(at);
            const fresh = createLimiter({ preset, clock, store: makeStore() });
            expect(replayed).toEqual(await replay(fresh, clock));
          }),
          { numRuns },
        );
      });
    }
  });
}

/**
 * Declare the suite of overrides.
 * @param label - the store, for the titles
 * @param makeStore - a fresh, empty store; called inside the tests
 */
export function overrideSuite(
  label: string,
  makeStore: () => LimitStore,
  options: SuiteOptions,
): void {
  const steps = fc.array(overrideStep, { maxLength: options.maxLength, size: 'max' });

  describe(`overrides (${label})`, () => {
    for (const [name, preset, account] of accounts) {
      const traffic = { preset, account, routes: OVERRIDE_ROUTES, overrides: true };

      it(`${name}: traffic with overrides set and removed between requests decides as the oracle whose limits change at the next request and keep what they counted, and a peek answers what the check after it answers`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, async (list) => {
            await run(makeStore, traffic, list, new SpecOracle(account), true);
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
