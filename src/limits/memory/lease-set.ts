/**
 * The concurrency policy's leases, each with an expiry so a crashed handler cannot hold one for
 * ever; further leases get a block only when two requests of a scope are in flight at once.
 * @module
 */
import { reportLeaseExpiry } from '../channels.js';
import type { ConcurrencyPolicy } from '../policy.js';
import { throttleRemaining } from '../quota.js';
import { type Arena, copySlots } from './arena.js';

const FIRST_ID = 1;
const FIRST_EXPIRY = 2;
const MORE = 3; // offset of the block of further leases: (id, expiry) pairs
const MORE_CAP = 4; // leases the block holds, 0 before the first
const MORE_COUNT = 5; // further leases held

export const CONCURRENCY_SLOTS = 6;

export function leaseCount(m: Float64Array, s: number): number {
  return (m[s + FIRST_ID] === 0 ? 0 : 1) + (m[s + MORE_COUNT] as number);
}

/** Drop the leases expired at `t`, each reported as a lease expiry of `policy`. */
export function pruneLeases(
  m: Float64Array,
  s: number,
  t: number,
  policy: ConcurrencyPolicy,
): void {
  const more = m[s + MORE] as number;
  for (let i = (m[s + MORE_COUNT] as number) - 1; i >= 0; i--) {
    const expiry = m[more + 2 * i + 1] as number;
    if (expiry <= t) {
      removeAt(m, s, i);
      reportLeaseExpiry(policy.name, expiry, t);
    }
  }
  const expiry = m[s + FIRST_EXPIRY] as number;
  if (m[s + FIRST_ID] !== 0 && expiry <= t) {
    leaseRelease(m, s, m[s + FIRST_ID] as number);
    reportLeaseExpiry(policy.name, expiry, t);
  }
}

/** Now when a lease is free, else the policy's backoff (call after {@link pruneLeases}). */
export function leaseEarliest(
  m: Float64Array,
  s: number,
  policy: ConcurrencyPolicy,
  t: number,
): number {
  return leaseCount(m, s) < policy.max ? t : t + policy.retryAfterMs;
}

/** Take lease `id` at `t`: it expires after the policy's lease TTL unless given back first. */
export function leaseAcquire(
  arena: Arena,
  s: number,
  policy: ConcurrencyPolicy,
  t: number,
  id: number,
): void {
  const expiry = t + policy.leaseTtlMs;
  let m = arena.mem;
  if (m[s + FIRST_ID] === 0) {
    m[s + FIRST_ID] = id;
    m[s + FIRST_EXPIRY] = expiry;
    return;
  }
  const count = m[s + MORE_COUNT] as number;
  const cap = m[s + MORE_CAP] as number;
  if (count === cap) {
    const grown = cap === 0 ? 2 : cap * 2;
    const to = arena.allocDirty(2 * grown);
    m = arena.mem;
    const from = m[s + MORE] as number;
    m.copyWithin(to, from, from + 2 * count);
    if (cap !== 0) arena.free(from, 2 * cap);
    m[s + MORE] = to;
    m[s + MORE_CAP] = grown;
  }
  const at = (m[s + MORE] as number) + 2 * count;
  m[at] = id;
  m[at + 1] = expiry;
  m[s + MORE_COUNT] = count + 1;
}

/** Give lease `id` back; false when it was not held (already released, or expired). */
export function leaseRelease(m: Float64Array, s: number, id: number): boolean {
  const count = m[s + MORE_COUNT] as number;
  const more = m[s + MORE] as number;
  if (m[s + FIRST_ID] === id) {
    if (count > 0) {
      m[s + FIRST_ID] = m[more + 2 * count - 2] as number;
      m[s + FIRST_EXPIRY] = m[more + 2 * count - 1] as number;
      m[s + MORE_COUNT] = count - 1;
    } else {
      m[s + FIRST_ID] = 0;
      m[s + FIRST_EXPIRY] = 0;
    }
    return true;
  }
  for (let i = 0; i < count; i++) {
    if (m[more + 2 * i] === id) {
      removeAt(m, s, i);
      return true;
    }
  }
  return false;
}

// Order does not matter: move the last further lease into the hole.
function removeAt(m: Float64Array, s: number, index: number): void {
  const more = m[s + MORE] as number;
  const last = (m[s + MORE_COUNT] as number) - 1;
  m[more + 2 * index] = m[more + 2 * last] as number;
  m[more + 2 * index + 1] = m[more + 2 * last + 1] as number;
  m[s + MORE_COUNT] = last;
}

/** Call after {@link pruneLeases}. */
export function leaseRemaining(m: Float64Array, s: number, policy: ConcurrencyPolicy): number {
  return throttleRemaining(policy, leaseCount(m, s));
}

export function freeLeases(arena: Arena, s: number): void {
  const cap = arena.mem[s + MORE_CAP] as number;
  if (cap !== 0) arena.free(arena.mem[s + MORE] as number, 2 * cap);
}

/** Move the further leases of the state at `s` (already copied into `to`) to `top`; the new top. */
export function moveLeases(from: Float64Array, to: Float64Array, s: number, top: number): number {
  const cap = to[s + MORE_CAP] as number;
  if (cap === 0) return top;
  copySlots(from, to[s + MORE] as number, 2 * cap, to, top);
  to[s + MORE] = top;
  return top + 2 * cap;
}
