/**
 * The webhook service's steps of a delivery, given to the deliverer as its hooks: it signs with the
 * repository's secrets of subscriptions the index holds, records every attempt (which moves its
 * delivery in the outbox), holds back a subscription's deliveries while its receiver asks to wait
 * or its rate is spent, disables a subscription whose endpoint answers 410 or fails without a
 * success for too long, and raises the operational events of what it recorded.
 * @module
 */
import type { Clock } from '../../clock.js';
import { setBounded } from '../../internal/bounded-map.js';
import type { DeliveryAttempt } from '../delivery/attempt.js';
import { slowsDown } from '../delivery/endpoint-pause.js';
import type { DeliveryHooks } from '../delivery/hooks.js';
import type { DeliveryJob } from '../delivery/job.js';
import type { DeliveryOptions } from '../delivery/options.js';
import { isOperationalBody } from '../events/operational-events.js';
import type { EndpointHealth, SubscriptionRepository } from '../store/repository.js';
import type {
  DisabledReason,
  StoredSubscription,
  Subscription,
} from '../subscriptions/subscription.js';
import type { SubscriptionIndex } from '../subscriptions/subscription-index.js';
import type { DeliveryRates } from './delivery-rate.js';
import { attemptFacts, disabledFact, type OperationalFact } from './operational-facts.js';
import type { WebhookServiceDisabled } from './options.js';

/** What the service's hooks work with. @internal */
export interface ServiceDeliveryHooksSettings {
  readonly repository: SubscriptionRepository;
  readonly index: SubscriptionIndex;
  readonly clock: Clock;
  /** The user's `delivery.onAttempt`: told of an attempt once it is on record. */
  readonly onAttempt: DeliveryOptions['onAttempt'] | undefined;
  /** How long a retry waiting in a queue is left to it past its time, in ms. */
  readonly leaseMs: number;
  /** A failing streak this long (ms) … */
  readonly disableAfterMs: number;
  /** … over at least this many messages disables the subscription. */
  readonly disableMinMessages: number;
  /** Told of a subscription the service disabled. */
  readonly onDisabled: ((event: WebhookServiceDisabled) => void | Promise<void>) | undefined;
  /**
   * Publishes an operational event once the fact it tells is on record (rejects when it could not
   * be recorded: told to `onError`).
   */
  readonly raise: (fact: OperationalFact) => Promise<void>;
  /** Told of a write the log or a disable could not make. */
  readonly onError: (error: unknown) => void;
  /** Resolves once the service has started (its index loaded); never rejects. */
  readonly started: () => Promise<void>;
  /**
   * Brings the index up to the repository's latest revision, or to this instance's own write
   * (`stored`, applied as answered when it is the next revision); never rejects.
   */
  readonly catchUp: (stored?: StoredSubscription) => Promise<void>;
  /** Keeps the `rateLimit` of subscriptions that have one. */
  readonly rates: DeliveryRates;
}

/**
 * Make the hooks. A deleted or disabled subscription has no secret here (the index no longer holds
 * it), so a job still queued for it ends `no_secret`, recorded like any attempt: its delivery is
 * failed, and can be replayed once the subscription is enabled again. Secrets the repository
 * cannot read are told to `onError` at each attempt that meets them; when none of a
 * subscription's can be read the job ends `secret_unreadable`.
 * @internal
 */
export function serviceDeliveryHooks(settings: ServiceDeliveryHooksSettings): DeliveryHooks {
  const { repository, index, clock, onAttempt, onError } = settings;
  // Subscriptions whose receiver asked to slow down (429, 502, 503, 504), until when (ms).
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
      await settings.catchUp(stored);
      if (stored === undefined) return;
      const fact = disabledFact(stored);
      if (fact !== undefined) await raise(fact);
      await settings.onDisabled?.({ subscription: stored, reason, at });
    } catch (error) {
      onError(error);
    } finally {
      disabling.delete(id);
    }
  };
  // Told to onError, never thrown: the fact it tells is on record, the delivery goes on.
  const raise = (fact: OperationalFact): Promise<void> => settings.raise(fact).catch(onError);
  const failing = (health: EndpointHealth, at: number): boolean =>
    health.failingSince !== undefined &&
    at - health.failingSince >= settings.disableAfterMs &&
    health.failedMessages >= settings.disableMinMessages;
  // A receiver that asked one delivery to wait asks them all: its other jobs wait too, each put
  // back in the queue (no worker waits on it), until that delivery's next attempt (its Retry-After
  // within maxEndpointPauseMs, or else the schedule's wait).
  const pause = (attempt: DeliveryAttempt): void => {
    const { subscriptionId, status, nextAttemptAt } = attempt;
    if (slowsDown(status) && nextAttemptAt !== undefined) {
      paused.set(subscriptionId, Math.max(paused.get(subscriptionId) ?? 0, nextAttemptAt));
    } else if (attempt.outcome === 'delivered') {
      paused.delete(subscriptionId);
    }
  };
  const cache = new SecretCache();
  return {
    async secrets(id) {
      // A job may wait in a durable queue across a restart, or come from an instance whose change
      // this one has not applied yet: the index is loaded, and caught up once, before a miss counts.
      await settings.started();
      let held = index.get(id);
      if (held === undefined) {
        await settings.catchUp();
        held = index.get(id);
      }
      if (held === undefined) {
        cache.drop(id);
        return undefined;
      }
      const kept = cache.get(held);
      if (kept !== undefined) return kept;
      let unreadable = false;
      try {
        // Unreadable secrets beside readable ones are skipped (the others sign) and told.
        const secrets = await repository.signingSecrets(held.accountCode, id, clock.now(), {
          onUnreadable: (error) => {
            unreadable = true;
            onError(error);
          },
        });
        // Told at each attempt that meets them: a subscription with unreadable secrets is not kept.
        if (!unreadable) cache.keep(held, secrets);
        return secrets;
      } catch (error) {
        onError(error);
        throw error;
      }
    },
    // Read from the index after `secrets` (which caught it up): a change of the headers applied
    // to the index is sent from the next attempt on.
    headers: (id) => index.get(id)?.headers,
    gone: (id) => disable(id, 'endpoint_gone'),
    async recorded(attempt, job) {
      pause(attempt);
      const accountCode = accountOf(job, index);
      if (accountCode !== undefined) {
        try {
          const leaseUntil =
            attempt.nextAttemptAt === undefined
              ? undefined
              : attempt.nextAttemptAt + settings.leaseMs;
          const record = await repository.recordAttempt(
            accountCode,
            attempt,
            leaseUntil === undefined ? {} : { leaseUntil },
          );
          const { health } = record;
          // No operational event about the delivery of one: an endpoint failing them raises none.
          if (!operational(attempt, job)) {
            for (const fact of attemptFacts(accountCode, attempt, record)) await raise(fact);
          }
          if (failing(health, attempt.at)) {
            await disable(attempt.subscriptionId, 'endpoint_failing');
          }
        } catch (error) {
          onError(error);
        }
      }
      // Last, and what it throws the deliverer ignores: a failing logger changes nothing.
      await onAttempt?.(attempt);
    },
    // A pause first: a delivery its receiver holds back takes no turn of the rate. A subscription
    // with no rate costs one lookup in the index, and no promise.
    waitUntil(id, now) {
      const until = paused.get(id);
      if (until !== undefined) {
        if (until > now) return until;
        paused.delete(id);
      }
      const rate = index.get(id)?.rateLimit;
      return rate === undefined ? undefined : settings.rates.until(id, rate, now);
    },
  };
}

/** Whether the job is of an operational event (read with care: it may be no job at all). */
function operational(attempt: DeliveryAttempt, job: DeliveryJob): boolean {
  try {
    const body: unknown = job.body;
    return typeof body === 'string' && isOperationalBody(attempt.id, body);
  } catch {
    return false;
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
    if (typeof envelope !== 'object' || envelope === null || !('accountId' in envelope)) {
      return undefined;
    }
    const account = envelope.accountId;
    return typeof account === 'string' && account !== '' ? account : undefined;
  } catch {
    return undefined;
  }
}

/** The most subscriptions whose secret an instance keeps; past it, the one kept longest ago goes. */
const SECRETS_KEPT = 10_000;

/**
 * The signing secrets of subscriptions, kept per version of the subscription the index holds:
 * every change the index applies (a rotation is one: it takes a revision and is announced) puts a
 * new version in its place, so a secret kept is never used once the index has applied the change
 * that rotated it, as fast as it applies any other change. Only a lone
 * secret is kept: it is the newest, which signs until the next rotation. While a rotation's grace
 * lasts (older secrets beside it, each signing until its own end), the secrets are read at each
 * attempt, so that none signs past its end.
 */
class SecretCache {
  readonly #kept = new Map<
    string,
    { readonly version: Subscription; readonly secrets: readonly string[] }
  >();

  /** The secrets kept of this version of the subscription, if any. */
  get(version: Subscription): readonly string[] | undefined {
    const kept = this.#kept.get(version.id);
    return kept?.version === version ? kept.secrets : undefined;
  }

  /** Keep the secrets read for this version of the subscription, when there is one alone. */
  keep(version: Subscription, secrets: readonly string[]): void {
    const { id } = version;
    if (secrets.length !== 1) {
      this.#kept.delete(id);
      return;
    }
    setBounded(this.#kept, id, { version, secrets: Object.freeze([...secrets]) }, SECRETS_KEPT);
  }

  /** Forget the subscription: the index no longer holds it. */
  drop(id: string): void {
    this.#kept.delete(id);
  }
}
