/**
 * The properties of peek, reset and cost, declared once and run on any store: every decision of
 * traffic with costs, peeks and resets interleaved equals the specification's oracle (which reads
 * a cost of n as n requests decided together and knows nothing of peeks); a peek answers what the
 * check after it answers; peeks change nothing; a reset then a replay equals a fresh limiter; a
 * client that waits what a costly refusal told it is admitted. Every call is awaited, so a
 * synchronous and an asynchronous store run the same tests.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Decision,
  FakeClock,
  type LimitPreset,
  type LimitStore,
  presets,
} from '../../src/index.js';
import { comparable } from './limits.js';
import { SPEC_DEVELOPMENT, SPEC_LIVE, type SpecAccount, SpecOracle } from './spec-oracle.js';

/** How hard the properties search on a store. */
export interface VerbsSuiteOptions {
  readonly numRuns: number;
  readonly maxLength: number;
}

const who = { clientId: 'client-1', accountCode: 'ACME' };

const accounts: ReadonlyArray<[string, LimitPreset, SpecAccount]> = [
  ['Live', presets.live, SPEC_LIVE],
  ['Development', presets.development, SPEC_DEVELOPMENT],
];

/** Global limits, the throttle and its exemption, resource limits through two version segments. */
const ROUTES = [
  ['GET', '/booking/v1/reservations'],
  ['GET', '/booking/v1/offers'],
  ['PATCH', '/booking/v1/bookings/B1'],
  ['PATCH', '/booking/v2/bookings/B1'],
  ['PATCH', '/booking/v1/bookings/B2'],
  ['PUT', '/rateplan/v1/rate-plans/P1/rates'],
  ['PATCH', '/rateplan/v1/rates'],
] as const;

/** One step: a check (maybe peeked first), or a reset of everything or of a route's resource. */
const step = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('check' as const),
      gap: fc.oneof(
        { weight: 5, arbitrary: fc.constant(0) },
        { weight: 3, arbitrary: fc.integer({ min: 1, max: 300 }) },
        { weight: 2, arbitrary: fc.integer({ min: 301, max: 5_000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 5_001, max: 400_000 }) },
      ),
      route: fc.integer({ min: 0, max: ROUTES.length - 1 }),
      // At most 5: the smallest limit of the Development tables.
      cost: fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 5 })),
      peek: fc.boolean(),
      hold: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 10 })),
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

type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

const answer = (d: Decision) =>
  d.allowed
    ? { allowed: true, retryAfterSeconds: undefined, reason: undefined }
    : { allowed: false, retryAfterSeconds: d.retryAfterSeconds, reason: d.reason };

/**
 * Declare the suite.
 * @param label - the store, for the titles
 * @param makeStore - a fresh, empty store; called inside the tests
 */
export function verbsSuite(
  label: string,
  makeStore: () => LimitStore,
  options: VerbsSuiteOptions,
): void {
  const steps = fc.array(step, { maxLength: options.maxLength, size: 'max' });

  /** Run steps through a limiter; with an oracle, expect each check to answer as it does. */
  async function run(
    preset: LimitPreset,
    list: readonly Step[],
    oracle: SpecOracle | undefined,
    peeks: boolean,
    at = 0,
  ) {
    const clock = new FakeClock(at);
    const limiter = createLimiter({ preset, clock, store: makeStore() });
    const decisions: unknown[] = [];
    const inFlight: Array<{ left: number; release: () => void; lease: number | undefined }> = [];
    const end = (e: { release: () => void; lease: number | undefined }) => {
      e.release();
      if (e.lease !== undefined) oracle?.release(e.lease);
    };
    for (const s of list) {
      if (s.kind === 'reset') {
        const route = s.route === undefined ? undefined : ROUTES[s.route]!;
        if (route === undefined) await limiter.reset(who);
        else await limiter.reset({ ...who, method: route[0], path: route[1] });
        oracle?.reset(route?.[0], route?.[1]);
        continue;
      }
      for (let i = inFlight.length - 1; i >= 0; i--) {
        if (--inFlight[i]!.left <= 0) end(inFlight.splice(i, 1)[0]!);
      }
      clock.advance(s.gap);
      const [method, path] = ROUTES[s.route]!;
      const request = { ...who, method, path };
      const peeked = peeks && s.peek ? await limiter.peek(request, { cost: s.cost }) : undefined;
      const d = await limiter.check(request, { cost: s.cost });
      decisions.push(comparable(d));
      const expected = oracle?.decide(method, path, clock.now(), s.cost);
      // Assert, step by step: a peek answers what the check after it answers.
      if (peeked !== undefined) expect(answer(peeked)).toEqual(answer(d));
      if (expected !== undefined) {
        const { lease: _, ...oracleAnswer } = expected;
        expect(answer(d), `${s.cost} x ${method} ${path} at ${clock.now()}`).toEqual(oracleAnswer);
      }
      if (d.allowed) {
        const e = { left: s.hold, release: d.release, lease: expected?.lease };
        if (s.hold === 0) end(e);
        else inFlight.push(e);
      } else if (s.exact && s.hold === 0 && inFlight.length === 0) {
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

  describe(`peek, reset and cost (${label})`, () => {
    for (const [name, preset, account] of accounts) {
      it(`${name}: every decision with costs, peeks and resets interleaved equals the specification's oracle (cost n = n requests at once, all or nothing), and a peek answers what the check after it answers`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, async (list) => {
            await run(preset, list, new SpecOracle(account), true);
          }),
          { numRuns: options.numRuns },
        );
      });

      it(`${name}: peeks change nothing: the same steps with peeks interleaved decide exactly as without them`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, async (list) => {
            const without = await run(preset, list, undefined, false);
            const withPeeks = await run(preset, list, undefined, true);
            expect(withPeeks.decisions).toEqual(without.decisions);
          }),
          { numRuns: options.numRuns },
        );
      });

      it(`${name}: a reset of the client and account, then a replay, decides as a fresh limiter`, async () => {
        await fc.assert(
          fc.asyncProperty(steps, steps, async (before, after) => {
            const checks = after.filter((s) => s.kind === 'check');
            const used = await run(preset, before, undefined, true);
            // Act: reset, then replay on the used limiter, from its time on.
            await used.limiter.reset(who);
            const at = used.clock.now();
            const replayed: unknown[] = [];
            for (const s of checks) {
              used.clock.advance(s.gap);
              const [method, path] = ROUTES[s.route]!;
              const d = await used.limiter.check({ ...who, method, path }, { cost: s.cost });
              if (d.allowed) d.release();
              replayed.push(comparable(d));
            }
            // Assert: as a fresh limiter from the same time.
            const clock = new FakeClock(at);
            const limiter = createLimiter({ preset, clock, store: makeStore() });
            const expected: unknown[] = [];
            for (const s of checks) {
              clock.advance(s.gap);
              const [method, path] = ROUTES[s.route]!;
              const d = await limiter.check({ ...who, method, path }, { cost: s.cost });
              if (d.allowed) d.release();
              expected.push(comparable(d));
            }
            expect(replayed).toEqual(expected);
          }),
          { numRuns: options.numRuns },
        );
      });
    }
  });
}
