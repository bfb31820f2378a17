/**
 * A receiver that asks its deliveries to slow down: which answers do (429, 502, 503, 504), what
 * its `Retry-After` asks for, and the bound on it, `maxEndpointPauseMs`.
 * @module
 */
import { parseRetryAfter } from '../../http/retry-after.js';
import { refused, wholeNumber } from '../../internal/options.js';
import type { TransportResponse } from './http-transport.js';
import type { RetrySchedule } from './retry-schedule.js';

/** The longest pause a receiver's `Retry-After` asks for that is kept, unless set: 1 hour. */
export const ENDPOINT_PAUSE_DEFAULT_MS = 3_600_000;

/**
 * The rule of `maxEndpointPauseMs`: a whole number of ms from 1; {@link pauseWithinAge} checks it
 * against the schedule's `maxAgeMs` once both are read. @internal
 */
export const ENDPOINT_PAUSE_OPTION = wholeNumber(1);

/**
 * Whether an answer asks the sender to slow down (Standard Webhooks, "Delivery success and
 * failure": throttle on 429, 502 and 504; a 503's `Retry-After` is taken into account).
 * @internal
 */
export function slowsDown(status: number | undefined): boolean {
  return status === 429 || status === 502 || status === 503 || status === 504;
}

/**
 * The wait a receiver's answer asks for, in ms, at most `maxPauseMs`; `undefined` when it asks for
 * none the schedule should follow: another status, no `Retry-After`, one that cannot be read
 * (negative, fractional, garbage), or one that asks for no wait at all (`0`, a date not in the
 * future), so the schedule's own wait applies.
 * @param now - when the answer came, in ms
 * @internal
 */
export function requestedPause(
  response: TransportResponse | undefined,
  now: number,
  maxPauseMs: number,
): number | undefined {
  if (response === undefined || !slowsDown(response.status)) return undefined;
  const asked = parseRetryAfter(response.headers?.['retry-after'], now);
  // A wait of 0 is no slowing down: followed, it would spend the delivery's attempts at once.
  if (asked === undefined || asked === 0) return undefined;
  return Math.min(asked, maxPauseMs);
}

/**
 * The bound, checked against the schedule it goes with: a pause longer than `maxAgeMs` could never
 * be waited out, since no attempt starts later than that after the first. Left out, the bound is
 * {@link ENDPOINT_PAUSE_DEFAULT_MS}, which a shorter `maxAgeMs` bounds in turn.
 * @param given - the option as read (`undefined` when left out)
 * @param name - its name for the refusal (`maxEndpointPauseMs`, `delivery.maxEndpointPauseMs`)
 * @throws ConfigurationError `invalid_option` for a bound above the schedule's `maxAgeMs`
 * @internal
 */
export function pauseWithinAge(
  given: number | undefined,
  schedule: RetrySchedule,
  name: string,
): number {
  if (given === undefined) return ENDPOINT_PAUSE_DEFAULT_MS;
  if (given > schedule.maxAgeMs) {
    const expected = `a whole number of ms from 1 to the schedule's maxAgeMs (${schedule.maxAgeMs})`;
    throw refused(name, expected, given);
  }
  return given;
}
