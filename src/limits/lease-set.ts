/**
 * The concurrency policy: the leases held by requests in flight, each with an expiry so that a
 * request whose handler crashed cannot hold its lease for ever. The first lease lives in two
 * fields and only further ones in arrays, so a scope with at most one request in flight (the
 * common case) allocates nothing.
 * @module
 */
import type { ConcurrencyPolicy } from './policy.js';

/** State of one concurrency policy in one scope. */
export class LeaseSet {
  /** Id of the first lease; 0 when none. */
  firstId = 0;
  /** Expiry instant (ms) of the first lease. */
  firstExpiry = 0;
  /** Ids of further leases, parallel to `expiries`; null until needed. */
  ids: number[] | null = null;
  /** Expiry instants (ms) of further leases. */
  expiries: number[] | null = null;
  /** Refused until this instant (ms) because of an earlier refusal; 0 when not blocked. */
  blockedUntil = 0;
}

/** Leases held. */
export function leaseCount(set: LeaseSet): number {
  return (set.firstId === 0 ? 0 : 1) + (set.ids === null ? 0 : set.ids.length);
}

/** Drop the leases that have expired at `t`. */
export function pruneLeases(set: LeaseSet, t: number): void {
  const { ids, expiries } = set;
  if (ids !== null && expiries !== null) {
    for (let i = ids.length - 1; i >= 0; i--) {
      if ((expiries[i] as number) <= t) removeAt(ids, expiries, i);
    }
  }
  if (set.firstId !== 0 && set.firstExpiry <= t) leaseRelease(set, set.firstId);
}

/**
 * The earliest instant `>= t` at which one more request may start (call after
 * {@link pruneLeases}): now when a lease is free, otherwise the policy's announced backoff.
 */
export function leaseEarliest(set: LeaseSet, policy: ConcurrencyPolicy, t: number): number {
  return leaseCount(set) < policy.max ? t : t + policy.retryAfterMs;
}

/** Take a lease. */
export function leaseAcquire(
  set: LeaseSet,
  policy: ConcurrencyPolicy,
  t: number,
  id: number,
): void {
  const expiry = t + policy.leaseTtlMs;
  if (set.firstId === 0) {
    set.firstId = id;
    set.firstExpiry = expiry;
    return;
  }
  set.ids ??= [];
  set.expiries ??= [];
  set.ids.push(id);
  set.expiries.push(expiry);
}

/** Give a lease back; false when it was not held (already released, or expired). */
export function leaseRelease(set: LeaseSet, id: number): boolean {
  const { ids, expiries } = set;
  if (set.firstId === id) {
    // Promote the last further lease into the first slot, or empty it.
    if (ids !== null && expiries !== null && ids.length > 0) {
      set.firstId = ids.pop() as number;
      set.firstExpiry = expiries.pop() as number;
    } else {
      set.firstId = 0;
      set.firstExpiry = 0;
    }
    return true;
  }
  if (ids === null || expiries === null) return false;
  const index = ids.indexOf(id);
  if (index === -1) return false;
  removeAt(ids, expiries, index);
  return true;
}

// Order does not matter: move the last lease into the hole.
function removeAt(ids: number[], expiries: number[], index: number): void {
  const last = ids.length - 1;
  ids[index] = ids[last] as number;
  expiries[index] = expiries[last] as number;
  ids.pop();
  expiries.pop();
}

/** Leases still free (call after {@link pruneLeases}). */
export function leaseRemaining(set: LeaseSet, policy: ConcurrencyPolicy): number {
  return Math.max(0, policy.max - leaseCount(set));
}

/** The instant from which this state is the same as a fresh one. */
export function leaseQuietAt(set: LeaseSet): number {
  let quiet = Math.max(set.blockedUntil, set.firstId === 0 ? 0 : set.firstExpiry);
  if (set.expiries !== null) for (const expiry of set.expiries) if (expiry > quiet) quiet = expiry;
  return quiet;
}
