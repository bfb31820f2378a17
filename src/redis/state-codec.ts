/**
 * The layout of one scope's state in Redis.
 *
 * One string value per scope (a client and account, or one of their resources) holds the state of
 * every policy of the scope, packed with Redis's `struct` library so that a decision reads it with
 * one `GET` and writes it with one `SET`. Every fixed-size field comes first, so that one
 * `struct.unpack` reads them all and one `struct.pack` writes them all:
 *
 * - the signature ({@link signature}): the number of sections, one per policy position (`<I4`),
 *   and each section's kind (one byte: 1 window, 2 rate, 3 concurrency). It is the same for every
 *   value of one policy list, so the script writes it as a constant and checks it with one string
 *   comparison; nothing else in the value names the kinds;
 * - the latest decision time (`<d`, ms; time never goes backwards for the scope);
 * - then per section two fields (`<dI4` or `<dd`): the instant the policy is blocked until (0 when
 *   not), then a window's or a throttle's number of entries, or the rate policy's theoretical
 *   arrival time. Only the fields a kind uses are kept: a decision packs and unpacks each of them;
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
import type { Policy } from '../limits/policy.js';

/** Written into every key's policy-list part; changes whenever the packed layout changes. */
export const LAYOUT_VERSION = '4';

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

/** Each kind's code in the signature. */
const KIND_CODE = { window: 1, rate: 2, concurrency: 3 } as const;

/** Each kind's two fixed fields: blocked until, then the entry count or the arrival time. */
const SECTION_FORMAT = { window: 'dI4', rate: 'dd', concurrency: 'dI4' } as const;

/** The bytes of each kind's two fixed fields. */
const SECTION_SIZE = { window: 12, rate: 16, concurrency: 12 } as const;

/**
 * The signature every value of a policy list starts with: the number of sections (a little-endian
 * 32-bit whole number) and each section's kind code (one byte).
 * @param policies - the scope's policy list
 * @returns its bytes
 */
export function signature(policies: readonly Policy[]): Buffer {
  const bytes = Buffer.alloc(4 + policies.length);
  bytes.writeUInt32LE(policies.length, 0);
  for (const [i, p] of policies.entries()) bytes[4 + i] = KIND_CODE[p.kind];
  return bytes;
}

/**
 * The struct format of the fixed fields after the signature: the latest decision time, then each
 * section's two.
 * @param policies - the scope's policy list
 * @returns the format, for `struct.unpack` and `struct.pack`
 */
export function fixedFormat(policies: readonly Policy[]): string {
  return `<d${policies.map((p) => SECTION_FORMAT[p.kind]).join('')}`;
}

/**
 * The bytes of the signature and the fixed fields.
 * @param policies - the scope's policy list
 * @returns where the entries start, less one
 */
export function fixedSize(policies: readonly Policy[]): number {
  return 4 + policies.length + 8 + policies.reduce((sum, p) => sum + SECTION_SIZE[p.kind], 0);
}
