/**
 * The exact sliding window: the admission times inside the window, oldest first.
 *
 * A request at `t` is admitted when fewer than `limit` admissions lie in `(t - windowMs, t]`, so no
 * half-open interval `[s, s + windowMs)` ever holds more than `limit` (DESIGN.md invariant 1), and
 * nothing is refused that an exact log would admit. Memory is one number per admission still
 * inside the window, never more than `limit`; an idle window holds nothing.
 * @module
 */
import type { WindowPolicy } from './policy.js';

/** State of one window policy in one scope. */
export class SlidingLog {
  /**
   * Admission times; `times[head..size)` are inside the window, ascending. Slots past `size` are
   * spare room: the array is reused, never shrunk, so a steady key allocates nothing.
   */
  times: number[] = [];
  /** Index of the oldest admission still inside the window. */
  head = 0;
  /** One past the newest admission. */
  size = 0;
  /** Refused until this instant (ms) because of an earlier refusal; 0 when not blocked. */
  blockedUntil = 0;
}

/** Drop the admissions that have left the window at `t`; compact once half the array is dead. */
export function pruneLog(log: SlidingLog, policy: WindowPolicy, t: number): void {
  const { times, size } = log;
  const cutoff = t - policy.windowMs;
  let head = log.head;
  while (head < size && (times[head] as number) <= cutoff) head++;
  if (head === size) {
    log.size = 0;
    head = 0;
  } else if (head > 16 && head * 2 > size) {
    times.copyWithin(0, head, size);
    log.size = size - head;
    head = 0;
  }
  log.head = head;
}

/** Admissions inside the window (call after {@link pruneLog}). */
export function logCount(log: SlidingLog): number {
  return log.size - log.head;
}

/**
 * The earliest instant `>= t` at which one more request is admitted, if nothing else arrives
 * (call after {@link pruneLog}): when the oldest admission that keeps the window full leaves it.
 */
export function logEarliest(log: SlidingLog, policy: WindowPolicy, t: number): number {
  const excess = logCount(log) - policy.limit;
  if (excess < 0) return t;
  return (log.times[log.head + excess] as number) + policy.windowMs;
}

/** Record an admission at `t` (times never go backwards: the store keeps its time monotonic). */
export function logAdmit(log: SlidingLog, t: number): void {
  const { size } = log;
  let { times } = log;
  if (size === times.length) {
    // Grow by doubling from 4: a window that holds one or two admissions costs 32 bytes of slots,
    // where the engine's own growth would reserve 17.
    const grown = new Array<number>(size < 4 ? 4 : size * 2);
    for (let i = 0; i < size; i++) grown[i] = times[i] as number;
    log.times = times = grown;
  }
  times[size] = t;
  log.size = size + 1;
}

/** Admissions still possible now (call after {@link pruneLog}). */
export function logRemaining(log: SlidingLog, policy: WindowPolicy): number {
  return Math.max(0, policy.limit - logCount(log));
}

/** Milliseconds until the window is empty again, so the full limit is available. */
export function logResetAfter(log: SlidingLog, policy: WindowPolicy, t: number): number {
  if (logCount(log) === 0) return 0;
  return Math.max(0, (log.times[log.size - 1] as number) + policy.windowMs - t);
}

/** The instant from which this state is the same as a fresh one. */
export function logQuietAt(log: SlidingLog, policy: WindowPolicy): number {
  const newest = logCount(log) === 0 ? 0 : (log.times[log.size - 1] as number) + policy.windowMs;
  return Math.max(log.blockedUntil, newest);
}
