/**
 * The concurrency policy: the leases held by requests in flight, each with an expiry so that a
 * request whose handler crashed cannot hold its lease for ever.
 * @module
 */
import type { ConcurrencyPolicy } from './policy.js';

/** State of one concurrency policy in one scope. */
export class LeaseSet {
  /** Lease ids, parallel to `expiries`. */
  ids: number[] = [];
  /** Expiry instant (ms) of each lease. */
  expiries: number[] = [];
  /** Refused until this instant (ms) because of an earlier refusal; 0 when not blocked. */
  blockedUntil = 0;
}

/** Drop the leases that have expired at `t`. */
export function pruneLeases(set: LeaseSet, t: number): void {
  const { ids, expiries } = set;
  for (let i = expiries.length - 1; i >= 0; i--) {
    if ((expiries[i] as number) <= t) {
      ids.splice(i, 1);
      expiries.splice(i, 1);
    }
  }
}

/**
 * The earliest instant `>= t` at which one more request may start (call after
 * {@link pruneLeases}): now when a lease is free, otherwise the policy's announced backoff.
 */
export function leaseEarliest(set: LeaseSet, policy: ConcurrencyPolicy, t: number): number {
  return set.ids.length < policy.max ? t : t + policy.retryAfterMs;
}

/** Take a lease. */
export function leaseAcquire(
  set: LeaseSet,
  policy: ConcurrencyPolicy,
  t: number,
  id: number,
): void {
  set.ids.push(id);
  set.expiries.push(t + policy.leaseTtlMs);
}

/** Give a lease back; false when it was not held (already released, or expired). */
export function leaseRelease(set: LeaseSet, id: number): boolean {
  const index = set.ids.indexOf(id);
  if (index === -1) return false;
  set.ids.splice(index, 1);
  set.expiries.splice(index, 1);
  return true;
}

/** Leases still free (call after {@link pruneLeases}). */
export function leaseRemaining(set: LeaseSet, policy: ConcurrencyPolicy): number {
  return Math.max(0, policy.max - set.ids.length);
}

/** The instant from which this state is the same as a fresh one. */
export function leaseQuietAt(set: LeaseSet): number {
  let quiet = set.blockedUntil;
  for (const expiry of set.expiries) if (expiry > quiet) quiet = expiry;
  return quiet;
}
