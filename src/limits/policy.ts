/**
 * Limit policies as plain data, made by small factories: {@link window}, {@link rate},
 * {@link concurrency}. Each policy has a name that the 429 body uses to say which limit was hit.
 * @module
 */
import { ConfigurationError } from '../errors.js';
import { type Duration, describe, formatDuration, toMilliseconds } from './duration.js';

/**
 * At most `limit` admitted requests in any half-open interval `[t, t + windowMs)`: a sliding
 * window, enforced exactly.
 */
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
  checkCount(limit, 'window limit');
  const windowMs = toMilliseconds(duration, 'window duration');
  return Object.freeze({
    kind: 'window',
    name: checkName(options.name ?? `${limit} per ${formatDuration(windowMs)}`),
    limit,
    windowMs,
  });
}

/**
 * `perSecond` requests per second on average, with bursts of up to `burst`.
 * @param perSecond - a finite number > 0 (fractions allowed: `0.5` is one every two seconds)
 * @param burst - a whole number >= 1
 * @param options - `name`
 * @example
 * ```ts
 * rate(100, 200); // 100 per second on average, bursts of up to 200
 * ```
 */
export function rate(perSecond: number, burst: number, options: PolicyOptions = {}): RatePolicy {
  if (typeof perSecond !== 'number' || !Number.isFinite(perSecond) || perSecond <= 0) {
    throw new ConfigurationError(
      'invalid_rate',
      `rate perSecond must be a finite number > 0, got ${describe(perSecond)}.`,
    );
  }
  checkCount(burst, 'rate burst');
  return Object.freeze({
    kind: 'rate',
    name: checkName(options.name ?? `${perSecond} per s average, burst ${burst}`),
    perSecond,
    burst,
  });
}

/**
 * At most `max` requests in flight at once per client and account (the throttle).
 * @param max - a whole number >= 1
 * @param options - `name`, `leaseTtl`, `retryAfter`
 * @example
 * ```ts
 * concurrency(20, { leaseTtl: '30s' });
 * ```
 */
export function concurrency(max: number, options: ConcurrencyOptions = {}): ConcurrencyPolicy {
  checkCount(max, 'concurrency max');
  return Object.freeze({
    kind: 'concurrency',
    name: checkName(options.name ?? `${max} concurrent`),
    max,
    leaseTtlMs:
      options.leaseTtl === undefined
        ? DEFAULT_LEASE_TTL_MS
        : toMilliseconds(options.leaseTtl, 'leaseTtl'),
    retryAfterMs:
      options.retryAfter === undefined
        ? DEFAULT_CONCURRENCY_RETRY_AFTER_MS
        : toMilliseconds(options.retryAfter, 'retryAfter'),
  });
}

/**
 * Check a list of policies as a limiter would: each well-formed, names unique.
 * @param policies - the policies of one scope
 * @throws ConfigurationError `invalid_policy` or `duplicate_policy_name`
 */
export function checkPolicies(policies: readonly unknown[]): readonly Policy[] {
  if (!Array.isArray(policies)) {
    throw new ConfigurationError(
      'invalid_policy',
      `policies must be an array, got ${describe(policies)}.`,
    );
  }
  const seen = new Set<string>();
  for (const [index, policy] of policies.entries()) {
    if (!isPolicy(policy)) {
      throw new ConfigurationError(
        'invalid_policy',
        `policies[${index}] is not a policy; make it with window(), rate() or concurrency(), got ${describe(policy)}.`,
      );
    }
    if (seen.has(policy.name)) {
      throw new ConfigurationError(
        'duplicate_policy_name',
        `Two policies are named ${JSON.stringify(policy.name)}; give each a distinct name (the 429 body uses it to say which limit was hit).`,
      );
    }
    seen.add(policy.name);
  }
  return policies as readonly Policy[];
}

function isPolicy(value: unknown): value is Policy {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  if (typeof p.name !== 'string' || p.name.length === 0) return false;
  switch (p.kind) {
    case 'window':
      return isCount(p.limit) && isCount(p.windowMs);
    case 'rate':
      return (
        typeof p.perSecond === 'number' &&
        Number.isFinite(p.perSecond) &&
        p.perSecond > 0 &&
        isCount(p.burst)
      );
    case 'concurrency':
      return isCount(p.max) && isCount(p.leaseTtlMs) && isCount(p.retryAfterMs);
    default:
      return false;
  }
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 1;
}

function checkCount(value: number, what: string): void {
  if (!isCount(value)) {
    throw new ConfigurationError(
      'invalid_limit',
      `${what} must be a whole number >= 1, got ${describe(value)}.`,
    );
  }
}

function checkName(name: string): string {
  if (typeof name !== 'string' || name.trim().length === 0 || name.length > 200) {
    throw new ConfigurationError(
      'invalid_policy',
      `A policy name must be a non-empty string of at most 200 characters, got ${describe(name)}.`,
    );
  }
  return name;
}
