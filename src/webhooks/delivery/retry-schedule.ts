/** The retry schedule: exponential backoff with jitter, bounded in attempts and age. @module */
import {
  finiteNumber,
  INVALID,
  optionsOf,
  type Rule,
  readOptions,
  wholeNumber,
} from '../../internal/options.js';

/** The shape of the schedule. */
export interface RetryScheduleOptions {
  /** The wait after the first failed attempt, in ms. @defaultValue 5000 */
  initialDelayMs?: number;
  /** Each wait is this many times the one before. @defaultValue 4 */
  factor?: number;
  /** No wait is longer, in ms. @defaultValue 6 hours */
  maxDelayMs?: number;
  /** Attempts in all, the first one included. @defaultValue 8 */
  maxAttempts?: number;
  /**
   * No attempt starts later than this after the first one, in ms: a wait that would end later ends
   * at it, and the delivery is given up (`max_age`) only once no attempt can start within it.
   * @defaultValue 24 hours
   */
  maxAgeMs?: number;
  /**
   * A wait `d` becomes a uniform draw in `[(1 - jitter) d, d]`, so that receivers back from an
   * outage are not hit all at once. @defaultValue 0.5
   */
  jitter?: number;
}

/** A checked schedule: every option filled in. */
export type RetrySchedule = Readonly<Required<RetryScheduleOptions>>;

/** Where a failed attempt leads. */
export type RetryDecision =
  | {
      /** Try again. */
      readonly retry: true;
      /** When, in ms. */
      readonly at: number;
    }
  | {
      /** Give up. */
      readonly retry: false;
      /** Every attempt made, or its max age is up: no later attempt can start within it. */
      readonly reason: 'attempts_exhausted' | 'max_age';
    };

/** The state a decision reads. */
export interface FailedAttempt {
  /** Attempts made so far, this one included (1 after the first). */
  readonly attempts: number;
  /** When the first attempt started, in ms. */
  readonly firstAttemptAt: number;
  /** Now, in ms. */
  readonly now: number;
  /**
   * The wait the receiver asked for, in ms, in place of the backoff: its Retry-After with 429, 502,
   * 503 or 504, already bounded by the deliverer's `maxEndpointPauseMs`.
   */
  readonly retryAfterMs?: number | undefined;
  /** A uniform draw in [0, 1). */
  readonly random: number;
}

const SCHEDULE_RULES = {
  initialDelayMs: wholeNumber(0),
  factor: finiteNumber(1),
  maxDelayMs: wholeNumber(0),
  maxAttempts: wholeNumber(1),
  maxAgeMs: wholeNumber(0),
  jitter: finiteNumber(0, 1),
};

const SCHEDULE_EXAMPLE = '{ maxAttempts: 5 }';
const SCHEDULE_DEFAULTS = {
  initialDelayMs: 5_000,
  factor: 4,
  maxDelayMs: 6 * 3_600_000,
  maxAttempts: 8,
  maxAgeMs: 24 * 3_600_000,
  jitter: 0.5,
};
const SCHEDULE_FIELDS = optionsOf(SCHEDULE_RULES, SCHEDULE_EXAMPLE);

/**
 * The rule of a `schedule` option elsewhere (the deliverer's, the service's `delivery`): a
 * schedule from {@link retrySchedule}, or its options, read by the same rules (a misspelt key is
 * refused with the nearest name, as at the top level) and completed with the defaults. @internal
 */
export const SCHEDULE_OPTION: Rule<RetrySchedule> = {
  expected: `a RetrySchedule from retrySchedule(), or its options such as ${SCHEDULE_EXAMPLE}`,
  read(value, name) {
    const fields = SCHEDULE_FIELDS.read(value, name);
    if (fields === INVALID) return INVALID;
    // Checked already: what is left out takes its default, as in retrySchedule().
    const given = Object.entries(fields).filter(([, field]) => field !== undefined);
    return Object.freeze({ ...SCHEDULE_DEFAULTS, ...Object.fromEntries(given) });
  },
};

/**
 * Check and complete a schedule; every option has a default.
 * @throws ConfigurationError `invalid_option` for a value out of range
 * @example
 * ```ts
 * retrySchedule({ maxAttempts: 5, maxAgeMs: 3_600_000 });
 * ```
 */
export function retrySchedule(options: RetryScheduleOptions = {}): RetrySchedule {
  const schedule = readOptions(options, 'retrySchedule', SCHEDULE_RULES, {
    defaults: SCHEDULE_DEFAULTS,
    example: SCHEDULE_EXAMPLE,
  }) satisfies RetrySchedule;
  return Object.freeze(schedule);
}

/**
 * The wait before attempt `attempts + 1` by the backoff alone, without jitter: `initialDelayMs *
 * factor^(attempts - 1)`, at most `maxDelayMs`.
 * @param attempts - attempts made so far (at least 1)
 */
export function backoffDelay(schedule: RetrySchedule, attempts: number): number {
  const delay = schedule.initialDelayMs * schedule.factor ** Math.max(0, attempts - 1);
  return Math.min(schedule.maxDelayMs, Math.round(delay));
}

/**
 * Decide what follows a failed attempt: when to try again, or to give up. A wait that would start
 * the next attempt later than `maxAgeMs` after the first ends at `maxAgeMs` instead: a delivery is
 * given up for its age (`max_age`) only once its max age is up, never while an attempt can still
 * start within it.
 */
export function nextAttempt(schedule: RetrySchedule, failed: FailedAttempt): RetryDecision {
  if (failed.attempts >= schedule.maxAttempts)
    return { retry: false, reason: 'attempts_exhausted' };
  const backoff = backoffDelay(schedule, failed.attempts);
  // A random source out of [0, 1) (or NaN) is clamped: the wait stays within the documented bounds.
  const random = Number.isFinite(failed.random) ? Math.min(Math.max(failed.random, 0), 1) : 0;
  const delay =
    failed.retryAfterMs !== undefined
      ? failed.retryAfterMs // the receiver said when it can take the delivery: no sooner
      : Math.round(backoff * (1 - schedule.jitter * random));
  const age = failed.now - failed.firstAttemptAt;
  if (age + delay <= schedule.maxAgeMs) return { retry: true, at: failed.now + delay };
  // The wait outlasts the delivery: its last attempt starts at its max age, if that is still ahead.
  const left = schedule.maxAgeMs - age;
  if (left <= 0) return { retry: false, reason: 'max_age' };
  return { retry: true, at: failed.now + left };
}
