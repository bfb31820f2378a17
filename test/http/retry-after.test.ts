import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHttpDate, parseRetryAfter } from '../../src/index.js';

const NOV_6_1994 = Date.UTC(1994, 10, 6, 8, 49, 37);

describe('parseRetryAfter', () => {
  it('reads delay-seconds as that many seconds, whatever the clock says', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 ** 9 }),
        fc.integer({ min: 0, max: 2 ** 42 }),
        (seconds, now) => {
          expect(parseRetryAfter(String(seconds), now)).toBe(seconds * 1000);
          expect(parseRetryAfter(` ${seconds} `, now)).toBe(seconds * 1000);
        },
      ),
    );
  });

  it('reads an HTTP-date as the time from the injected now to that date, and a past date as 0', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_000_000_000 }),
        fc.integer({ min: -100_000, max: 100_000 }),
        (dateSeconds, offsetMs) => {
          const at = dateSeconds * 1000;
          const now = at - offsetMs;
          expect(parseRetryAfter(new Date(at).toUTCString(), now)).toBe(Math.max(0, offsetMs));
        },
      ),
    );
  });

  it('accepts the three date forms of RFC 9110 for the same instant', () => {
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(NOV_6_1994);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT')).toBe(NOV_6_1994);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).toBe(NOV_6_1994);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:40 GMT', NOV_6_1994)).toBe(3000);
  });

  it('reads the two-digit years of the obsolete RFC 850 form as 1970 to 2069', () => {
    expect(parseHttpDate('Thursday, 01-Jan-70 00:00:00 GMT')).toBe(Date.UTC(1970, 0, 1));
    expect(parseHttpDate('Friday, 31-Dec-99 23:59:59 GMT')).toBe(
      Date.UTC(1999, 11, 31, 23, 59, 59),
    );
    expect(parseHttpDate('Saturday, 01-Jan-00 00:00:00 GMT')).toBe(Date.UTC(2000, 0, 1));
    expect(parseHttpDate('Tuesday, 31-Dec-69 23:59:59 GMT')).toBe(
      Date.UTC(2069, 11, 31, 23, 59, 59),
    );
  });

  it('answers unknown for a missing or unreadable value, so the caller backs off its own way', () => {
    for (const value of [
      null,
      undefined,
      '',
      'soon',
      '-1',
      '1.5',
      '+3',
      '0x10',
      '3 seconds',
      'Sun, 31 Feb 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 25:49:37 GMT',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      '2024-01-01T00:00:00Z',
    ]) {
      expect(parseRetryAfter(value, 0)).toBeUndefined();
    }
  });

  it('never throws and never gives a negative or non-integer delay', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 0, max: 2 ** 42 }), (value, now) => {
        const delay = parseRetryAfter(value, now);
        if (delay !== undefined) {
          expect(Number.isSafeInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
        }
      }),
    );
    expect(parseRetryAfter('9'.repeat(400), 0)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('answers undefined or a whole number of ms from 0 to 2^53 - 1 whatever now is: a date from a now that is not finite is unknown', () => {
    const anyNow = fc.oneof(
      fc.double(),
      fc.integer(),
      fc.constantFrom(
        Number.NaN,
        Number.POSITIVE_INFINITY,
        Number.NEGATIVE_INFINITY,
        -1e300,
        1e300,
      ),
    );
    const anyValue = fc.oneof(
      fc.string(),
      fc.integer({ min: 0, max: 253_402_300_799 }).map((s) => new Date(s * 1000).toUTCString()),
      fc.nat().map(String),
    );
    fc.assert(
      fc.property(anyValue, anyNow, (value, now) => {
        const delay = parseRetryAfter(value, now);
        if (delay !== undefined) {
          expect(Number.isSafeInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
        }
        if (!Number.isFinite(now) && parseHttpDate(value) !== undefined) {
          expect(delay).toBeUndefined();
        }
      }),
    );
    const date = 'Sun, 06 Nov 1994 08:49:37 GMT';
    for (const now of [Number.NaN, undefined, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY]) {
      expect(parseRetryAfter(date, now as number)).toBeUndefined();
      // Delay-seconds do not depend on now.
      expect(parseRetryAfter('3', now as number)).toBe(3000);
    }
    // A fractional now: rounded up, never less than the date asks.
    expect(parseRetryAfter(date, NOV_6_1994 - 2500.5)).toBe(2501);
  });

  it('reads anything that is not a string as no date, without throwing', () => {
    for (const value of [
      Symbol('x'),
      {
        toString: () => {
          throw new Error('boom');
        },
      },
      5,
      null,
    ]) {
      expect(parseHttpDate(value as never)).toBeUndefined();
    }
  });
});
