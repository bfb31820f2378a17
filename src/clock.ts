/**
 * Time as the library sees it: a {@link Clock} is injected everywhere, so that tests run on a
 * {@link FakeClock} and never sleep.
 * @module
 */
import { ConfigurationError } from './errors.js';
import { describe } from './limits/duration.js';

/** A source of the current time in milliseconds since the Unix epoch. */
export interface Clock {
  /** The current time, in milliseconds. */
  now(): number;
}

/** The wall clock (`Date.now()`); the default at the edges of the library. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

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
   * @param start - the initial time in milliseconds
   * @defaultValue 0
   */
  constructor(start = 0) {
    this.#now = checkTime(start, 'start');
  }

  /** The current fake time, in milliseconds. */
  now(): number {
    return this.#now;
  }

  /**
   * Jump to an absolute time (backwards too: real clocks do that).
   * @param ms - the new time in milliseconds
   */
  set(ms: number): void {
    this.#now = checkTime(ms, 'ms');
  }

  /**
   * Move forward by `ms` milliseconds.
   * @param ms - a finite, non-negative number of milliseconds
   * @returns the new time
   * @throws ConfigurationError `invalid_duration` for any other `ms`, or one that would take the
   *   time past the largest finite number (the clock then stays where it was)
   */
  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new ConfigurationError(
        'invalid_duration',
        `FakeClock.advance needs a finite number of milliseconds >= 0, got ${describe(ms)}; use set() to go back in time.`,
      );
    }
    const next = this.#now + ms;
    if (!Number.isFinite(next)) {
      throw new ConfigurationError(
        'invalid_duration',
        `FakeClock.advance(${ms}) would take the time from ${this.#now} past the largest finite number of milliseconds; use set() to jump to a time.`,
      );
    }
    this.#now = next;
    return this.#now;
  }
}

function checkTime(ms: number, name: string): number {
  if (!Number.isFinite(ms)) {
    throw new ConfigurationError(
      'invalid_option',
      `FakeClock ${name} must be a finite number of milliseconds, got ${describe(ms)}.`,
    );
  }
  return ms;
}
