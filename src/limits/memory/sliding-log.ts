/**
 * The exact sliding window: a ring of admission times, oldest first, in a block of its own
 * (docs/memory-store.md gives the algorithm and its bound).
 * @module
 */
import type { WindowPolicy } from '../policy.js';
import { windowRemaining, windowResetAfter } from '../quota.js';
import { type Arena, copySlots } from './arena.js';

// Slot offsets from the policy's first slot. BLOCKED (0) is common to every kind of policy.
const LOG = 1; // offset of the ring of times
const CAP = 2; // slots in the ring (a power of two), 0 before the first admission
const START = 3; // index in the ring of the oldest time
const COUNT = 4; // times in the ring

export const WINDOW_SLOTS = 5;

export function pruneLog(m: Float64Array, s: number, policy: WindowPolicy, t: number): void {
  let count = m[s + COUNT] as number;
  if (count === 0) return;
  const log = m[s + LOG] as number;
  const mask = (m[s + CAP] as number) - 1;
  const { windowMs } = policy;
  let start = m[s + START] as number;
  // An admission at `a` has left at `a + windowMs`, the instant logEarliest announces: the same
  // double (`t - windowMs` may round the other way for fractional times).
  while (count > 0 && (m[log + start] as number) + windowMs <= t) {
    start = (start + 1) & mask;
    count--;
  }
  m[s + START] = count === 0 ? 0 : start;
  m[s + COUNT] = count;
}

/**
 * When enough admissions have left the window for `cost` more (call after {@link pruneLog}): the
 * admission that keeps it too full, the oldest for a cost of 1.
 */
export function logEarliest(
  m: Float64Array,
  s: number,
  policy: WindowPolicy,
  t: number,
  cost: number,
): number {
  const excess = (m[s + COUNT] as number) - policy.limit + cost - 1;
  if (excess < 0) return t;
  const at = ((m[s + START] as number) + excess) & ((m[s + CAP] as number) - 1);
  return (m[(m[s + LOG] as number) + at] as number) + policy.windowMs;
}

/**
 * Room for `cost` more with the times held, expired ones included: room whatever {@link pruneLog}
 * would drop, so a decision without statuses need not read the oldest times.
 */
export function logHasRoom(
  m: Float64Array,
  s: number,
  policy: WindowPolicy,
  cost: number,
): boolean {
  return (m[s + COUNT] as number) + cost <= policy.limit;
}

/** A full ring first drops what has left the window, so kept expired times never make it grow. */
export function logAdmit(arena: Arena, s: number, policy: WindowPolicy, t: number): void {
  let m = arena.mem;
  let count = m[s + COUNT] as number;
  const cap = m[s + CAP] as number;
  if (count === cap && cap !== 0) {
    pruneLog(m, s, policy, t);
    count = m[s + COUNT] as number;
  }
  if (count === cap) {
    // Full: move the times, oldest first, to a ring twice the size (4 to start with).
    const grown = cap === 0 ? 4 : cap * 2;
    const to = arena.allocDirty(grown);
    m = arena.mem;
    const from = m[s + LOG] as number;
    const start = m[s + START] as number;
    // The ring is full (count === cap): its two runs, from `start` to the end and from 0.
    m.copyWithin(to, from + start, from + cap);
    m.copyWithin(to + cap - start, from, from + start);
    if (cap !== 0) arena.free(from, cap);
    m[s + LOG] = to;
    m[s + CAP] = grown;
    m[s + START] = 0;
    m[to + count] = t;
  } else {
    m[(m[s + LOG] as number) + (((m[s + START] as number) + count) & (cap - 1))] = t;
  }
  m[s + COUNT] = count + 1;
}

/** Call after {@link pruneLog}. */
export function logRemaining(m: Float64Array, s: number, policy: WindowPolicy): number {
  return windowRemaining(policy, m[s + COUNT] as number);
}

// The newest admission time; the log must not be empty.
function newest(m: Float64Array, s: number): number {
  const at =
    ((m[s + START] as number) + (m[s + COUNT] as number) - 1) & ((m[s + CAP] as number) - 1);
  return m[(m[s + LOG] as number) + at] as number;
}

export function logResetAfter(m: Float64Array, s: number, policy: WindowPolicy, t: number): number {
  const count = m[s + COUNT] as number;
  return count === 0 ? 0 : windowResetAfter(policy, count, newest(m, s), t);
}

export function freeLog(arena: Arena, s: number): void {
  const cap = arena.mem[s + CAP] as number;
  if (cap !== 0) arena.free(arena.mem[s + LOG] as number, cap);
}

/** Move the ring of the state at `s` (a block already copied into `to`) to `top`; answers the new top. */
export function moveLog(from: Float64Array, to: Float64Array, s: number, top: number): number {
  const cap = to[s + CAP] as number;
  if (cap === 0) return top;
  copySlots(from, to[s + LOG] as number, cap, to, top);
  to[s + LOG] = top;
  return top + cap;
}
