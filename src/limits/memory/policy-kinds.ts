/**
 * The memory store's operations on a policy's state, by kind. Slot 0 of every state is its block
 * time.
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
 * The earliest time at `t` that `cost` admissions at once pass, blocks aside (a throttle takes one
 * lease whatever the cost). A `lazy` decision leaves a window's expired admissions until they
 * matter (window may be full, ring full, or a status read).
 */
export function earliestFor(
  policy: Policy,
  m: Float64Array,
  s: number,
  t: number,
  lazy: boolean,
  cost: number,
): number {
  switch (policy.kind) {
    case 'window':
      if (lazy && logHasRoom(m, s, policy, cost)) return t;
      pruneLog(m, s, policy, t);
      return logEarliest(m, s, policy, t, cost);
    case 'rate':
      return gcraEarliest(m, s, policy, t, cost);
    case 'concurrency':
      pruneLeases(m, s, t, policy);
      return leaseEarliest(m, s, policy, t);
  }
}

/**
 * Record an admission and push the quiet time later if needed (written, not returned: a returned
 * double is boxed). A throttle leaves the quiet time alone: the sweep reads leases themselves.
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
 * Write remaining and reset-after at `values[2k]`, `values[2k+1]`. Just `admitted`, a window's
 * newest is `t`, so the ring need not be read.
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

/**
 * Record `cost` admissions at once: each window and rate policy counts them all, a throttle takes
 * one lease. The same state as `cost` admissions one after the other at `t`.
 */
export function admitCost(
  policy: Policy,
  arena: Arena,
  s: number,
  quiet: number,
  t: number,
  id: number,
  cost: number,
): void {
  const times = policy.kind === 'concurrency' ? 1 : cost;
  for (let i = 0; i < times; i++) admitOne(policy, arena, s, quiet, t, id);
}

export function freeState(policy: Policy, arena: Arena, s: number): void {
  if (policy.kind === 'window') freeLog(arena, s);
  else if (policy.kind === 'concurrency') freeLeases(arena, s);
}

/** Move the state's own blocks (its record block copied already) to `top`; answers the new top. */
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
