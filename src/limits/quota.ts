/**
 * A policy's quota read from its state: one arithmetic, so memory and Redis stores report alike.
 * @module
 */
import type { ConcurrencyPolicy, RatePolicy, WindowPolicy } from './policy.js';
import { STEPS_PER_MS } from './store.js';

/**
 * Emission interval of a rate policy (ms), rounded up onto the stores' time grid: never faster than
 * the rate, and exact in sums, so a refusal announces the very instant the policy admits at.
 */
export function emissionInterval(policy: RatePolicy): number {
  return Math.max(1, Math.ceil((1000 * STEPS_PER_MS) / policy.perSecond)) / STEPS_PER_MS;
}

/**
 * A rate policy's theoretical arrival time `tat` at `t`, carried from decisions under emission
 * interval `previous` to one under `next` (a client's limits overridden, or back): the backlog
 * keeps its length in admissions, rounded up onto the time grid. A `tat` not after `t` is kept.
 * Both stores compute it with these operations in this order, so their doubles are equal.
 */
export function carriedArrival(tat: number, t: number, previous: number, next: number): number {
  if (tat <= t) return tat;
  return t + Math.ceil(((tat - t) / previous) * next * STEPS_PER_MS) / STEPS_PER_MS;
}

/** Admissions possible at once at `t`, for a theoretical arrival time `tat`. */
export function rateRemaining(policy: RatePolicy, tat: number, t: number): number {
  // The n-th of n admissions at once passes while backlog + (n - 1) * T <= (burst - 1) * T, so
  // n <= burst - backlog / T: counted without a tolerance, as the admission test is.
  const backlog = Math.max(tat, t) - t;
  return Math.max(
    0,
    Math.min(policy.burst, policy.burst - Math.ceil(backlog / emissionInterval(policy))),
  );
}

/** Milliseconds until the full burst is back, for a theoretical arrival time `tat`. */
export function rateResetAfter(tat: number, t: number): number {
  return Math.max(0, tat - t);
}

export function windowRemaining(policy: WindowPolicy, count: number): number {
  return Math.max(0, policy.limit - count);
}

/** Milliseconds until a window holding `count`, the newest at `newestAt`, is empty again. */
export function windowResetAfter(
  policy: WindowPolicy,
  count: number,
  newestAt: number,
  t: number,
): number {
  return count === 0 ? 0 : Math.max(0, newestAt + policy.windowMs - t);
}

export function throttleRemaining(policy: ConcurrencyPolicy, held: number): number {
  return Math.max(0, policy.max - held);
}
