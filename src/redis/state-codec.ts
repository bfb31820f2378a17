/**
 * The layout of one scope's state in Redis (see docs/redis-store.md). {@link LAYOUT_VERSION} is in
 * every key, so a value in an earlier layout is never read as this one: it is left to expire.
 * @module
 */
import type { Policy } from '../limits/policy.js';

/** Written into every key's policy-list part; changes whenever the packed layout changes. */
export const LAYOUT_VERSION = '5';

/** Bytes per entry, by kind: a window's admission time; a throttle's lease expiry and id. */
export const ENTRY_SIZE = { window: 8, rate: 0, concurrency: 16 } as const;

/** The struct format of one lease of a throttle: its expiry (ms) and its id. */
export const LEASE_ENTRY = '<dd';

/** The struct format of a given-back lease: the throttle's position (from 1), expiry and id. */
export const RELEASE_RECORD = '<ddd';

/** The bytes of one {@link RELEASE_RECORD}. */
export const RELEASE_RECORD_SIZE = 24;

/** Each kind's code in the signature. */
const KIND_CODE = { window: 1, rate: 2, concurrency: 3 } as const;

/**
 * Each kind's fixed fields: blocked until, then the entry count or the arrival time; a rate's
 * third is the emission interval (ms) it last decided with, so that its backlog is carried over
 * when the scope's limits are overridden, or back.
 */
const SECTION_FORMAT = { window: 'dI4', rate: 'ddd', concurrency: 'dI4' } as const;

/** How many fixed fields each kind has. */
export const SECTION_FIELDS = { window: 2, rate: 3, concurrency: 2 } as const;

/** The bytes of each kind's fixed fields. */
const SECTION_SIZE = { window: 12, rate: 24, concurrency: 12 } as const;

/** The signature every value starts with: the section count (u32 LE), each section's kind code. */
export function signature(policies: readonly Policy[]): Buffer {
  const bytes = Buffer.alloc(4 + policies.length);
  bytes.writeUInt32LE(policies.length, 0);
  for (const [i, p] of policies.entries()) bytes[4 + i] = KIND_CODE[p.kind];
  return bytes;
}

/** The struct format of the fixed fields: the latest decision time, then each section's. */
export function fixedFormat(policies: readonly Policy[]): string {
  return `<d${policies.map((p) => SECTION_FORMAT[p.kind]).join('')}`;
}

/** The bytes of the signature and the fixed fields: where the entries start, less one. */
export function fixedSize(policies: readonly Policy[]): number {
  return 4 + policies.length + 8 + policies.reduce((sum, p) => sum + SECTION_SIZE[p.kind], 0);
}
