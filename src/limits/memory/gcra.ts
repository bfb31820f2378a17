/**
 * The rate policy in a record block, as GCRA (the generic cell rate algorithm): two slots, the
 * block time, then the theoretical arrival time `tat` (ms) of the next request at the average
 * rate. docs/memory-store.md gives the algorithm.
 * @module
 */
import type { RatePolicy } from '../policy.js';
import { emissionInterval, rateRemaining, rateResetAfter } from '../quota.js';

const TAT = 1;

/** Slots of a rate policy's state in a record block. */
export const RATE_SLOTS = 2;

/** The earliest instant `>= t` at which one more request is admitted, if nothing else arrives. */
export function gcraEarliest(m: Float64Array, s: number, policy: RatePolicy, t: number): number {
  // Exact: the instant a refusal announces is checked against the same double (see
  // announcedSeconds in ../store.ts).
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
