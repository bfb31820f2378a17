/**
 * The layout of one scope's state in Redis.
 *
 * One string value per scope (a client and account, or one of their resources) holds the state of
 * every policy of the scope, packed with Redis's `struct` library so that a decision reads it with
 * one `GET` and writes it with one `SET`. Every fixed-size field comes first, so that one
 * `struct.unpack` reads them all and one `struct.pack` writes them all:
 *
 * - header `<dI4`: the latest decision time (ms; time never goes backwards for the scope) and the
 *   number of sections, one per policy position;
 * - then per section `<BddI4`: the kind (1 window, 2 rate, 3 concurrency), the instant the policy
 *   is blocked until (0 when not), the rate policy's theoretical arrival time or the throttle's
 *   latest lease expiry (0 otherwise), and a window's number of entries or how many whole
 *   ms after the latest decision the throttle's next sweep of expired leases is due (at most
 *   {@link SWEEP_NEVER}; 0 for a rate policy);
 * - then the entries, section after section: a window's admission times (`<d`, oldest first, only
 *   those still inside the window when written). A rate policy and a throttle have none.
 *
 * A throttle's leases live in a sorted set of their own (see decide-script.ts), so that giving one
 * back is one `ZREM`.
 *
 * {@link LAYOUT_VERSION} is part of every key, so that a value in an earlier layout is never read
 * as this one: it is left to expire.
 * @module
 */

/** Written into every key's policy-list part; changes whenever the packed layout changes. */
export const LAYOUT_VERSION = '2';

/**
 * The most ms a throttle's next sweep may lie after a decision: the largest 32-bit count. A set
 * with no lease is due for a sweep this long after, or when its next lease expires. A value written
 * by the layout's first form, with 0 there, is due at once.
 */
export const SWEEP_NEVER = 4_294_967_295;

/** Bytes per entry, by kind: a window's admission time; a rate policy and a throttle have none. */
export const ENTRY_SIZE = { window: 8, rate: 0, concurrency: 0 } as const;

/**
 * The struct format of the header and the fixed fields of `count` sections.
 * @param count - the number of sections
 * @returns the format, for `struct.unpack` and `struct.pack`
 */
export function fixedFormat(count: number): string {
  return `<dI4${'BddI4'.repeat(count)}`;
}

/**
 * The bytes of the header and the fixed fields of `count` sections.
 * @param count - the number of sections
 * @returns where the entries start, less one
 */
export function fixedSize(count: number): number {
  return 12 + 21 * count;
}
