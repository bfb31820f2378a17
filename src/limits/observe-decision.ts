/**
 * The decision channel's publisher: `check` calls it only while the channel has a subscriber.
 * @module
 */
import { type DecisionMessage, type DecisionRequest, decisionChannel } from './channels.js';
import { holdsLease } from './decision.js';
import type { AdmittedDecision, Decision } from './decision-types.js';

/**
 * Publish the decision once it is made, and answer it as it is (a promise: one with the same
 * result, a rejection passed on unpublished).
 * @param started - `performance.now()` at the start of `check`
 * @internal
 */
export function observeDecision(
  decision: Decision | Promise<Decision>,
  request: DecisionRequest,
  started: number,
): Decision | Promise<Decision> {
  if (!(decision instanceof Promise)) {
    publishDecision(decision, request, started);
    return decision;
  }
  return decision.then((made) => {
    publishDecision(made, request, started);
    return made;
  });
}

function publishDecision(decision: Decision, request: DecisionRequest, started: number): void {
  const durationMs = performance.now() - started;
  const shadow = decision.allowed ? decision.shadow : undefined;
  const message: DecisionMessage = shadow
    ? {
        outcome: 'shadow_refused',
        policy: shadow.policy.name,
        reason: shadow.reason,
        retryAfterSeconds: shadow.retryAfterSeconds,
        lease: holdsLease(decision as AdmittedDecision),
        durationMs,
        request,
        decision,
      }
    : decision.allowed
      ? {
          outcome: 'admitted',
          policy: undefined,
          reason: undefined,
          retryAfterSeconds: undefined,
          lease: holdsLease(decision),
          durationMs,
          request,
          decision,
        }
      : {
          outcome: 'refused',
          policy: decision.policy?.name,
          reason: decision.reason,
          retryAfterSeconds: decision.retryAfterSeconds,
          lease: false,
          durationMs,
          request,
          decision,
        };
  decisionChannel.publish(message);
}
