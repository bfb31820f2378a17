/**
 * What the memory store does with a policy's state, by the policy's kind: the window's ring
 * (sliding-log.ts), the rate's theoretical arrival time (gcra.ts), the throttle's leases
 * (lease-set.ts). Slot 0 of every state is its block time.
 * @module
 */
import type { Policy } from '../policy.js';
import type { Arena } from './arena.js';
import {
  gcraAdmit,
  gcraEarliest,
  gcraFreshAt,
  gcraRemaining,
  gcraResetAfter,
  RATE_SLOTS,
} from './gcra.js';
import {
  CONCURRENCY_SLOTS,
  freeLeases,
  leaseAcquire,
  leaseEarliest,
  leaseRemaining,
  moveLeases,
  pruneLeases,
} from './lease-set.js';
import {
  freeLog,
  logAdmit,
  logEarliest,
  logHasRoom,
  logRemaining,
  logResetAfter,
  moveLog,
  pruneLog,
  WINDOW_SLOTS,
} from './sliding-log.js';

/** Slots of the policy's state in a record block. */
export function slotsOf(policy: Policy): number {
  switch (policy.kind) {
    case 'window':
      return WINDOW_SLOTS;
    case 'rate':
      return RATE_SLOTS;
    case 'concurrency':
      return CONCURRENCY_SLOTS;
  }
}

/**
 * The policy's earliest admission time at `t`, blocks aside; prunes what has expired, except that
 * a `lazy` decision leaves a window's expired admissions alone while it has room without dropping
 * them (they are dropped once they matter: when the window may be full, its ring is full, or a
 * status is read).
 */
export function earliestFor(
  policy: Policy,
  m: Float64Array,
  s: number,
  t: number,
  lazy: boolean,
): number {
  switch (policy.kind) {
    case 'window':
      if (lazy && logHasRoom(m, s, policy)) return t;
      pruneLog(m, s, policy, t);
      return logEarliest(m, s, policy, t);
    case 'rate':
      return gcraEarliest(m, s, policy, t);
    case 'concurrency':
      pruneLeases(m, s, t);
      return leaseEarliest(m, s, policy, t);
  }
}

/**
 * Record an admission at `t` in the policy's slots at `s`, and move the record's quiet time (slot
 * `quiet`) to the instant from which they are fresh again, if later. Written, not returned: a
 * double returned from a call is boxed. A throttle takes lease `id` and leaves the quiet time
 * alone: a lease is most often given back long before it expires, and the sweep reads the leases
 * themselves.
 */
export function admitOne(
  policy: Policy,
  arena: Arena,
  s: number,
  quiet: number,
  t: number,
  id: number,
): void {
  let until: number;
  switch (policy.kind) {
    case 'window':
      logAdmit(arena, s, policy, t);
      until = t + policy.windowMs;
      break;
    case 'rate':
      gcraAdmit(arena.mem, s, policy, t);
      until = gcraFreshAt(arena.mem, s);
      break;
    case 'concurrency':
      leaseAcquire(arena, s, policy, t, id);
      return;
  }
  const m = arena.mem;
  if (until > (m[quiet] as number)) m[quiet] = until;
}

/**
 * Write what remains of one policy and when its quota is back at `values[2k]` and `values[2k+1]`.
 * Just `admitted` at `t`, a window's newest admission is `t`: it is full again a window later,
 * without reading the ring.
 */
export function writeStatus(
  values: number[],
  k: number,
  policy: Policy,
  m: Float64Array,
  s: number,
  t: number,
  admitted: boolean,
): void {
  switch (policy.kind) {
    case 'window':
      values[2 * k] = logRemaining(m, s, policy);
      values[2 * k + 1] = admitted ? policy.windowMs : logResetAfter(m, s, policy, t);
      break;
    case 'rate':
      values[2 * k] = gcraRemaining(m, s, policy, t);
      values[2 * k + 1] = gcraResetAfter(m, s, t);
      break;
    case 'concurrency':
      values[2 * k] = leaseRemaining(m, s, policy);
      values[2 * k + 1] = 0;
      break;
  }
}

/** Give back the blocks the policy's state at `s` holds beside its record: a ring, or leases. */
export function freeState(policy: Policy, arena: Arena, s: number): void {
  if (policy.kind === 'window') freeLog(arena, s);
  else if (policy.kind === 'concurrency') freeLeases(arena, s);
}

/**
 * Move the blocks of the policy's state at `s` of `to` (its record block copied there already)
 * from `from` into `to` at `top`; answers the new top.
 */
export function moveState(
  policy: Policy,
  from: Float64Array,
  to: Float64Array,
  s: number,
  top: number,
): number {
  if (policy.kind === 'window') return moveLog(from, to, s, top);
  if (policy.kind === 'concurrency') return moveLeases(from, to, s, top);
  return top;
}
