/**
 * Reading a `Retry-After` header (RFC 9110 section 10.2.3): either delay-seconds (`120`) or an
 * HTTP-date (`Fri, 31 Dec 1999 23:59:59 GMT`, with the two obsolete date forms a recipient must
 * still accept), as a delay from the injected clock's now. Anything else is "unknown".
 * @module
 */

const DELAY_SECONDS = /^[0-9]+$/;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const TIME = '([0-9]{2}):([0-9]{2}):([0-9]{2})';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
// IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
const IMF_FIXDATE = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) ${MONTH} ([0-9]{4}) ${TIME} GMT$`,
);
// rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
const RFC850_DATE = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), ([0-9]{2})-${MONTH}-([0-9]{2}) ${TIME} GMT$`,
);
// asctime-date: Sun Nov  6 08:49:37 1994
const ASCTIME_DATE = new RegExp(
  `^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([0-9 ][0-9]) ${TIME} ([0-9]{4})$`,
);

/**
 * The delay a `Retry-After` value asks for, in milliseconds from `now`, or `undefined` when the
 * value is missing or unreadable (the caller then applies its own backoff: the specification
 * recommends one second). A date in the past is a delay of 0. Never throws: the result is always
 * `undefined` or a whole number of milliseconds from 0 to `Number.MAX_SAFE_INTEGER`.
 *
 * A date is measured from `now`: when `now` is not a finite number (a broken clock), no delay can
 * be measured from it and a date reads as `undefined`, "unknown". Delay-seconds do not depend on
 * `now` and are read all the same. A delay from a fractional `now` is rounded up to whole ms.
 * @param value - the header value (`null` or `undefined` when absent)
 * @param now - the current time in milliseconds, from the injected clock
 * @returns milliseconds to wait, or `undefined` for "unknown"
 * @example
 * ```ts
 * parseRetryAfter('3', clock.now()); // 3000
 * parseRetryAfter('Sun, 06 Nov 1994 08:49:40 GMT', Date.UTC(1994, 10, 6, 8, 49, 37)); // 3000
 * parseRetryAfter('soon', clock.now()); // undefined
 * ```
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (DELAY_SECONDS.test(text)) {
    // Beyond 2^53 ms the wait is effectively forever; keep it a safe integer.
    return Math.min(Number(text) * 1000, Number.MAX_SAFE_INTEGER);
  }
  // NaN or an infinite now would make the delay NaN or infinite.
  if (typeof now !== 'number' || !Number.isFinite(now)) return undefined;
  const at = parseHttpDate(text);
  if (at === undefined) return undefined;
  return Math.min(Math.max(0, Math.ceil(at - now)), Number.MAX_SAFE_INTEGER);
}

/**
 * An HTTP-date in any of its three forms as milliseconds since the epoch, or `undefined` (also for
 * anything that is not a string).
 * @param text - the date as sent
 */
export function parseHttpDate(text: string): number | undefined {
  if (typeof text !== 'string') return undefined;
  let match = IMF_FIXDATE.exec(text);
  if (match !== null) return utc(match[3], match[2], match[1], match[4], match[5], match[6]);
  match = RFC850_DATE.exec(text);
  if (match !== null) {
    // Two-digit years: RFC 9110 says a year that looks more than 50 years in the future is in the
    // past century; pinned here to 1970-2069 so the result does not depend on today's date.
    const yy = Number(match[3]);
    const year = String(yy < 70 ? 2000 + yy : 1900 + yy);
    return utc(year, match[2], match[1], match[4], match[5], match[6]);
  }
  match = ASCTIME_DATE.exec(text);
  if (match !== null) return utc(match[6], match[1], match[2], match[3], match[4], match[5]);
  return undefined;
}

function utc(
  year: string | undefined,
  month: string | undefined,
  day: string | undefined,
  hour: string | undefined,
  minute: string | undefined,
  second: string | undefined,
): number | undefined {
  const y = Number(year);
  const m = MONTHS.indexOf(month ?? '');
  const d = Number(day);
  const h = Number(hour);
  const min = Number(minute);
  const s = Number(second);
  // 23:59:60 is a leap second; anything else out of range is not a date.
  if (h > 23 || min > 59 || s > 60 || d < 1) return undefined;
  // setUTCFullYear, not Date.UTC, which would read the year 0050 as 1950.
  const date = new Date(0);
  date.setUTCFullYear(y, m, d);
  // A day the month does not have (31 Feb) would roll over into the next month: not a date.
  if (date.getUTCDate() !== d) return undefined;
  date.setUTCHours(h, min, s, 0);
  return date.getTime();
}
