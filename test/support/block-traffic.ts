/**
 * Traffic of one client and account for the block properties: random arrivals over the routes of
 * the specification's tables (global limits, the throttle and its exemptions, resource limits
 * through several version segments), requests that stay in flight for a while, and after a
 * refusal a burst of early retries of the same request, sometimes followed by a retry at exactly
 * the announced instant. A run asks the library and the specification's oracle in lockstep.
 */
import fc from 'fast-check';
import type { SpecDecision, SpecOracle } from './spec-oracle.js';

const VERSIONS = ['v1', 'v2', 'v0-nsfh'] as const;
const IDS = ['B1', 'B2'] as const;

/** The routes, by kind: global and throttle, throttle-exempt on Live, and resource limits. */
const ROUTES: ReadonlyArray<(version: string, id: string) => [method: string, path: string]> = [
  (v) => ['GET', `/booking/${v}/reservations`],
  (v) => ['GET', `/booking/${v}/offers`],
  (v, id) => ['PATCH', `/booking/${v}/bookings/${id}`],
  (v, id) => ['PUT', `/rateplan/${v}/rate-plans/${id}/rates`],
  (v) => ['PATCH', `/rateplan/${v}/rates`],
  (v, id) => ['GET', `/booking/${v}/reservations/${id}/offers`],
  (v, id) => ['PATCH', `/booking/${v}/reservations/${id}`],
];

/** One arrival of the traffic. */
export interface TrafficEvent {
  /** Ms since the previous request of the run (retries included). */
  readonly gap: number;
  /** A route kind (index in the routes), used unless `focused`. */
  readonly kind: number;
  /** Whether the request takes the run's focus route instead, so that its limits are reached. */
  readonly focused: boolean;
  readonly version: number;
  readonly id: number;
  /** Arrivals after this one that an admitted request stays in flight for (0: ends at once). */
  readonly hold: number;
  /** After a refusal: early retries, each at this fraction of the announced wait (sorted). */
  readonly early: readonly number[];
  /** After a refusal: a retry at exactly the announced instant. */
  readonly exact: boolean;
}

/** A run's traffic: the focus route and the arrivals. */
export interface Traffic {
  readonly focus: number;
  readonly events: readonly TrafficEvent[];
}

/**
 * Random traffic. `holds`: whether admitted requests may stay in flight (otherwise each ends at
 * once, so nothing but the client's own retry is admitted between a refusal and that retry).
 */
export const arbitraryTraffic = (options: { holds: boolean; maxLength?: number }) =>
  fc.record({
    focus: fc.integer({ min: 0, max: ROUTES.length - 1 }),
    events: fc.array(
      fc.record({
        gap: fc.oneof(
          { weight: 6, arbitrary: fc.constant(0) },
          { weight: 3, arbitrary: fc.integer({ min: 1, max: 20 }) },
          { weight: 2, arbitrary: fc.integer({ min: 21, max: 1_500 }) },
          { weight: 1, arbitrary: fc.integer({ min: 1_501, max: 400_000 }) },
        ),
        kind: fc.integer({ min: 0, max: ROUTES.length - 1 }),
        focused: fc.boolean(),
        version: fc.integer({ min: 0, max: VERSIONS.length - 1 }),
        id: fc.integer({ min: 0, max: IDS.length - 1 }),
        hold: options.holds
          ? fc.oneof(
              { weight: 3, arbitrary: fc.constant(0) },
              { weight: 2, arbitrary: fc.integer({ min: 1, max: 40 }) },
            )
          : fc.constant(0),
        early: fc
          .array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { maxLength: 5 })
          .map((fractions) => [...fractions].sort((a, b) => a - b)),
        exact: fc.boolean(),
      }),
      { maxLength: options.maxLength ?? 400, size: 'max' },
    ),
  });

/** What the library answers, in the oracle's terms. */
export interface Answer {
  readonly allowed: boolean;
  readonly retryAfterSeconds: number | undefined;
  readonly reason: string | undefined;
}

/** The library under test, for one client and account. */
export interface LibraryTarget {
  /** Decide `method path` at `t` (whole ms); `release` ends an admitted request. */
  check(method: string, path: string, t: number): Promise<Answer & { release?: () => unknown }>;
}

/** One request of a run, with both answers. */
export interface TrafficStep {
  readonly at: number;
  readonly request: string;
  /** `first`: an arrival; `early`: a retry before the announced instant; `exact`: at it. */
  readonly role: 'first' | 'early' | 'exact';
  readonly library: Answer;
  readonly oracle: Answer;
}

/**
 * Run the traffic through the library and the oracle in lockstep, stopping at the first request
 * they answer differently (the runs would diverge from there).
 */
export async function runLockstep(
  traffic: Traffic,
  library: LibraryTarget,
  oracle: SpecOracle,
): Promise<TrafficStep[]> {
  const steps: TrafficStep[] = [];
  const inFlight: Array<{ left: number; release: () => unknown; lease: number | undefined }> = [];
  let t = 0;
  const ask = async (
    method: string,
    path: string,
    role: TrafficStep['role'],
    hold: number,
  ): Promise<Answer | undefined> => {
    const got = await library.check(method, path, t);
    const expected: SpecDecision = oracle.decide(method, path, t);
    const answer = {
      allowed: got.allowed,
      retryAfterSeconds: got.retryAfterSeconds,
      reason: got.reason,
    };
    const oracleAnswer = {
      allowed: expected.allowed,
      retryAfterSeconds: expected.retryAfterSeconds,
      reason: expected.reason,
    };
    steps.push({
      at: t,
      request: `${method} ${path}`,
      role,
      library: answer,
      oracle: oracleAnswer,
    });
    if (got.allowed) {
      const end = {
        left: hold,
        release: () => got.release?.(),
        lease: expected.lease,
      };
      if (hold === 0) finish(end);
      else inFlight.push(end);
    }
    const agree =
      answer.allowed === oracleAnswer.allowed &&
      answer.retryAfterSeconds === oracleAnswer.retryAfterSeconds &&
      answer.reason === oracleAnswer.reason;
    return agree ? answer : undefined;
  };
  const finish = (end: { release: () => unknown; lease: number | undefined }) => {
    end.release();
    if (end.lease !== undefined) oracle.release(end.lease);
  };
  for (const event of traffic.events) {
    // Requests in flight end as later ones arrive.
    for (let i = inFlight.length - 1; i >= 0; i--) {
      const end = inFlight[i]!;
      if (--end.left <= 0) {
        inFlight.splice(i, 1);
        finish(end);
      }
    }
    t += event.gap;
    const kind = event.focused ? traffic.focus : event.kind;
    const [method, path] = ROUTES[kind]!(VERSIONS[event.version]!, IDS[event.id]!);
    const first = await ask(method, path, 'first', event.hold);
    if (first === undefined) return steps;
    if (first.allowed) continue;
    // Refused at `refusedAt`: early retries of the same request, then maybe one at the instant.
    const refusedAt = t;
    const waitMs = first.retryAfterSeconds! * 1_000;
    for (const fraction of event.early) {
      t = Math.max(t, refusedAt + Math.floor(fraction * waitMs));
      if ((await ask(method, path, 'early', 0)) === undefined) return steps;
    }
    if (event.exact) {
      t = refusedAt + waitMs;
      if ((await ask(method, path, 'exact', 0)) === undefined) return steps;
    }
  }
  for (const end of inFlight.splice(0)) finish(end);
  return steps;
}
