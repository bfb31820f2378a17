/**
 * How the gate tells of a failure: to `onError`, or in one line on `console.error` that says what
 * became of the request. A callback that throws is ignored: it must not take the request down.
 * @module
 */
import type { FailureOutcome, GatePhase, RateLimitErrorEvent } from './gate-options.js';

/**
 * Tell of one failure; never throws.
 * @param onError - the integrator's callback, if any
 * @param error - what was thrown or rejected
 * @param request - the framework's request
 * @param phase - where it happened
 * @param trackingId - the request's tracking id
 * @param failure - what the gate did about it
 */
export function reportFailure<R>(
  onError: ((event: RateLimitErrorEvent<R>) => void) | undefined,
  error: unknown,
  request: R,
  phase: GatePhase,
  trackingId: string,
  failure: FailureOutcome,
): void {
  const event: RateLimitErrorEvent<R> = { error, request, phase, trackingId, failure };
  try {
    if (onError === undefined) defaultReport(event);
    else onError(event);
  } catch {
    // Ignored: see the module's header.
  }
}

function defaultReport(event: RateLimitErrorEvent<unknown>): void {
  const message = event.error instanceof Error ? event.error.message : String(event.error);
  console.error(
    `api-conventions: rate limit ${event.phase} failed, request ${event.trackingId} ${outcome(event)}: ${message}`,
  );
}

/** What became of the request, for the default line. */
function outcome(event: RateLimitErrorEvent<unknown>): string {
  if (event.failure === 'anonymous') return 'limited as anonymous';
  if (event.failure === 'closed') {
    return event.phase === 'identify'
      ? 'answered 500 (not attributed)'
      : 'refused with 503 (fail closed)';
  }
  switch (event.phase) {
    case 'identify':
      return "let through unlimited (onIdentifyError: 'allow')";
    case 'tracking-id':
      return 'goes on under a random tracking id';
    case 'release':
      return 'was let through; its lease could not be given back and stays held until it expires';
    case 'handler':
      return 'was let through; its handler failed';
    default:
      return 'let through (fail open)';
  }
}
