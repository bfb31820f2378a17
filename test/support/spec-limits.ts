/**
 * The specification's global limits as a client keeps them: the table of spec-oracle.ts, written
 * from the specification's sentences (section "Limits", "Global limit"), with the client's safety
 * margin; no import from src/. Three uses: the earliest schedule a client may
 * send calls on, a check that a schedule never exceeds a limit, and a server that enforces the
 * limits on arrivals (a refused call counts nowhere: "Every request that returns a status other
 * than 429 counts").
 *
 * "At most L per W" is read as: no half-open interval [t, t + W) holds more than L calls.
 * "R per second on average, bursts up to B" is read as a bucket of B calls, full at first, that
 * refills at R per second: over any run of calls from the i-th to the j-th, j - i + 1 calls may
 * come at most B + R * (time from the i-th to the j-th) / 1 s.
 */
import {
  SPEC_DEVELOPMENT,
  SPEC_LIVE,
  type SpecAccount,
  type SpecAverage as SpecRate,
  type SpecWindow,
} from './spec-oracle.js';

export type { SpecWindow };

/** An average rate as the client keeps it, `marginMs` closer together (see {@link withMargin}). */
export interface SpecAverage extends SpecRate {
  /** Time the calls may come closer together than they were sent. */
  readonly marginMs?: number;
}

export type SpecLimit = SpecWindow | SpecAverage;

const perWindow = (limit: number, windowMs: number): SpecWindow => ({
  kind: 'window',
  limit,
  windowMs,
});

/** The time limits of an account: its global limits in the specification's table, the throttle aside. */
const timeLimits = (account: SpecAccount): SpecLimit[] =>
  account.global.filter((limit): limit is SpecLimit => limit.kind !== 'concurrent');

/** The global limits of each account type, from the specification's table (spec-oracle.ts). */
export const specLimits: Readonly<Record<'development' | 'live', readonly SpecLimit[]>> = {
  development: timeLimits(SPEC_DEVELOPMENT),
  live: timeLimits(SPEC_LIVE),
};

/**
 * The limits as the client keeps them with a safety margin of `marginMs` (docs/client.md,
 * "Safety margin"): as if any two calls could reach the server `marginMs` closer together than
 * they were sent. Every window is that much longer; an average rate's burst tolerance that much
 * shorter: from one call to a later one, k calls need (k - burst) / perSecond seconds plus the
 * margin.
 */
export function withMargin(limits: readonly SpecLimit[], marginMs: number): SpecLimit[] {
  return limits.map((limit) =>
    limit.kind === 'window'
      ? perWindow(limit.limit, limit.windowMs + marginMs)
      : { ...limit, marginMs: (limit.marginMs ?? 0) + marginMs },
  );
}

/**
 * The earliest instant after the calls sent at `sends` (in order) at which one more call may go
 * at or after `from` without exceeding any limit.
 */
export function earliestNext(limits: readonly SpecLimit[], sends: readonly number[], from: number) {
  let t = from;
  const n = sends.length; // the new call's index
  for (const limit of limits) {
    if (limit.kind === 'window') {
      // The call `limit` places back must lie a whole window before the new one.
      if (n >= limit.limit) t = Math.max(t, (sends[n - limit.limit] as number) + limit.windowMs);
    } else {
      // From the i-th call to the new one: n - i + 1 calls, which need
      // (n - i + 1 - burst) / perSecond seconds since the i-th (and the margin, if any).
      const margin = limit.marginMs ?? 0;
      for (let i = 0; i < n; i++) {
        const calls = n - i + 1;
        const needs = ((calls - limit.burst) * 1_000) / limit.perSecond + margin;
        t = Math.max(t, (sends[i] as number) + needs);
      }
    }
  }
  return t;
}

/**
 * The earliest schedule for calls asked for at `arrivals` (in order), sent first in, first out:
 * each call at the first instant at or after it is asked for, and not before the call ahead of it,
 * at which no limit is exceeded.
 */
export function earliestSchedule(limits: readonly SpecLimit[], arrivals: readonly number[]) {
  const sends: number[] = [];
  for (const arrival of arrivals) {
    sends.push(earliestNext(limits, sends, Math.max(arrival, sends.at(-1) ?? arrival)));
  }
  return sends;
}

/**
 * The first way in which calls at `times` exceed a limit, in words, or undefined when they never
 * do. The times need not be in order.
 */
export function excess(limits: readonly SpecLimit[], times: readonly number[]): string | undefined {
  const sorted = [...times].sort((a, b) => a - b);
  for (const limit of limits) {
    for (let i = 0; i < sorted.length; i++) {
      const first = sorted[i] as number;
      if (limit.kind === 'window') {
        const inside = sorted.filter((t) => t >= first && t < first + limit.windowMs).length;
        if (inside > limit.limit) {
          return `${inside} calls in [${first}, ${first + limit.windowMs}), limit ${limit.limit}`;
        }
      } else {
        const margin = limit.marginMs ?? 0;
        for (let j = i + 1; j < sorted.length; j++) {
          const calls = j - i + 1;
          const elapsed = (sorted[j] as number) - first - margin;
          const allowed = limit.burst + (limit.perSecond * elapsed) / 1_000;
          if (calls > allowed) {
            return `${calls} calls from ${first} to ${sorted[j]}, at most ${allowed} at ${limit.perSecond} per second with bursts of ${limit.burst}`;
          }
        }
      }
    }
  }
  return undefined;
}

/**
 * A server that enforces the limits on arrivals: a call is refused (429) when admitting it would
 * exceed a limit, and a refused call counts nowhere.
 */
export class SpecServer {
  readonly admitted: number[] = [];
  refused = 0;

  constructor(readonly limits: readonly SpecLimit[]) {}

  /** Decide calls arriving at `times`, in order of arrival; returns how many were refused. */
  receive(times: readonly number[]): number {
    for (const t of [...times].sort((a, b) => a - b)) {
      if (earliestNext(this.limits, this.admitted, t) === t) this.admitted.push(t);
      else this.refused++;
    }
    return this.refused;
  }
}
