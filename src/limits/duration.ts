/**
 * Durations for policies: a number of milliseconds, or a string such as `'60s'`, `'5 min'`, `'1h'`.
 * @module
 */
import { ConfigurationError } from '../errors.js';

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

const DURATION = /^([0-9]+(?:\.[0-9]+)?) ?(ms|s|sec|m|min|h|hr)$/;

/**
 * Convert a {@link Duration} to a positive whole number of milliseconds.
 * @param duration - `1000`, `'1s'`, `'60 s'`, `'5min'`, `'1h'`
 * @param what - what the duration is for, used in the error message
 * @returns milliseconds, an integer >= 1
 * @throws ConfigurationError `invalid_duration` when it is not a positive whole number of ms
 */
export function toMilliseconds(duration: Duration, what = 'duration'): number {
  let ms: number;
  if (typeof duration === 'number') {
    ms = duration;
  } else if (typeof duration === 'string') {
    const match = DURATION.exec(duration.trim());
    ms = match ? Number(match[1]) * (UNIT_MS[match[2] as string] as number) : Number.NaN;
  } else {
    ms = Number.NaN;
  }
  if (!Number.isSafeInteger(ms) || ms < 1) {
    throw new ConfigurationError(
      'invalid_duration',
      `${what} must be a whole number of milliseconds >= 1 (a number, or a string such as '60s', '5 min', '1h'), got ${describe(duration)}.`,
    );
  }
  return ms;
}

/**
 * Format milliseconds the way the specification writes periods: `1 s`, `60 s`, `5 min`, `60 min`.
 * @param ms - a duration in milliseconds
 */
export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0 && ms >= 300_000) return `${ms / 60_000} min`;
  if (ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/** A value as it should appear in an error message. */
export function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
  if (
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    value === undefined ||
    value === null
  ) {
    return String(value);
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
