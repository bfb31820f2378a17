/**
 * Durations for policies: a number of milliseconds, or a string such as `'60s'`, `'5 min'`, `'1h'`.
 * @module
 */
import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import type { Rule } from '../internal/options.js';

/** A duration: milliseconds as a number, or a number with a unit (`ms`, `s`, `min`/`m`, `h`). */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;

/** The units a duration string accepts. */
export type DurationUnit = 'ms' | 's' | 'sec' | 'm' | 'min' | 'h' | 'hr';

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  sec: 1_000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
};

const DURATION = /^([0-9]+)(?:\.([0-9]+))? ?(ms|s|sec|m|min|h|hr)$/;

// Longer duration strings are refused before their digits are read: no duration needs more.
const MAX_DURATION_STRING = 64;

/**
 * Convert a {@link Duration} to a positive whole number of milliseconds. A decimal string is read
 * exactly, digit by digit: `'1.001s'` is 1001 ms, `'0.5ms'` is refused (not a whole number).
 * @param duration - `1000`, `'1s'`, `'60 s'`, `'5min'`, `'1h'`, `'1.5s'`
 * @param what - what the duration is for, used in the error message
 * @returns milliseconds, an integer >= 1
 * @throws ConfigurationError `invalid_duration` when it is not a positive whole number of ms
 */
export function toMilliseconds(duration: Duration, what = 'duration'): number {
  let ms: number;
  let why = '';
  if (typeof duration === 'number') {
    ms = duration;
  } else if (typeof duration === 'string') {
    const text = duration.trim();
    const match = text.length <= MAX_DURATION_STRING ? DURATION.exec(text) : null;
    if (match === null) ms = Number.NaN;
    else {
      const exact = exactMilliseconds(match[1] as string, match[2] ?? '', match[3] as string);
      ms = exact ?? Number.NaN;
      if (exact === undefined) why = ', which is not a whole number of milliseconds';
    }
  } else {
    ms = Number.NaN;
  }
  if (!Number.isSafeInteger(ms) || ms < 1) {
    throw new ConfigurationError(
      'invalid_duration',
      `${what} must be a whole number of milliseconds >= 1 (a number, or a string such as '60s', '5 min', '1h'), got ${describe(duration)}${why}.`,
    );
  }
  return ms;
}

/**
 * The milliseconds that `whole.fraction unit` names, computed on the digits (no float error), or
 * undefined when they are not a whole number. Past the safe integers the result is not safe, and
 * the caller refuses it.
 */
function exactMilliseconds(whole: string, fraction: string, unit: string): number | undefined {
  const scaled = BigInt(whole + fraction) * BigInt(UNIT_MS[unit] as number);
  const divisor = 10n ** BigInt(fraction.length);
  if (scaled % divisor !== 0n) return undefined;
  return Number(scaled / divisor);
}

/**
 * Format milliseconds the way the specification writes periods: `1 s`, `60 s`, `5 min`, `60 min`.
 * @param ms - a duration in milliseconds, a finite number
 * @throws ConfigurationError `invalid_duration` for anything else
 */
export function formatDuration(ms: number): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new ConfigurationError(
      'invalid_duration',
      `formatDuration needs a finite number of milliseconds, got ${describe(ms)}.`,
    );
  }
  if (ms % 60_000 === 0 && ms >= 300_000) return `${ms / 60_000} min`;
  if (ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/**
 * A {@link Duration} option, read into milliseconds by {@link toMilliseconds} under its own name.
 * @internal
 */
export const aDuration: Rule<number> = {
  expected: 'a duration',
  code: 'invalid_duration',
  read: (value, name) => toMilliseconds(value as Duration, name),
};
