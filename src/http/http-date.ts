/**
 * Writing an HTTP-date (RFC 9110 section 5.6.7) in its preferred form, the IMF-fixdate
 * (`Sun, 06 Nov 1994 08:49:37 GMT`). Reading one is in `retry-after.ts`.
 * @module
 */

// The last instant with a four-digit year: an IMF-fixdate has exactly four.
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59);

/**
 * Format an instant as an IMF-fixdate. Whole seconds (the fraction is dropped); instants outside
 * the years 1970 to 9999 are clamped to those bounds, so the result always has the fixed form.
 * @param ms - milliseconds since the Unix epoch
 * @example
 * ```ts
 * formatHttpDate(Date.UTC(1994, 10, 6, 8, 49, 37)); // 'Sun, 06 Nov 1994 08:49:37 GMT'
 * ```
 */
export function formatHttpDate(ms: number): string {
  const at = Number.isFinite(ms) ? Math.min(Math.max(ms, 0), LATEST) : 0;
  // toUTCString is the IMF-fixdate for four-digit years (ECMA-262 Date.prototype.toUTCString).
  return new Date(Math.floor(at / 1000) * 1000).toUTCString();
}
