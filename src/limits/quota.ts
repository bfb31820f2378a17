/**
 * A policy's quota read from its state, the same arithmetic for every store, so that the memory
 * and the Redis store report alike: the rate's emission interval, what remains, and when the
 * quota is whole again.
 * @module
 */
import type { ConcurrencyPolicy, RatePolicy, WindowPolicy } from './policy.js';
import { STEPS_PER_MS } from './store.js';

/**
 * Emission interval of a rate policy, in ms: `1000 / perSecond` rounded up to a step of the
 * stores' time resolution (see `resolveTime` in store.ts), so never faster than the rate given.
 * On that grid every sum of times and intervals is exact, so a burst at one instant is admitted
 * whole and the instant a refusal announces is the one the policy admits at, without a tolerance.
 * @param policy - the rate policy
 */
export function emissionInterval(policy: RatePolicy): number {
  return Math.max(1, Math.ceil((1000 * STEPS_PER_MS) / policy.perSecond)) / STEPS_PER_MS;
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

/**
 * Admissions still possible in a window that holds `count`.
 * @param policy - the window
 * @param count - admissions inside the window
 */
export function windowRemaining(policy: WindowPolicy, count: number): number {
  return Math.max(0, policy.limit - count);
}

/**
 * Milliseconds until a window is empty again, so the full limit is available.
 * @param policy - the window
 * @param count - admissions inside the window
 * @param newestAt - the newest admission's time (ms), when `count` > 0
 * @param t - now (ms)
 */
export function windowResetAfter(
  policy: WindowPolicy,
  count: number,
  newestAt: number,
  t: number,
): number {
  return count === 0 ? 0 : Math.max(0, newestAt + policy.windowMs - t);
}

/**
 * Leases still free when `held` are held.
 * @param policy - the throttle
 * @param held - leases held
 */
export function throttleRemaining(policy: ConcurrencyPolicy, held: number): number {
  return Math.max(0, policy.max - held);
}
