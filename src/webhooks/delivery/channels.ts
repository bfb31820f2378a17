/**
 * The `node:diagnostics_channel` channels (where the runtime has the module: elsewhere nothing is
 * published) of webhook delivery, their messages and the function
 * that publishes them. No message is built while a channel has no subscriber
 * (docs/observability.md).
 * @module
 */
import { diagnosticsChannel } from '../../internal/node-builtin.js';
import type { DeliveryAttempt, DeliveryFailure } from './attempt.js';

/**
 * The names of webhook delivery's diagnostics channels, all under `api-conventions:webhooks:`.
 * Subscribe with `diagnostics_channel.subscribe(webhookChannels.delivery, listener)`.
 */
export const webhookChannels = Object.freeze({
  /** Every attempt a deliverer reports, its retries included: a {@link DeliveryAttemptMessage}. */
  attempt: 'api-conventions:webhooks:attempt',
  /** A delivery's end (delivered, failed, disabled or lost): a {@link DeliveryEndMessage}. */
  delivery: 'api-conventions:webhooks:delivery',
} as const);

/** A message of {@link webhookChannels}`.attempt`: one attempt, as `onAttempt` is told of it. */
export interface DeliveryAttemptMessage {
  /** The attempt's report. */
  readonly attempt: DeliveryAttempt;
}

/** How a delivery ended: every attempt outcome but `retry`. */
export type DeliveryEndOutcome = Exclude<DeliveryAttempt['outcome'], 'retry'>;

/** A message of {@link webhookChannels}`.delivery`: a delivery that needs no more attempts. */
export interface DeliveryEndMessage {
  /**
   * `delivered` (a 2xx), `disabled` (the receiver answered 410), `failed` (given up; see `reason`)
   * or `lost` (the queue gave the job up; it is kept for replay).
   */
  readonly outcome: DeliveryEndOutcome;
  /** Why it failed or was disabled; undefined when delivered or lost. */
  readonly reason: DeliveryFailure | undefined;
  /** The report of its last attempt. */
  readonly attempt: DeliveryAttempt;
}

const attempts = diagnosticsChannel(webhookChannels.attempt);
const deliveries = diagnosticsChannel(webhookChannels.delivery);

/** Publish an attempt's report, and the delivery's end when it needs no more attempts. @internal */
export function reportAttempt(attempt: DeliveryAttempt): void {
  if (attempts.hasSubscribers) attempts.publish({ attempt } satisfies DeliveryAttemptMessage);
  const { outcome } = attempt;
  if (outcome === 'retry' || !deliveries.hasSubscribers) return;
  deliveries.publish({
    outcome,
    reason: attempt.reason,
    attempt,
  } satisfies DeliveryEndMessage);
}
