/**
 * The one place that decides a request for every framework adapter: skip, identify, ask the
 * limiter, and turn the answer into a verdict (go on with these headers and this lease, or write
 * this response). No failure is ever a 429, and none switches limiting off unasked (see
 * docs/middleware.md). Synchronous when everything it calls is (the memory store), a promise
 * otherwise; it never throws or rejects, and neither does a verdict's `release`.
 * @module
 */
import { type GatePhase, type RateLimitOptions, readGateOptions } from './gate-options.js';
import { reportFailure } from './gate-report.js';
import { GateRun, type GateVerdict, type TrackingIdReader } from './gate-run.js';
import type { MaybePromise } from './maybe-promise.js';

export type {
  AnonymousOptions,
  CheckingLimiter,
  FailureMode,
  FailureOutcome,
  GatePhase,
  IdentifyErrorMode,
  Identity,
  RateLimitErrorEvent,
  RateLimitOptions,
} from './gate-options.js';
export { ANONYMOUS_CLIENT_ID } from './gate-options.js';
export type { GateVerdict, TrackingIdReader } from './gate-run.js';

/** A gate, made once per middleware. */
export interface RateLimitGate<R> {
  /** The tracking id header, lower case, for the adapter to read from the request. */
  readonly trackingIdHeader: string;
  /**
   * Decide one request.
   * @param request - the framework's request, handed to `identify` and `skip`
   * @param method - the HTTP method
   * @param path - the request target (the query string is ignored)
   * @param incomingTrackingId - the request's tracking id header, if any, or a function that
   * reads it, called (at most once) only when the tracking id is needed
   */
  check(
    request: R,
    method: string,
    path: string,
    incomingTrackingId: string | null | undefined | TrackingIdReader<R>,
  ): GateVerdict | Promise<GateVerdict>;
  /**
   * Report a failure after the decision (a throwing handler); never throws. The request was let
   * through: the event's `failure` is `open`.
   */
  report(error: unknown, request: R, phase: GatePhase, trackingId: string): void;
}

/**
 * Make the gate that every adapter runs. Adapters are its only users; use it to write an adapter
 * for a framework the library does not cover.
 * @param options - limiter, identify, skip, failure mode, error callback, tracking id and headers
 * @param remoteAddress - reads the address a request came from: the default key of anonymous
 *   requests (see {@link AnonymousOptions.key}); without it they all share one key
 * @throws ConfigurationError `invalid_option` or `invalid_header_name` for bad options
 */
export function createRateLimitGate<R, T extends string = string>(
  options: RateLimitOptions<R, T>,
  remoteAddress?: (request: R) => string | null | undefined,
): RateLimitGate<R> {
  const gate = readGateOptions(options as RateLimitOptions<R, string>, remoteAddress);
  return {
    trackingIdHeader: gate.header,
    check: (request, method, path, incoming): MaybePromise<GateVerdict> =>
      new GateRun(gate, request, method, path, incoming).run(),
    report: (error, request, phase, trackingId) =>
      reportFailure(gate.onError, error, request, phase, trackingId, 'open'),
  };
}
