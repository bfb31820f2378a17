/**
 * The rate policy as GCRA (the generic cell rate algorithm, a token bucket kept as one number).
 *
 * With emission interval `T = 1000 / perSecond` ms and tolerance `tau = (burst - 1) * T`, a request
 * at `t` is admitted when `tat - t <= tau`, and then `tat = max(tat, t) + T`. After a quiet period
 * `burst` requests pass at once; in the long run `perSecond` on average.
 * @module
 */
import type { RatePolicy } from './policy.js';
import { RETRY_TOLERANCE_MS as EPSILON } from './store.js';

/** State of one rate policy in one scope. */
export class Gcra {
  /** Theoretical arrival time (ms) of the next request at the average rate. */
  tat = 0;
  /** Refused until this instant (ms) because of an earlier refusal; 0 when not blocked. */
  blockedUntil = 0;
}

/** Emission interval of a rate policy, in ms. */
export function emissionInterval(policy: RatePolicy): number {
  return 1000 / policy.perSecond;
}

/** The earliest instant `>= t` at which one more request is admitted, if nothing else arrives. */
export function gcraEarliest(state: Gcra, policy: RatePolicy, t: number): number {
  const allowAt = state.tat - (policy.burst - 1) * emissionInterval(policy);
  return allowAt - EPSILON <= t ? t : allowAt;
}

/** Record an admission at `t`. */
export function gcraAdmit(state: Gcra, policy: RatePolicy, t: number): void {
  state.tat = Math.max(state.tat, t) + emissionInterval(policy);
}

/** Admissions possible right now, at once. */
export function gcraRemaining(state: Gcra, policy: RatePolicy, t: number): number {
  const interval = emissionInterval(policy);
  const backlog = Math.max(state.tat, t) - t;
  return Math.max(
    0,
    Math.min(policy.burst, Math.floor((policy.burst * interval - backlog) / interval + EPSILON)),
  );
}

/** Milliseconds until the full burst is available again. */
export function gcraResetAfter(state: Gcra, t: number): number {
  return Math.max(0, state.tat - t);
}

/** The instant from which this state is the same as a fresh one. */
export function gcraQuietAt(state: Gcra): number {
  return Math.max(state.tat, state.blockedUntil);
}
