/** Time as the library sees it: an injected {@link Clock}, so tests never sleep. @module */
import { checkValue, finiteNumber, refused, withMethods, worded } from './internal/options.js';

/** A source of the current time in milliseconds since the Unix epoch. */
export interface Clock {
  /** Milliseconds since the Unix epoch, 0 to 8.64e15; the limiter refuses any other reading. */
  now(): number;
}

/** The `clock` option wherever one is taken: an object with `now()`. @internal */
export const aClock = withMethods<Clock>(['now'], 'a Clock');

/** The wall clock (`Date.now()`); the default at the edges of the library. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/**
 * The latest time a clock may return, the last instant a `Date` holds; up to it, adding a window
 * still gives a later time (past about 9e15 ms whole milliseconds are no longer exact).
 * @internal
 */
export const MAX_CLOCK_MS = 8.64e15;

/** Whether `ms` is a time a clock may return. @internal */
export function isClockTime(ms: unknown): ms is number {
  return typeof ms === 'number' && ms >= 0 && ms <= MAX_CLOCK_MS;
}

/**
 * A clock that moves only when told to. Use it in tests: decisions become exact and instant.
 * @example
 * ```ts
 * const clock = new FakeClock(0);
 * clock.advance(1_000); // one second later
 * ```
 */
export class FakeClock implements Clock {
  #now: number;

  /**
   * @param start - the initial time in milliseconds since the Unix epoch, from 0 to 8.64e15
   * @defaultValue 0
   * @throws ConfigurationError `invalid_option` for any other start
   */
  constructor(start = 0) {
    this.#now = checkValue(aClockTime, start, 'FakeClock start');
  }

  /** The current fake time, in milliseconds. */
  now(): number {
    return this.#now;
  }

  /**
   * Jump to an absolute time (backwards too: real clocks do that).
   * @param ms - the new time, from 0 to 8.64e15
   * @throws ConfigurationError `invalid_option` for any other time
   */
  set(ms: number): void {
    this.#now = checkValue(aClockTime, ms, 'FakeClock set(ms)');
  }

  /**
   * Move forward by `ms` milliseconds.
   * @param ms - a number of milliseconds from 0 to 8.64e15
   * @returns the new time
   * @throws ConfigurationError `invalid_duration` for any other `ms`, or one past 8.64e15
   */
  advance(ms: number): number {
    checkValue(STEP, ms, 'FakeClock.advance(ms)');
    const next = this.#now + ms;
    if (next > MAX_CLOCK_MS) {
      throw refused(
        'FakeClock.advance(ms)',
        `at most ${MAX_CLOCK_MS - this.#now}, which takes the time from ${this.#now} to ${MAX_CLOCK_MS} ms, the latest a clock may return (the last instant a Date holds)`,
        ms,
        'invalid_duration',
      );
    }
    this.#now = next;
    return this.#now;
  }
}

/** A time a clock may return, as {@link isClockTime} tells. @internal */
export const aClockTime = worded(
  finiteNumber(0, MAX_CLOCK_MS),
  `a time a clock may return: milliseconds since the Unix epoch, from 0 to ${MAX_CLOCK_MS} (the range of a Date from 1970 on)`,
);

const STEP = worded(
  finiteNumber(0, MAX_CLOCK_MS),
  `a number of milliseconds from 0 to ${MAX_CLOCK_MS} (use set() to go back in time)`,
  'invalid_duration',
);
