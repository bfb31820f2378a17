/**
 * Durations for policies: a number of milliseconds, or a string such as `'60s'`, `'5 min'`, `'1h'`.
 * @module
 */
import { checkValue, INVALID, type Rule, refused } from '../internal/options.js';

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
  return checkValue(aDuration, duration, what);
}

/** What a duration must be. */
const EXPECTED =
  "a whole number of milliseconds >= 1 (a number, or a string such as '60s', '5 min', '1h')";

/** The milliseconds of a duration, or {@link INVALID}; a decimal string that is no whole number of them is refused as such. */
function readDuration(duration: unknown, what: string): number | typeof INVALID {
  let ms: unknown = duration;
  if (typeof duration === 'string') {
    const text = duration.trim();
    const match = text.length <= MAX_DURATION_STRING ? DURATION.exec(text) : null;
    if (match === null) return INVALID;
    ms = exactMilliseconds(match[1] as string, match[2] ?? '', match[3] as string);
    if (ms === undefined) {
      throw refused(
        what,
        "a whole number of milliseconds >= 1 (a decimal string such as '1.5s' too, when it comes to whole milliseconds)",
        duration,
        'invalid_duration',
      );
    }
  }
  return Number.isSafeInteger(ms) && (ms as number) >= 1 ? (ms as number) : INVALID;
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
  checkValue(FINITE_MS, ms, 'formatDuration(ms)');
  if (ms % 60_000 === 0 && ms >= 300_000) return `${ms / 60_000} min`;
  if (ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/**
 * A {@link Duration} option, read into milliseconds by {@link toMilliseconds} under its own name.
 * @internal
 */
export const aDuration: Rule<number> = {
  expected: EXPECTED,
  code: 'invalid_duration',
  read: readDuration,
};

const FINITE_MS: Rule<number> = {
  expected: 'a finite number of milliseconds',
  code: 'invalid_duration',
  read: (value) => (typeof value === 'number' && Number.isFinite(value) ? value : INVALID),
};
