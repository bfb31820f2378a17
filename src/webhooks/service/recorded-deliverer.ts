/**
 * The webhook service's deliverer: signs with the repository's secrets of subscriptions the index
 * holds, records every attempt (which moves its delivery in the outbox), holds back a
 * subscription's deliveries while its receiver asks to wait, and disables a subscription whose
 * endpoint answers 410 or fails without a success for too long.
 * @module
 */
import type { Clock } from '../../clock.js';
import type { DeliveryAttempt } from '../delivery/attempt.js';
import { createDeliverer } from '../delivery/create-deliverer.js';
import type { DeliveryJob } from '../delivery/job.js';
import type { Deliverer, DeliveryStep } from '../delivery/step.js';
import type { EndpointHealth, SubscriptionRepository } from '../store/repository.js';
import type { DisabledReason } from '../subscriptions/subscription.js';
import type { SubscriptionIndex } from '../subscriptions/subscription-index.js';
import type { WebhookServiceDeliveryOptions, WebhookServiceDisabled } from './options.js';

/** What the service's deliverer works with. @internal */
export interface ServiceDelivererSettings {
  readonly repository: SubscriptionRepository;
  readonly index: SubscriptionIndex;
  readonly clock: Clock;
  readonly delivery: {
    readonly [K in keyof WebhookServiceDeliveryOptions]?:
      | WebhookServiceDeliveryOptions[K]
      | undefined;
  };
  /** How long a retry waiting in a queue is left to it past its time, in ms. */
  readonly leaseMs: number;
  /** A failing streak this long (ms) … */
  readonly disableAfterMs: number;
  /** … over at least this many messages disables the subscription. */
  readonly disableMinMessages: number;
  /** Told of a subscription the service disabled. */
  readonly onDisabled: ((event: WebhookServiceDisabled) => void | Promise<void>) | undefined;
  /** Told of a write the log or a disable could not make. */
  readonly onError: (error: unknown) => void;
  /** Resolves once the service has started (its index loaded); never rejects. */
  readonly started: () => Promise<void>;
  /** Brings the index up to the repository's latest revision; never rejects. */
  readonly catchUp: () => Promise<void>;
}

/**
 * Make the deliverer. A deleted or disabled subscription has no secret here (the index no longer
 * holds it), so a job still queued for it ends `no_secret`, recorded like any attempt: its
 * delivery is failed, and can be replayed once the subscription is enabled again. Secrets the
 * repository cannot read are told to `onError` at each attempt that meets them; when none of a
 * subscription's can be read the job ends `secret_unreadable`.
 * @internal
 */
export function serviceDeliverer(settings: ServiceDelivererSettings): Deliverer {
  const { repository, index, clock, onError } = settings;
  const { onAttempt, ...delivery } = settings.delivery;
  // Subscriptions whose receiver asked to wait (429 or 503), until when (ms).
  const paused = new Map<string, number>();
  // Subscriptions this instance is disabling: one disable, one onDisabled, per streak.
  const disabling = new Set<string>();
  const disable = async (id: string, reason: DisabledReason): Promise<void> => {
    const held = index.get(id);
    if (held === undefined || disabling.has(id)) return;
    disabling.add(id);
    try {
      const at = clock.now();
      const stored = await repository.update(
        held.accountCode,
        id,
        { status: 'disabled', disabledReason: reason },
        at,
      );
      await settings.catchUp();
      if (stored !== undefined) await settings.onDisabled?.({ subscription: stored, reason, at });
    } catch (error) {
      onError(error);
    } finally {
      disabling.delete(id);
    }
  };
  const inner = createDeliverer({
    // Left-out options are undefined here, which createDeliverer reads as its defaults.
    ...(delivery as WebhookServiceDeliveryOptions),
    clock,
    secrets: async (id) => {
      // A job may wait in a durable queue across a restart, or come from an instance whose change
      // this one has not applied yet: the index is loaded, and caught up once, before a miss counts.
      await settings.started();
      let held = index.get(id);
      if (held === undefined) {
        await settings.catchUp();
        held = index.get(id);
      }
      if (held === undefined) return undefined;
      try {
        // Unreadable secrets beside readable ones are skipped (the others sign) and told.
        return await repository.signingSecrets(held.accountCode, id, clock.now(), {
          onUnreadable: onError,
        });
      } catch (error) {
        onError(error);
        throw error;
      }
    },
    onGone: (id) => disable(id, 'endpoint_gone'),
  });
  const failing = (health: EndpointHealth, at: number): boolean =>
    health.failingSince !== undefined &&
    at - health.failingSince >= settings.disableAfterMs &&
    health.failedMessages >= settings.disableMinMessages;
  const record = async (job: DeliveryJob, attempt: DeliveryAttempt): Promise<void> => {
    const accountCode = accountOf(job, index);
    if (accountCode !== undefined) {
      try {
        const leaseUntil =
          attempt.nextAttemptAt === undefined
            ? undefined
            : attempt.nextAttemptAt + settings.leaseMs;
        const { health } = await repository.recordAttempt(
          accountCode,
          attempt,
          leaseUntil === undefined ? {} : { leaseUntil },
        );
        if (failing(health, attempt.at)) await disable(attempt.subscriptionId, 'endpoint_failing');
      } catch (error) {
        onError(error);
      }
    }
    try {
      await onAttempt?.(attempt);
    } catch {
      // A failing logger must not change what happens to the delivery.
    }
  };
  // A receiver that asked one delivery to wait asks them all: its other jobs wait too, each put
  // back in the queue (no worker waits on it).
  const pause = (report: DeliveryAttempt): void => {
    const { subscriptionId, status, nextAttemptAt } = report;
    if ((status === 429 || status === 503) && nextAttemptAt !== undefined) {
      paused.set(subscriptionId, Math.max(paused.get(subscriptionId) ?? 0, nextAttemptAt));
    } else if (report.outcome === 'delivered') {
      paused.delete(subscriptionId);
    }
  };
  const waitUntil = (job: DeliveryJob): number | undefined => {
    const id = subscriptionOf(job);
    const until = id === undefined ? undefined : paused.get(id);
    if (until === undefined) return undefined;
    if (until > clock.now()) return until;
    paused.delete(id as string);
    return undefined;
  };
  return {
    async attempt(job): Promise<DeliveryStep> {
      const until = waitUntil(job);
      if (until !== undefined) return { done: false, job, at: until, deferred: true };
      const step = await inner.attempt(job);
      pause(step.report as DeliveryAttempt);
      await record(job, step.report as DeliveryAttempt);
      return step;
    },
    async lost(job, error) {
      const report = await (inner.lost as NonNullable<Deliverer['lost']>)(job, error);
      await record(job, report);
      return report;
    },
  };
}

function subscriptionOf(job: DeliveryJob): string | undefined {
  try {
    return typeof job?.subscriptionId === 'string' ? job.subscriptionId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The account of a job: from the index while it holds the subscription, else from the message's
 * envelope (`accountId`), which the service writes; a job that tells none is not logged.
 */
function accountOf(job: DeliveryJob, index: SubscriptionIndex): string | undefined {
  try {
    const held = index.get(job.subscriptionId);
    if (held !== undefined) return held.accountCode;
    const envelope: unknown = JSON.parse(job.body);
    const account = (envelope as { accountId?: unknown } | null)?.accountId;
    return typeof account === 'string' && account !== '' ? account : undefined;
  } catch {
    return undefined;
  }
}
