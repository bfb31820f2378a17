/**
 * The RateLimit header fields of the IETF draft "RateLimit header fields for HTTP"
 * (draft-ietf-httpapi-ratelimit-headers-10): `RateLimit-Policy` names each policy with its quota
 * and window, `RateLimit` says what remains of each and when it resets. Both are Structured Field
 * lists (RFC 9651) of string items with parameters.
 * @module
 */
import { isArray } from '../internal/describe.js';
import { readSafely } from '../internal/read-once.js';
import type { Policy } from '../limits/policy.js';
import type { PolicyStatus } from '../limits/store.js';

/** The two fields, ready to set. */
export interface RateLimitFields {
  /** `RateLimit-Policy`: `"name";q=<quota>;w=<window seconds>` per policy. */
  readonly 'ratelimit-policy': string;
  /** `RateLimit`: `"name";r=<remaining>;t=<seconds to reset>` per policy. */
  readonly ratelimit: string;
}

/**
 * The RateLimit fields of a decision's statuses.
 *
 * - window: `q` is the limit, `w` the window in seconds (rounded up).
 * - rate: `q` is the burst, `w` the seconds in which an empty bucket refills (`burst / perSecond`).
 * - concurrency: `q` is the maximum in flight, `qu="concurrent-requests"`, no window.
 *
 * Every number is a Structured Field integer: one above 999,999,999,999,999 (15 digits) is
 * written as that.
 *
 * On a refusal (`retryAfterSeconds` given) no `t` is later than Retry-After, and a policy with
 * nothing left (`r=0`, the refusing one always) has `t` equal to Retry-After: a client that obeys
 * either field comes back at the same instant, when the request is admitted.
 *
 * Never throws: statuses that are not a list give no items, and a status that cannot be read as
 * one (no policy of a known kind with a name, or a getter or Proxy that throws) is left out.
 * @param statuses - every policy that applied, with what remains of it
 * @param refusal - for a 429: the announced Retry-After and the policy that refused
 */
export function rateLimitFields(
  statuses: readonly PolicyStatus[],
  refusal?: { readonly retryAfterSeconds: number; readonly policy: Policy | undefined },
): RateLimitFields {
  const copies = new Map<unknown, Policy>();
  const read = readStatuses(statuses, copies);
  if (refusal === undefined) return writeFields(read);
  const seconds = readSafely(refusal, 'retryAfterSeconds');
  return writeFields(read, {
    retryAfterSeconds: wholeAtLeast(Math.ceil(finite(seconds)), 1),
    policy: copies.get(readSafely(refusal, 'policy')),
  });
}

/**
 * The fields of statuses as the limiter makes them (the middleware's path): a status it cannot
 * write is the limiter's failure, and throws.
 * @param statuses - every policy that applied, with what remains of it
 * @param refusal - for a 429: the announced Retry-After and the policy that refused
 * @internal
 */
export function writeFields(
  statuses: readonly PolicyStatus[],
  refusal?: { readonly retryAfterSeconds: number; readonly policy: Policy | undefined },
): RateLimitFields {
  const policies: string[] = [];
  const states: string[] = [];
  for (const status of statuses) {
    const { policy } = status;
    const name = sfString(policy.name);
    policies.push(`${name};${quota(policy)}`);
    let remaining = wholeAtLeast(status.remaining, 0);
    let reset = wholeAtLeast(Math.ceil(finite(status.resetAfterMs) / 1000), 0);
    if (refusal !== undefined) {
      if (policy === refusal.policy) remaining = 0;
      reset =
        remaining === 0 ? refusal.retryAfterSeconds : Math.min(reset, refusal.retryAfterSeconds);
    }
    states.push(`${name};r=${remaining};t=${reset}`);
  }
  return { 'ratelimit-policy': policies.join(', '), ratelimit: states.join(', ') };
}

/** The most statuses read from a decision made elsewhere: far more than any preset applies. */
const MAX_STATUSES = 1024;

/**
 * Statuses from anywhere (a hand-made decision, a store of one's own) as plain copies the fields
 * can be written from, each member read once and safely; one that cannot be written is left out,
 * and so is any after the first 1,024.
 * @param statuses - anything
 * @param copies - filled with each policy read and its copy, so that a caller can find the
 *   refusing policy's copy by the original
 * @internal
 */
export function readStatuses(statuses: unknown, copies: Map<unknown, Policy>): PolicyStatus[] {
  const read: PolicyStatus[] = [];
  if (!isArray(statuses)) return read;
  const length = readSafely(statuses, 'length');
  if (typeof length !== 'number') return read;
  // A decision has one status per policy that applied, a handful; a sparse array of length 2^32 - 1
  // must not make the walk take minutes.
  const end = Math.min(length, MAX_STATUSES);
  for (let i = 0; i < end; i++) {
    const status = readSafely(statuses, i);
    const policy = readSafely(status, 'policy');
    const copy = copies.get(policy) ?? readPolicy(policy);
    if (copy === undefined) continue;
    copies.set(policy, copy);
    read.push({
      policy: copy,
      remaining: finite(readSafely(status, 'remaining')),
      resetAfterMs: finite(readSafely(status, 'resetAfterMs')),
    });
  }
  return read;
}

/**
 * A plain copy of a policy with what the fields and the 429 write of it (kind, name, quota), or
 * `undefined` when it has no known kind or no name.
 * @param policy - anything
 * @internal
 */
export function readPolicy(policy: unknown): Policy | undefined {
  const kind = readSafely(policy, 'kind');
  const name = readSafely(policy, 'name');
  if (typeof name !== 'string') return undefined;
  const number = (key: string): number => finite(readSafely(policy, key));
  switch (kind) {
    case 'window':
      return { kind, name, limit: number('limit'), windowMs: number('windowMs') };
    case 'rate':
      return { kind, name, perSecond: number('perSecond'), burst: number('burst') };
    case 'concurrency':
      return {
        kind,
        name,
        max: number('max'),
        leaseTtlMs: number('leaseTtlMs'),
        retryAfterMs: number('retryAfterMs'),
      };
    default:
      return undefined;
  }
}

// Every number is an sf-integer: a limit of 2^53 - 1 or a rate of 1e-300 per second would
// otherwise write 16 digits or `1e+300`, which no Structured Field parser reads.
function quota(policy: Policy): string {
  switch (policy.kind) {
    case 'window':
      return `q=${wholeAtLeast(policy.limit, 1)};w=${wholeAtLeast(Math.ceil(policy.windowMs / 1000), 1)}`;
    case 'rate':
      return `q=${wholeAtLeast(policy.burst, 1)};w=${wholeAtLeast(Math.ceil(policy.burst / policy.perSecond), 1)}`;
    case 'concurrency':
      return `q=${wholeAtLeast(policy.max, 1)};qu="concurrent-requests"`;
  }
}

// An sf-string (RFC 9651 section 3.3.3): printable ASCII, with `"` and `\` escaped. Policy names are
// configuration and may hold other characters; those become `?` rather than break the field.
function sfString(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else out += code >= 0x20 && code <= 0x7e ? char : '?';
  }
  return `${out}"`;
}

// Anything but a finite number (NaN, a BigInt, a read that threw) counts as 0.
function finite(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

// sf-integers have at most 15 digits: larger values are written as the largest one.
function wholeAtLeast(value: unknown, min: number): number {
  return Math.min(Math.max(Math.floor(finite(value)), min), 999_999_999_999_999);
}
