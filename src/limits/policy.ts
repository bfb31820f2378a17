/**
 * Limit policies as plain data, made by {@link window}, {@link rate} and {@link concurrency}.
 * @module
 */
import { isArray } from '../internal/describe.js';
import {
  checkValue,
  INVALID,
  type Rule,
  readOptions,
  refused,
  unreadable,
  wholeNumber,
  worded,
} from '../internal/options.js';
import { aDuration, type Duration, formatDuration, toMilliseconds } from './duration.js';

/** At most `limit` admissions in any interval `[t, t + windowMs)`: an exact sliding window. */
export interface WindowPolicy {
  /** Discriminant. */
  readonly kind: 'window';
  /** Used in messages, e.g. `global: 3500 per 60 s`. Unique within a limiter. */
  readonly name: string;
  /** Admissions allowed in any window. */
  readonly limit: number;
  /** Window length in milliseconds. */
  readonly windowMs: number;
}

/** A token bucket (GCRA): `perSecond` on average, with bursts of up to `burst` at once. */
export interface RatePolicy {
  /** Discriminant. */
  readonly kind: 'rate';
  /** Used in messages. Unique within a limiter. */
  readonly name: string;
  /** Average admissions per second. */
  readonly perSecond: number;
  /** Admissions allowed at once after a quiet period. */
  readonly burst: number;
}

/** At most `max` requests in flight at once, each holding a lease until it ends. */
export interface ConcurrencyPolicy {
  /** Discriminant. */
  readonly kind: 'concurrency';
  /** Used in messages. Unique within a limiter. */
  readonly name: string;
  /** Requests in flight at once. */
  readonly max: number;
  /** A lease not released within this time is dropped, so a crashed handler cannot leak it. */
  readonly leaseTtlMs: number;
  /** The Retry-After announced when this policy refuses (the specification recommends 1 s). */
  readonly retryAfterMs: number;
}

/** Any policy. */
export type Policy = WindowPolicy | RatePolicy | ConcurrencyPolicy;

/** The shortest emission interval (ms): a shorter one vanishes when added to a time in ms. */
const MIN_EMISSION_INTERVAL_MS = 0.001;

/** The longest emission interval and burst tolerance (ms): the latest time a clock may return. */
const MAX_RATE_SPAN_MS = 8.64e15;

/** Options common to every policy factory. */
export interface PolicyOptions {
  /** The name used in messages. @defaultValue derived from the numbers, e.g. `3500 per 60 s` */
  name?: string;
}

/** Options of {@link concurrency}. */
export interface ConcurrencyOptions extends PolicyOptions {
  /** Lease time-to-live. @defaultValue `'60s'` */
  leaseTtl?: Duration;
  /** Retry-After announced on refusal. @defaultValue `'1s'` (the specification's recommended backoff) */
  retryAfter?: Duration;
}

/** Default lease time-to-live: far above the specification's typical response times (< 500 ms). */
export const DEFAULT_LEASE_TTL_MS = 60_000;

/** Default Retry-After of a concurrency refusal: the specification's recommended backoff. */
export const DEFAULT_CONCURRENCY_RETRY_AFTER_MS = 1_000;

/**
 * At most `limit` requests in any sliding window of `duration`.
 * @param limit - a whole number >= 1
 * @param duration - the window length, e.g. `'60s'` or `60_000`
 * @param options - `name`
 * @throws ConfigurationError `invalid_limit`, `invalid_duration`, or `invalid_option` for options
 *   that are not an object
 * @example
 * ```ts
 * window(3500, '60s', { name: 'global: 3500 per 60 s' });
 * ```
 */
export function window(
  limit: number,
  duration: Duration,
  options: PolicyOptions = {},
): WindowPolicy {
  const { name } = readOptions(options, 'window', NAMED);
  checkValue(limitCount, limit, 'window limit');
  const windowMs = toMilliseconds(duration, 'window duration');
  return Object.freeze({
    kind: 'window',
    name: name ?? `${limit} per ${formatDuration(windowMs)}`,
    limit,
    windowMs,
  });
}

/**
 * `perSecond` requests per second on average, with bursts of up to `burst`.
 * @param perSecond - a number > 0 (fractions allowed: `0.5` is one every two seconds) whose
 *   emission interval `1000 / perSecond` is from 0.001 ms to 8.64e15 ms (at most a million per
 *   second), with `(burst - 1)` intervals at most 8.64e15 ms
 * @param burst - a whole number >= 1
 * @param options - `name`
 * @throws ConfigurationError `invalid_rate`, `invalid_limit`, or `invalid_option` for options that
 *   are not an object
 * @example
 * ```ts
 * rate(100, 200); // 100 per second on average, bursts of up to 200
 * ```
 */
export function rate(perSecond: number, burst: number, options: PolicyOptions = {}): RatePolicy {
  const { name } = readOptions(options, 'rate', NAMED);
  checkValue(ratePerSecond, perSecond, 'rate perSecond');
  checkValue(limitCount, burst, 'rate burst');
  checkBurstTolerance(perSecond, burst, 'rate burst', 'invalid_rate');
  return Object.freeze({
    kind: 'rate',
    name: name ?? `${perSecond} per s average, burst ${burst}`,
    perSecond,
    burst,
  });
}

/**
 * At most `max` requests in flight at once per client and account (the throttle).
 * @param max - a whole number >= 1
 * @param options - `name`, `leaseTtl`, `retryAfter`
 * @throws ConfigurationError `invalid_limit`, `invalid_duration`, or `invalid_option` for options
 *   that are not an object
 * @example
 * ```ts
 * concurrency(20, { leaseTtl: '30s' });
 * ```
 */
export function concurrency(max: number, options: ConcurrencyOptions = {}): ConcurrencyPolicy {
  const { name, leaseTtl, retryAfter } = readOptions(options, 'concurrency', CONCURRENCY_RULES, {
    defaults: { leaseTtl: DEFAULT_LEASE_TTL_MS, retryAfter: DEFAULT_CONCURRENCY_RETRY_AFTER_MS },
  });
  checkValue(limitCount, max, 'concurrency max');
  return Object.freeze({
    kind: 'concurrency',
    name: name ?? `${max} concurrent`,
    max,
    leaseTtlMs: leaseTtl,
    retryAfterMs: retryAfter,
  });
}

/**
 * Check a list of policies as a limiter would, and copy it: each field read once into frozen plain
 * data, so a getter or a later change cannot change what the copy says.
 * @param policies - the policies of one scope
 * @returns a frozen array of frozen copies, in the same order
 * @throws ConfigurationError `invalid_policy` for anything that is not a valid policy (a rate
 *   outside the range {@link rate} accepts, a policy whose fields cannot be read), or
 *   `duplicate_policy_name`
 */
export function checkPolicies(policies: readonly unknown[]): readonly Policy[] {
  return copyPolicies(policies, 'policies');
}

/** {@link checkPolicies}, with messages naming `where`, e.g. `preset live: rules[2].policies`. @internal */
export function copyPolicies(policies: unknown, where: string): readonly Policy[] {
  if (!isArray(policies)) throw refused(where, POLICY_LIST, policies, 'invalid_policy');
  let length: number;
  try {
    length = policies.length;
  } catch (cause) {
    throw unreadable(where, POLICY_LIST, policies, cause, 'invalid_policy');
  }
  const copies: Policy[] = [];
  const seen = new Set<string>();
  for (let index = 0; index < length; index++) {
    const copy = copyPolicy(policies, index, where);
    if (seen.has(copy.name)) {
      throw refused(
        `${where}[${index}].name`,
        'a name no other policy of the list has (the 429 body uses it to say which limit was hit)',
        copy.name,
        'duplicate_policy_name',
      );
    }
    seen.add(copy.name);
    copies.push(copy);
  }
  return Object.freeze(copies);
}

const A_POLICY = 'a policy made with window(), rate() or concurrency()';
const POLICY_LIST = 'an array of policies made with window(), rate() or concurrency()';

/** The fields each kind of policy has besides `kind` and `name`, in the order a copy holds them. */
const FIELDS = {
  window: ['limit', 'windowMs'],
  rate: ['perSecond', 'burst'],
  concurrency: ['max', 'leaseTtlMs', 'retryAfterMs'],
} as const;

type Kind = keyof typeof FIELDS;

interface ReadPolicy {
  readonly value: unknown;
  readonly kind: Kind | undefined;
  readonly fields: Readonly<Record<string, unknown>>;
}

function readPolicy(list: readonly unknown[], index: number, where: string): ReadPolicy {
  let value: unknown;
  try {
    value = list[index];
  } catch (cause) {
    throw unreadable(where, POLICY_LIST, list, cause, 'invalid_policy');
  }
  if (typeof value !== 'object' || value === null) return { value, kind: undefined, fields: {} };
  try {
    const source = value as Record<string, unknown>;
    const kind = source.kind;
    if (kind !== 'window' && kind !== 'rate' && kind !== 'concurrency') {
      return { value, kind: undefined, fields: {} };
    }
    const fields: Record<string, unknown> = { name: source.name };
    for (const key of FIELDS[kind]) fields[key] = source[key];
    return { value, kind, fields };
  } catch (cause) {
    throw unreadable(`${where}[${index}]`, A_POLICY, value, cause, 'invalid_policy');
  }
}

function copyPolicy(list: readonly unknown[], index: number, where: string): Policy {
  const at = `${where}[${index}]`;
  const { value, kind, fields } = readPolicy(list, index, where);
  if (kind === undefined) throw refused(at, A_POLICY, value, 'invalid_policy');
  const count = (field: string): number => checkValue(fieldCount, fields[field], `${at}.${field}`);
  const name = checkValue(fieldName, fields.name, `${at}.name`);
  // Object literals in one field order per kind: every copy of a kind has one shape.
  switch (kind) {
    case 'window':
      return Object.freeze({ kind, name, limit: count('limit'), windowMs: count('windowMs') });
    case 'rate': {
      const perSecond = checkValue(fieldPerSecond, fields.perSecond, `${at}.perSecond`);
      const burst = count('burst');
      checkBurstTolerance(perSecond, burst, `${at}.burst`, 'invalid_policy');
      return Object.freeze({ kind, name, perSecond, burst });
    }
    case 'concurrency':
      return Object.freeze({
        kind,
        name,
        max: count('max'),
        leaseTtlMs: count('leaseTtlMs'),
        retryAfterMs: count('retryAfterMs'),
      });
  }
}

/** A rate a policy can keep: its emission interval `1000 / perSecond` is a time in ms a clock holds. */
const ratePerSecond: Rule<number> = {
  expected: `a number > 0 whose emission interval (1000 / perSecond) is from ${MIN_EMISSION_INTERVAL_MS} ms to ${MAX_RATE_SPAN_MS} ms (perSecond from about 1.16e-13 to ${1000 / MIN_EMISSION_INTERVAL_MS})`,
  code: 'invalid_rate',
  read(value) {
    if (typeof value !== 'number' || !(value > 0)) return INVALID;
    const interval = 1000 / value;
    return interval >= MIN_EMISSION_INTERVAL_MS && interval <= MAX_RATE_SPAN_MS ? value : INVALID;
  },
};

/**
 * Refuse a burst whose tolerance at `perSecond` (a rate {@link ratePerSecond} reads) is longer
 * than a clock's times.
 */
function checkBurstTolerance(
  perSecond: number,
  burst: number,
  name: string,
  code: 'invalid_rate' | 'invalid_policy',
): void {
  const tolerance = (burst - 1) * (1000 / perSecond);
  if (tolerance <= MAX_RATE_SPAN_MS) return;
  throw refused(
    name,
    `a burst whose tolerance ((burst - 1) * 1000 / perSecond) is at most ${MAX_RATE_SPAN_MS} ms at ${perSecond} per second: lower the burst or raise perSecond`,
    burst,
    code,
  );
}

/** A limit, a burst or a maximum: a whole number >= 1, refused as `invalid_limit`. @internal */
export const limitCount: Rule<number> = worded(
  wholeNumber(),
  wholeNumber().expected,
  'invalid_limit',
);

/** A policy's name: said in the 429 body, so it must say something. */
const policyName: Rule<string> = {
  expected: 'a non-empty string of at most 200 characters, not only spaces',
  code: 'invalid_policy',
  read: (value) =>
    typeof value === 'string' && value.trim().length > 0 && value.length <= 200 ? value : INVALID,
};

const NAMED = { name: policyName };

/** The fields of a policy made by hand, refused as `invalid_policy`. */
const fieldCount = worded(limitCount, limitCount.expected, 'invalid_policy');
const fieldPerSecond = worded(ratePerSecond, ratePerSecond.expected, 'invalid_policy');
const fieldName: Rule<string> = {
  expected: 'a non-empty string',
  code: 'invalid_policy',
  read: (value) => (typeof value === 'string' && value.length > 0 ? value : INVALID),
};

const CONCURRENCY_RULES = { name: policyName, leaseTtl: aDuration, retryAfter: aDuration };

const identities = new WeakMap<readonly Policy[], string>();

/**
 * The same string exactly for lists of the same policies, so every store keeps state per content
 * (two limiters from one preset count together); the JSON of fixed-order fields, once per list.
 * @internal
 */
export function policyListIdentity(policies: readonly Policy[]): string {
  let identity = identities.get(policies);
  if (identity === undefined) {
    identity = JSON.stringify(policies);
    identities.set(policies, identity);
  }
  return identity;
}
