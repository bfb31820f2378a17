/**
 * The memory repository's outbox: the messages published, the deliveries each owes, their leases
 * and replay rounds, and the idempotency keys.
 * @module
 */
import type { DeliveryAttempt } from '../delivery/attempt.js';
import type {
  DeliveryClaim,
  DeliveryKey,
  DeliveryStatus,
  KeptMessage,
  MessageKey,
  OutboxDelivery,
  OutboxMessage,
  PendingDelivery,
  ReplayPlan,
  ReplayResult,
  ReplaySelection,
} from './repository.js';
import { RELEASED_LEASE } from './repository.js';

/** One key for an account and an id: JSON keeps any two pairs apart. @internal */
export const keyOf = (accountCode: string, id: string): string => JSON.stringify([accountCode, id]);

/** One delivery a message owes, as the outbox holds it. */
export interface HeldDelivery {
  readonly message: OutboxMessage;
  readonly subscriptionId: string;
  readonly endpointUrl: string;
  status: DeliveryStatus;
  attempts: number;
  firstAttemptAt: number | undefined;
  replay: number;
  nextAttemptAt: number;
  leaseUntil: number;
  /** The failing streak of its subscription in which it last failed (counted once in it). */
  failedInStreak: number | undefined;
}

/**
 * The outbox of a MemorySubscriptionRepository, in this process's memory: the repository's methods
 * of the same names, answered at once. @internal
 */
export class MemoryOutbox {
  // The outbox: messages by account and id, each with its deliveries by subscription id.
  readonly #messages = new Map<
    string,
    { readonly message: OutboxMessage; readonly deliveries: Map<string, HeldDelivery> }
  >();
  readonly #pending = new Set<HeldDelivery>();
  // Idempotency keys by account and key: the message each holds, until it expires.
  readonly #keys = new Map<string, KeptMessage & { readonly expiresAt: number }>();
  // Each subscription's replay pacing: the paced-until time of its replayed deliveries (ReplayPlan).
  readonly #replayPaces = new Map<string, number>();

  recordMessage(
    message: OutboxMessage,
    deliveries: readonly OutboxDelivery[],
    options: { readonly leaseUntil: number; readonly key?: MessageKey | undefined },
  ): KeptMessage | undefined {
    const { key } = options;
    if (key === undefined) {
      this.#keep(message, deliveries, options.leaseUntil);
      return undefined;
    }
    const keyed = keyOf(message.accountCode, key.key);
    const held = this.#keys.get(keyed);
    if (held !== undefined && held.expiresAt > message.createdAt) {
      const { expiresAt: _, ...kept } = held;
      return kept;
    }
    this.#keep(message, deliveries, options.leaseUntil);
    const kept: KeptMessage = {
      messageId: message.id,
      fingerprint: key.fingerprint,
      deliveries: Object.freeze(deliveries.map((d) => d.subscriptionId)),
    };
    this.#keys.set(keyed, { ...kept, expiresAt: key.expiresAt });
    return kept;
  }

  deleteExpiredKeys(at: number, limit: number): number {
    let deleted = 0;
    for (const [key, held] of this.#keys) {
      if (deleted >= limit) break;
      if (held.expiresAt > at) continue;
      this.#keys.delete(key);
      deleted += 1;
    }
    return deleted;
  }

  /** Keep a message and its deliveries, unless the account has its id already. */
  #keep(message: OutboxMessage, deliveries: readonly OutboxDelivery[], leaseUntil: number): void {
    const key = keyOf(message.accountCode, message.id);
    if (this.#messages.has(key)) return;
    const kept = Object.freeze({ ...message });
    const held = new Map<string, HeldDelivery>();
    for (const { subscriptionId, endpointUrl } of deliveries) {
      if (held.has(subscriptionId)) continue;
      const delivery: HeldDelivery = {
        message: kept,
        subscriptionId,
        endpointUrl,
        status: 'pending',
        attempts: 0,
        firstAttemptAt: undefined,
        replay: 0,
        nextAttemptAt: message.createdAt,
        leaseUntil,
        failedInStreak: undefined,
      };
      held.set(subscriptionId, delivery);
      this.#pending.add(delivery);
    }
    this.#messages.set(key, { message: kept, deliveries: held });
  }

  claimDeliveries(claim: DeliveryClaim): readonly PendingDelivery[] {
    const due: HeldDelivery[] = [];
    for (const delivery of this.#pending) {
      if (delivery.nextAttemptAt > claim.dueBy) continue;
      if (
        claim.released === true
          ? delivery.leaseUntil !== RELEASED_LEASE
          : delivery.leaseUntil > claim.dueBy
      ) {
        continue;
      }
      due.push(delivery);
    }
    due.sort((a, b) => a.nextAttemptAt - b.nextAttemptAt);
    return due.slice(0, claim.limit).map((delivery) => {
      delivery.leaseUntil = claim.leaseUntil;
      return pendingOf(delivery);
    });
  }

  releaseLeases(dueBy: number): number {
    let released = 0;
    for (const delivery of this.#pending) {
      if (delivery.nextAttemptAt > dueBy || delivery.leaseUntil === RELEASED_LEASE) continue;
      delivery.leaseUntil = RELEASED_LEASE;
      released += 1;
    }
    return released;
  }

  releaseDeliveries(deliveries: readonly DeliveryKey[], leaseUntil: number): void {
    for (const { accountCode, messageId, subscriptionId } of deliveries) {
      const delivery = this.#messages
        .get(keyOf(accountCode, messageId))
        ?.deliveries.get(subscriptionId);
      if (delivery?.status === 'pending' && delivery.leaseUntil === leaseUntil) {
        delivery.leaseUntil = delivery.nextAttemptAt;
      }
    }
  }

  /**
   * Set the failed deliveries of a selection pending again, paced (see {@link ReplayPlan}).
   * @param enabled - whether a subscription of the account is enabled: only those are replayed
   */
  replay(
    accountCode: string,
    selection: ReplaySelection,
    plan: ReplayPlan,
    enabled: (subscriptionId: string) => boolean,
  ): ReplayResult {
    let chosen: HeldDelivery[];
    let found = true;
    if ('messageId' in selection) {
      const held = this.#messages.get(keyOf(accountCode, selection.messageId));
      found = held !== undefined;
      chosen = [...(held?.deliveries.values() ?? [])].filter(
        (d) => d.status === 'failed' && enabled(d.subscriptionId),
      );
    } else {
      chosen = [];
      if (enabled(selection.subscriptionId)) {
        for (const { message, deliveries } of this.#messages.values()) {
          if (message.accountCode !== accountCode || message.createdAt < selection.since) continue;
          const delivery = deliveries.get(selection.subscriptionId);
          if (delivery?.status === 'failed') chosen.push(delivery);
        }
      }
    }
    chosen.sort((a, b) => a.message.createdAt - b.message.createdAt);
    return this.#pace(accountCode, chosen, plan, found);
  }

  /**
   * Set the chosen deliveries (oldest message first) pending in their next round, each due as its
   * subscription's pacing says (see {@link ReplayPlan}), and move that pacing on.
   */
  #pace(
    accountCode: string,
    chosen: readonly HeldDelivery[],
    plan: ReplayPlan,
    found: boolean,
  ): ReplayResult {
    // Per subscription: its paced-until time before the call (no earlier than now), and how many
    // of the call's deliveries it has had so far.
    const starts = new Map<string, { readonly start: number; k: number }>();
    const due: PendingDelivery[] = [];
    let pacedUntil: number | undefined;
    for (const delivery of chosen) {
      const key = keyOf(accountCode, delivery.subscriptionId);
      let pace = starts.get(key);
      if (pace === undefined) {
        pace = { start: Math.max(this.#replayPaces.get(key) ?? plan.at, plan.at), k: 0 };
        starts.set(key, pace);
      }
      pace.k += 1;
      const at = Math.max(plan.at, pace.start + (pace.k - plan.inline) * plan.paceMs);
      const now = at <= plan.at && due.length < plan.inline;
      Object.assign(delivery, {
        status: 'pending',
        attempts: 0,
        firstAttemptAt: undefined,
        replay: delivery.replay + 1,
        nextAttemptAt: at,
        leaseUntil: now ? plan.leaseUntil : at,
      });
      this.#pending.add(delivery);
      if (now) due.push(pendingOf(delivery));
      else pacedUntil = Math.max(pacedUntil ?? at, at);
    }
    for (const [key, { start, k }] of starts) this.#replayPaces.set(key, start + k * plan.paceMs);
    return {
      found,
      total: chosen.length,
      due,
      ...(pacedUntil === undefined ? {} : { pacedUntil }),
    };
  }

  /** The delivery a message owes a subscription, as held. */
  delivery(
    accountCode: string,
    messageId: string,
    subscriptionId: string,
  ): HeldDelivery | undefined {
    return this.#messages.get(keyOf(accountCode, messageId))?.deliveries.get(subscriptionId);
  }

  /** A delivery after an attempt of its round. */
  afterAttempt(
    delivery: HeldDelivery,
    attempt: DeliveryAttempt,
    leaseUntil: number | undefined,
  ): void {
    if (attempt.outcome === 'retry') {
      const next = attempt.nextAttemptAt ?? attempt.at;
      delivery.attempts = Math.max(delivery.attempts, attempt.attempt);
      delivery.firstAttemptAt ??= attempt.at;
      delivery.nextAttemptAt = next;
      delivery.leaseUntil = leaseUntil ?? next;
      return;
    }
    delivery.status = attempt.outcome === 'delivered' ? 'delivered' : 'failed';
    this.#pending.delete(delivery);
  }

  deleteMessagesBefore(at: number, limit: number): number {
    let deleted = 0;
    for (const [key, { message, deliveries }] of this.#messages) {
      if (deleted >= limit) break;
      if (message.createdAt >= at) continue;
      if ([...deliveries.values()].some((d) => d.status === 'pending')) continue;
      this.#messages.delete(key);
      deleted += 1;
    }
    return deleted;
  }
}

function pendingOf(delivery: HeldDelivery): PendingDelivery {
  const { message, subscriptionId, endpointUrl, attempts, firstAttemptAt, replay } = delivery;
  return {
    accountCode: message.accountCode,
    messageId: message.id,
    subscriptionId,
    endpointUrl,
    body: message.body,
    attempts,
    ...(firstAttemptAt === undefined ? {} : { firstAttemptAt }),
    replay,
    nextAttemptAt: delivery.nextAttemptAt,
  };
}
