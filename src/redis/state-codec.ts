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
 *   is blocked until (0 when not), the rate policy's theoretical arrival time (0 otherwise), and
 *   the number of entries of a window or a throttle (0 for a rate policy);
 * - then the entries, section after section: a window's admission times (`<d`, oldest first, only
 *   those still inside the window when written); a throttle's leases (`<dd`: expiry and lease id,
 *   earliest expiry first, only those not expired when written). A rate policy has none;
 * - then, after the last section's entries, the leases given back since the value was written:
 *   one record each ({@link RELEASE_RECORD}: the throttle's position, the lease's expiry and id),
 *   appended by `APPEND`, which leaves the value's expiry alone. The next decision on the scope
 *   removes each from its throttle and writes the value back without them.
 *
 * So a throttle needs no key of its own: taking a lease is part of the one `SET` a decision makes,
 * and giving one back is one `APPEND`.
 *
 * {@link LAYOUT_VERSION} is part of every key, so that a value in an earlier layout is never read
 * as this one: it is left to expire.
 * @module
 */

/** Written into every key's policy-list part; changes whenever the packed layout changes. */
export const LAYOUT_VERSION = '3';

/**
 * Bytes per entry, by kind: a window's admission time; a throttle's lease (expiry and id); a rate
 * policy has none.
 */
export const ENTRY_SIZE = { window: 8, rate: 0, concurrency: 16 } as const;

/** The struct format of one lease of a throttle: its expiry (ms) and its id. */
export const LEASE_ENTRY = '<dd';

/**
 * The struct format of one given-back lease appended to a scope's value: the throttle's position
 * among the scope's policies (from 1), the lease's expiry (ms) and its id.
 */
export const RELEASE_RECORD = '<ddd';

/** The bytes of one {@link RELEASE_RECORD}. */
export const RELEASE_RECORD_SIZE = 24;

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
