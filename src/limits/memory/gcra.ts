/**
 * The rate policy as GCRA: the block time, then the theoretical arrival time `tat` (ms).
 * docs/memory-store.md gives the algorithm.
 * @module
 */
import type { RatePolicy } from '../policy.js';
import { carriedArrival, emissionInterval, rateRemaining, rateResetAfter } from '../quota.js';

const TAT = 1;

export const RATE_SLOTS = 2;

/** The earliest time `cost` admissions pass at once: the last of them within the burst. */
export function gcraEarliest(
  m: Float64Array,
  s: number,
  policy: RatePolicy,
  t: number,
  cost: number,
): number {
  // Exact: the instant a refusal announces is checked against the same double (see
  // announcedSeconds in ../store.ts).
  const allowAt = (m[s + TAT] as number) - (policy.burst - cost) * emissionInterval(policy);
  return Math.max(allowAt, t);
}

/** The new `tat` is read with {@link gcraFreshAt}, not returned: a returned double is boxed. */
export function gcraAdmit(m: Float64Array, s: number, policy: RatePolicy, t: number): void {
  m[s + TAT] = Math.max(m[s + TAT] as number, t) + emissionInterval(policy);
}

/** The instant from which the policy is fresh again: its `tat`. */
export function gcraFreshAt(m: Float64Array, s: number): number {
  return m[s + TAT] as number;
}

export function gcraRemaining(m: Float64Array, s: number, policy: RatePolicy, t: number): number {
  return rateRemaining(policy, m[s + TAT] as number, t);
}

export function gcraResetAfter(m: Float64Array, s: number, t: number): number {
  return rateResetAfter(m[s + TAT] as number, t);
}

/**
 * Carry the state at `s` from decisions under `previous` to one under `next` at `t`, in place (see
 * carriedArrival); nothing changes while both have one emission interval.
 */
export function gcraCarry(
  m: Float64Array,
  s: number,
  previous: RatePolicy,
  next: RatePolicy,
  t: number,
): void {
  const from = emissionInterval(previous);
  const to = emissionInterval(next);
  if (from !== to) m[s + TAT] = carriedArrival(m[s + TAT] as number, t, from, to);
}
