/**
 * The webhook service's deliverer: signs with the repository's secrets of subscriptions the index
 * holds, keeps every attempt in the account's delivery log, and disables a subscription whose
 * receiver answers 410.
 * @module
 */
import type { Clock } from '../clock.js';
import type { Deliverer, DeliveryAttempt, DeliveryJob } from './delivery.js';
import { createDeliverer } from './delivery.js';
import type { WebhookServiceDeliveryOptions } from './service-options.js';
import type { SubscriptionIndex } from './subscription-index.js';
import type { SubscriptionRepository } from './subscription-repository.js';

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
  /** Told of a write the log or a disable could not make. */
  readonly onError: (error: unknown) => void;
  /** Resolves once the service has started (its index loaded); never rejects. */
  readonly started: () => Promise<void>;
  /** Brings the index up to the repository's latest revision; never rejects. */
  readonly catchUp: () => Promise<void>;
}

/**
 * Make the deliverer. A deleted or disabled subscription has no secret here (the index no longer
 * holds it), so a job still queued for it ends `no_secret`, and is logged like any attempt.
 * @internal
 */
export function serviceDeliverer(settings: ServiceDelivererSettings): Deliverer {
  const { repository, index, clock, onError } = settings;
  const { onAttempt, ...delivery } = settings.delivery;
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
      return held === undefined
        ? undefined
        : repository.signingSecrets(held.accountCode, id, clock.now());
    },
    onGone: async (id) => {
      const held = index.get(id);
      if (held === undefined) return;
      try {
        await repository.update(held.accountCode, id, { status: 'disabled' }, clock.now());
        await settings.catchUp();
      } catch (error) {
        onError(error);
      }
    },
  });
  const record = async (job: DeliveryJob, attempt: DeliveryAttempt): Promise<void> => {
    const accountCode = accountOf(job, index);
    if (accountCode !== undefined) {
      try {
        await repository.recordAttempt(accountCode, attempt);
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
  return {
    async attempt(job) {
      const step = await inner.attempt(job);
      await record(job, step.report);
      return step;
    },
    async lost(job, error) {
      const report = await (inner.lost as NonNullable<Deliverer['lost']>)(job, error);
      await record(job, report);
      return report;
    },
  };
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
