/**
 * The one place that decides a request for every adapter. Synchronous when everything it calls
 * is; it never throws or rejects (see docs/middleware.md).
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
   * @param path - the request target (the query string is ignored)
   * @param incomingTrackingId - the tracking id header, or a reader called only when needed
   */
  check(
    request: R,
    method: string,
    path: string,
    incomingTrackingId: string | null | undefined | TrackingIdReader<R>,
  ): GateVerdict | Promise<GateVerdict>;
  /** Report a failure after the decision (a throwing handler), as `open`; never throws. */
  report(error: unknown, request: R, phase: GatePhase, trackingId: string): void;
}

/**
 * Make the gate every adapter runs; use it to write an adapter for another framework.
 * @param options - the middleware's options
 * @param remoteAddress - reads a request's address, whose network (`anonymousNetworkKey`)
 *   is the default key of anonymous requests
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
