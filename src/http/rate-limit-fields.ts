/**
 * The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers-10, as
 * Structured Field lists (RFC 9651).
 * @module
 */
import { isArray } from '../internal/describe.js';
import { oneOf } from '../internal/options.js';
import { readSafely } from '../internal/read-once.js';
import type { Policy } from '../limits/policy.js';
import type { PolicyStatus } from '../limits/store.js';

/** The two fields, ready to set. */
export type RateLimitFields = {
  /** `RateLimit-Policy`: `"name";q=<quota>;w=<window seconds>` per policy named. */
  readonly 'ratelimit-policy': string;
  /** `RateLimit`: `"name";r=<remaining>;t=<seconds to reset>` per policy named. */
  readonly ratelimit: string;
};

/**
 * Which policies the fields name: `'nearest'`, the one closest to being exhausted (the refusing
 * one on a 429), as the draft allows where one policy is the closest (docs/http.md says which);
 * `'all'`, every policy that applied, in the limiter's order.
 */
export type RateLimitFieldPolicies = 'nearest' | 'all';

/** The `rateLimitHeaders` option: off, on (the nearest policy), or every policy. @internal */
export const fieldsRule = oneOf(false, true, 'all');

/** What the fields name under a `rateLimitHeaders` value, or `false` for none. @internal */
export function fieldPolicies(option: boolean | 'all'): RateLimitFieldPolicies | false {
  if (option === 'all') return 'all';
  return option ? 'nearest' : false;
}

/**
 * The RateLimit fields of a decision's statuses (what `q`, `w` and `t` hold, and which policy
 * `'nearest'` names: docs/http.md). On a refusal, `t` never passes Retry-After and equals it where
 * `r=0`. Never throws: a status that cannot be read is left out.
 * @param statuses - every policy that applied, with what remains of it
 * @param refusal - for a 429: the announced Retry-After and the policy that refused
 * @param policies - which policies the fields name @defaultValue `'nearest'`
 */
export function rateLimitFields(
  statuses: readonly PolicyStatus[],
  refusal?: { readonly retryAfterSeconds: number; readonly policy: Policy | undefined },
  policies: RateLimitFieldPolicies = 'nearest',
): RateLimitFields {
  const copies = new Map<unknown, Policy>();
  const read = readStatuses(statuses, copies);
  const which = policies === 'all' ? 'all' : 'nearest';
  if (refusal === undefined) return writeFields(read, undefined, which);
  const seconds = readSafely(refusal, 'retryAfterSeconds');
  const refused = {
    retryAfterSeconds: wholeAtLeast(Math.ceil(finite(seconds)), 1),
    policy: copies.get(readSafely(refusal, 'policy')),
  };
  return writeFields(read, refused, which);
}

/** The middleware's path: an unwritable status is the limiter's failure, and throws. @internal */
export function writeFields(
  statuses: readonly PolicyStatus[],
  refusal: { readonly retryAfterSeconds: number; readonly policy: Policy | undefined } | undefined,
  which: RateLimitFieldPolicies,
): RateLimitFields {
  // Indexed twice below; any other iterable is walked once, as a for-of would.
  const list = Array.isArray(statuses) ? statuses : [...statuses];
  const n = list.length;
  const made: PolicyText[] = [];
  let refusing = -1;
  for (let i = 0; i < n; i++) {
    const status = list[i] as PolicyStatus;
    const { policy } = status;
    made.push(policyText(policy));
    let remaining = wholeAtLeast(status.remaining, 0);
    let reset = wholeAtLeast(Math.ceil(finite(status.resetAfterMs) / 1000), 0);
    if (refusal !== undefined) {
      if (policy === refusal.policy) {
        remaining = 0;
        if (refusing === -1) refusing = i;
      }
      reset =
        remaining === 0 ? refusal.retryAfterSeconds : Math.min(reset, refusal.retryAfterSeconds);
    }
    LEFT[i] = remaining;
    RESETS[i] = reset;
  }
  if (which === 'nearest' && n > 0) {
    const k = refusing !== -1 ? refusing : nearest(made, n);
    return named(made[k] as PolicyText, LEFT[k] as number, RESETS[k] as number);
  }
  return { 'ratelimit-policy': policyList(made), ratelimit: statesOf(made, n) };
}

/**
 * The fields of a store's compact statuses: `policies[k]` with `values[2k]` remaining and
 * `values[2k + 1]` ms to reset, as {@link writeFields} writes the statuses made of them. The text
 * of a frozen list of frozen policies is kept with the list, so that an admission looks its
 * policies up once rather than each policy and then the list. @internal
 */
export function writeCompactFields(
  policies: readonly Policy[],
  values: readonly number[],
  which: RateLimitFieldPolicies,
): RateLimitFields {
  const n = policies.length;
  let list = listTexts.get(policies);
  if (list === undefined) {
    const made: PolicyText[] = [];
    let kept = Object.isFrozen(policies);
    for (let i = 0; i < n; i++) {
      const text = policyText(policies[i] as Policy);
      made.push(text);
      kept &&= text.kept;
    }
    list = { value: policyList(made), made };
    if (kept) listTexts.set(policies, list);
  }
  const { made } = list;
  for (let i = 0; i < n; i++) {
    LEFT[i] = wholeAtLeast(values[2 * i], 0);
    RESETS[i] = wholeAtLeast(Math.ceil(finite(values[2 * i + 1]) / 1000), 0);
  }
  if (which === 'nearest' && n > 0) {
    const k = nearest(made, n);
    return named(made[k] as PolicyText, LEFT[k] as number, RESETS[k] as number);
  }
  return { 'ratelimit-policy': list.value, ratelimit: statesOf(made, n) };
}

// What remains of each policy and its seconds to reset, as written: filled by the two writers
// above for the call at hand (they never call out while it is in use), then read.
const LEFT: number[] = [];
const RESETS: number[] = [];

/** The most fields kept per policy, one per pair of numbers it was named with. */
const MAX_NAMED = 4_096;

/**
 * The fields that name one policy alone, with `left` and `reset`. What remains and the seconds to
 * reset are small whole numbers that come again and again, so a frozen policy keeps the fields of
 * each pair (at most {@link MAX_NAMED}), frozen, and a response written with a pair seen before
 * builds no string and no object.
 */
function named(text: PolicyText, left: number, reset: number): RateLimitFields {
  const key = left <= 0xfffff && reset <= 0xfff ? left * 0x1000 + reset : -1;
  let fields = key === -1 ? undefined : text.named.get(key);
  if (fields !== undefined) return fields;
  fields = Object.freeze({
    'ratelimit-policy': text.item,
    ratelimit: `${text.state}${left};t=${reset}`,
  });
  if (text.kept && key !== -1 && text.named.size < MAX_NAMED) text.named.set(key, fields);
  return fields;
}

/** The `RateLimit` items of every policy, from {@link LEFT} and {@link RESETS}. */
function statesOf(made: readonly PolicyText[], n: number): string {
  let written = '';
  for (let i = 0; i < n; i++) {
    // Only the two numbers change from response to response: the rest is made once per policy.
    const state = `${(made[i] as PolicyText).state}${LEFT[i]};t=${RESETS[i]}`;
    written = i === 0 ? state : `${written}, ${state}`;
  }
  return written;
}

/**
 * The policy closest to being exhausted, from {@link LEFT} and {@link RESETS}: of the policies
 * that count requests over time, the one with the fewest left, the latest reset among those, the
 * first in order among those. A throttle counts other units (requests in flight), so it is named
 * only when it has no slot left while every such policy still has some, or when there is no such
 * policy: then the throttle with the fewest slots left.
 */
function nearest(made: readonly PolicyText[], n: number): number {
  let timed = -1;
  let throttle = -1;
  for (let i = 0; i < n; i++) {
    const left = LEFT[i] as number;
    if ((made[i] as PolicyText).policy.kind === 'concurrency') {
      if (throttle === -1 || left < (LEFT[throttle] as number)) throttle = i;
    } else if (
      timed === -1 ||
      left < (LEFT[timed] as number) ||
      (left === LEFT[timed] && (RESETS[i] as number) > (RESETS[timed] as number))
    ) {
      timed = i;
    }
  }
  if (timed === -1) return throttle;
  if (throttle !== -1 && LEFT[throttle] === 0 && (LEFT[timed] as number) > 0) return throttle;
  return timed;
}

/** A frozen list's `RateLimit-Policy` value and each policy's text. */
interface ListText {
  readonly value: string;
  readonly made: readonly PolicyText[];
}

// Kept per frozen list of frozen policies, as long as the list lives.
const listTexts = new WeakMap<readonly Policy[], ListText>();

/** What a policy writes in the two fields whatever its state, made once per frozen policy. */
interface PolicyText {
  /** The policy written. */
  readonly policy: Policy;
  /** Kept: the policy is frozen, so this text is its text for as long as it lives. */
  readonly kept: boolean;
  /** Its `RateLimit-Policy` item: `"name";q=<quota>;w=<window>`. */
  readonly item: string;
  /** Its `RateLimit` item up to the remaining count: `"name";r=`. */
  readonly state: string;
  /** The `RateLimit-Policy` values of the lists that start with this policy, as made. */
  readonly lists: Array<{ readonly policies: readonly Policy[]; readonly value: string }>;
  /** Its fields when it is the one named, by what remains and the seconds to reset (see {@link named}). */
  readonly named: Map<number, RateLimitFields>;
}

// A limiter's policies are frozen plain data, the same objects from decision to decision: what
// they write cannot change, and is kept as long as they live. Any other policy is written anew.
const texts = new WeakMap<Policy, PolicyText>();

/** The most `RateLimit-Policy` values kept per first policy: one per route rule and preset. */
const MAX_LISTS = 64;

function policyText(policy: Policy): PolicyText {
  let text = texts.get(policy);
  if (text !== undefined) return text;
  const name = sfString(policy.name);
  const kept = Object.isFrozen(policy);
  const item = `${name};${quota(policy)}`;
  text = { policy, kept, item, state: `${name};r=`, lists: [], named: new Map() };
  if (kept) texts.set(policy, text);
  return text;
}

/** The `RateLimit-Policy` value of these policies: made once per list of frozen policies. */
function policyList(made: readonly PolicyText[]): string {
  const n = made.length;
  if (n === 0) return '';
  const first = made[0] as PolicyText;
  for (const list of first.lists) {
    if (list.policies.length === n && samePolicies(list.policies, made)) return list.value;
  }
  let value = first.item;
  let kept = first.kept;
  for (let i = 1; i < n; i++) {
    const text = made[i] as PolicyText;
    value += `, ${text.item}`;
    kept &&= text.kept;
  }
  if (kept && first.lists.length < MAX_LISTS) {
    first.lists.push({ policies: made.map((text) => text.policy), value });
  }
  return value;
}

function samePolicies(policies: readonly Policy[], made: readonly PolicyText[]): boolean {
  for (let i = 0; i < policies.length; i++) if (policies[i] !== made[i]?.policy) return false;
  return true;
}

/** The most statuses read from a decision made elsewhere: far more than any preset applies. */
const MAX_STATUSES = 1024;

/**
 * Statuses from anywhere as plain copies, each member read once and safely; unwritable ones and
 * any past the first 1,024 are left out. `copies` maps each policy read to its copy.
 * @internal
 */
export function readStatuses(statuses: unknown, copies: Map<unknown, Policy>): PolicyStatus[] {
  const read: PolicyStatus[] = [];
  if (!isArray(statuses)) return read;
  const length = readSafely(statuses, 'length');
  if (typeof length !== 'number') return read;
  // A sparse array of length 2^32 - 1 must not make the walk take minutes.
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

/** A plain copy of what the fields and the 429 write of a named policy. @internal */
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
