/**
 * Which operational events a recorded fact raises: an attempt on record (failing, exhausted,
 * recovered) or a subscription the service disabled. Each event names the fact it is about, from
 * which its message id is made, so that raising the same fact again publishes nothing new.
 * @module
 */
import type { DeliveryAttempt } from '../delivery/attempt.js';
import type {
  AttemptExhaustedData,
  AttemptFailingData,
  AttemptRecoveredData,
  OperationalEventKind,
  SubscriptionDisabledData,
} from '../events/operational-events.js';
import type { AttemptRecord } from '../store/repository.js';
import type { StoredSubscription } from '../subscriptions/subscription.js';

/** An operational event to publish to the account. @internal */
export interface OperationalFact {
  /** The account it is published to. */
  readonly accountCode: string;
  /** Its kind. */
  readonly kind: OperationalEventKind;
  /** The subscription it is about, which never receives it. */
  readonly about: string;
  /** What tells this fact from every other of its kind: its message id is made from it. */
  readonly fact: readonly (string | number)[];
  /** The event's data. */
  readonly data:
    | SubscriptionDisabledData
    | AttemptExhaustedData
    | AttemptFailingData
    | AttemptRecoveredData;
}

/** The attempt whose failure raises `operational/attempt-failing`. */
export const FAILING_ATTEMPT = 3;

/**
 * The events an attempt on record raises: `attempt-failing` at the third failed attempt of a
 * message to a subscription, `attempt-exhausted` when its delivery is given up for its schedule
 * (`attempts_exhausted`, `max_age`), `attempt-recovered` at the success that ended a failing
 * streak. Each once per message, subscription and round (a replay is a round of its own); a
 * streak is told by its start and the attempt that ended it. @internal
 */
export function attemptFacts(
  accountCode: string,
  attempt: DeliveryAttempt,
  record: AttemptRecord,
): OperationalFact[] {
  const { id: messageId, subscriptionId, outcome, reason } = attempt;
  const round = attempt.replay ?? 0;
  const facts: OperationalFact[] = [];
  const about = { accountCode, about: subscriptionId };
  // A job the queue lost reports no attempt of its own: it is not a failed attempt.
  if (outcome !== 'delivered' && outcome !== 'lost' && attempt.attempt === FAILING_ATTEMPT) {
    facts.push({
      ...about,
      kind: 'operational/attempt-failing',
      fact: [subscriptionId, messageId, round],
      data: { subscriptionId, messageId, attempts: attempt.attempt },
    });
  }
  if (outcome === 'failed' && (reason === 'attempts_exhausted' || reason === 'max_age')) {
    facts.push({
      ...about,
      kind: 'operational/attempt-exhausted',
      fact: [subscriptionId, messageId, round],
      data: { subscriptionId, messageId, attempts: attempt.attempt, reason },
    });
  }
  const failingSince = record.ended?.failingSince;
  if (outcome === 'delivered' && failingSince !== undefined) {
    facts.push({
      ...about,
      kind: 'operational/attempt-recovered',
      // A streak is ended by one delivered attempt on record: told by its start and that attempt,
      // so that two streaks that started at one instant are two facts.
      fact: [subscriptionId, failingSince, messageId, round, attempt.attempt],
      data: {
        subscriptionId,
        messageId,
        failingSince: new Date(failingSince).toISOString(),
        failedMessages: record.ended?.failedMessages ?? 0,
      },
    });
  }
  return facts;
}

/**
 * The event a disable by the service raises, told by the revision the disable wrote; none for a
 * subscription disabled on request (its account asked for it). @internal
 */
export function disabledFact(stored: StoredSubscription): OperationalFact | undefined {
  const reason = stored.disabledReason;
  if (
    stored.status !== 'disabled' ||
    (reason !== 'endpoint_failing' && reason !== 'endpoint_gone')
  ) {
    return undefined;
  }
  return {
    accountCode: stored.accountCode,
    kind: 'operational/subscription-disabled',
    about: stored.id,
    fact: [stored.id, stored.revision],
    data: { subscriptionId: stored.id, reason },
  };
}
