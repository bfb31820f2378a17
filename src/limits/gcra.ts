/**
 * The rate policy as GCRA (the generic cell rate algorithm, a token bucket kept as one number).
 *
 * With emission interval `T = 1000 / perSecond` ms (on the stores' time grid) and tolerance
 * `tau = (burst - 1) * T`, a request at `t` is admitted when `tat - t <= tau`, and then
 * `tat = max(tat, t) + T`. After a quiet period `burst` requests pass at once; in the long run
 * `perSecond` on average.
 *
 * The state is two slots of the record block at `s`: the block time, then the theoretical arrival
 * time `tat` (ms) of the next request at the average rate.
 * @module
 */
import type { RatePolicy } from './policy.js';
import { STEPS_PER_MS } from './store.js';

const TAT = 1;

/** Slots of a rate policy's state in a record block. */
export const RATE_SLOTS = 2;

/**
 * Emission interval of a rate policy, in ms: `1000 / perSecond` rounded up to a step of the
 * stores' time resolution (see `resolveTime` in store.ts), so never faster than the rate given.
 * On that grid every sum of times and intervals is exact, so a burst at one instant is admitted
 * whole and the instant a refusal announces is the one the policy admits at, without a tolerance.
 */
export function emissionInterval(policy: RatePolicy): number {
  return Math.max(1, Math.ceil((1000 * STEPS_PER_MS) / policy.perSecond)) / STEPS_PER_MS;
}

/** The earliest instant `>= t` at which one more request is admitted, if nothing else arrives. */
export function gcraEarliest(m: Float64Array, s: number, policy: RatePolicy, t: number): number {
  // Exact: the instant a refusal announces is checked against the same double (see store.ts).
  const allowAt = (m[s + TAT] as number) - (policy.burst - 1) * emissionInterval(policy);
  return Math.max(allowAt, t);
}

/**
 * Record an admission at `t`. The new `tat` is read with {@link gcraFreshAt} (not returned: a
 * double returned from a call that is not inlined is boxed).
 */
export function gcraAdmit(m: Float64Array, s: number, policy: RatePolicy, t: number): void {
  m[s + TAT] = Math.max(m[s + TAT] as number, t) + emissionInterval(policy);
}

/** The instant from which the policy is fresh again: its `tat`. */
export function gcraFreshAt(m: Float64Array, s: number): number {
  return m[s + TAT] as number;
}

/** Admissions possible right now, at once. */
export function gcraRemaining(m: Float64Array, s: number, policy: RatePolicy, t: number): number {
  return rateRemaining(policy, m[s + TAT] as number, t);
}

/** Milliseconds until the full burst is available again. */
export function gcraResetAfter(m: Float64Array, s: number, t: number): number {
  return rateResetAfter(m[s + TAT] as number, t);
}

/**
 * Admissions possible right now, at once, for a theoretical arrival time `tat`.
 * @param policy - the rate policy
 * @param tat - its theoretical arrival time (ms)
 * @param t - now (ms)
 */
export function rateRemaining(policy: RatePolicy, tat: number, t: number): number {
  // The n-th of n admissions at once passes while backlog + (n - 1) * T <= (burst - 1) * T, so
  // n <= burst - backlog / T: counted without a tolerance, as the admission test is.
  const backlog = Math.max(tat, t) - t;
  return Math.max(
    0,
    Math.min(policy.burst, policy.burst - Math.ceil(backlog / emissionInterval(policy))),
  );
}

/**
 * Milliseconds until the full burst is available again, for a theoretical arrival time `tat`.
 * @param tat - the theoretical arrival time (ms)
 * @param t - now (ms)
 */
export function rateResetAfter(tat: number, t: number): number {
  return Math.max(0, tat - t);
}
