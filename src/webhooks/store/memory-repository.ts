/** The in-memory subscription repository: for tests and one process that may forget. @module */
import type { DeliveryAttempt } from '../delivery/attempt.js';
import type {
  StoredSubscription,
  Subscription,
  SubscriptionChange,
  SubscriptionChanges,
} from '../subscriptions/subscription.js';
import { keyOf, MemoryOutbox } from './memory-outbox.js';
import type {
  AttemptQuery,
  AttemptRecord,
  ChangeListener,
  DeliveryClaim,
  DeliveryKey,
  DeliveryLogEntry,
  DeliveryStatus,
  EndpointHealth,
  KeptMessage,
  MessageKey,
  OutboxDelivery,
  OutboxMessage,
  PendingDelivery,
  ReplayPlan,
  ReplayResult,
  ReplaySelection,
  RotateSecretOptions,
  StoreSubscriptionOptions,
  SubscriptionPage,
  SubscriptionRepository,
} from './repository.js';

/** A subscription's failing streak: `streak` numbers it, so a delivery is counted once in each. */
interface HeldHealth {
  streak: number;
  failingSince: number | undefined;
  failedMessages: number;
}

interface HeldSecret {
  readonly secret: string;
  readonly createdAt: number;
  expiresAt: number | undefined;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Subscriptions, secrets and the delivery log in this process's memory; a restart forgets them.
 * Changes are told to this process's watchers at once.
 * @example
 * ```ts
 * const service = createWebhookService({
 *   repository: new MemorySubscriptionRepository(),
 *   identify: (request) => ({ clientId: 'c', accountCode: 'ACME' }),
 * });
 * ```
 */
export class MemorySubscriptionRepository implements SubscriptionRepository {
  /** Memory is this process's alone. */
  readonly exclusive = true;
  readonly #accounts = new Map<string, Map<string, StoredSubscription>>();
  // Secrets and changes by account and id (see `keyOf`): ids are unique only within an account.
  readonly #secrets = new Map<string, HeldSecret[]>();
  // The newest change of each id, deletes kept, so that changesSince tells every instance of them.
  readonly #changes = new Map<string, SubscriptionChange>();
  readonly #logs = new Map<string, DeliveryLogEntry[]>();
  // The last sequence of an account whose log retention emptied.
  readonly #lastSequence = new Map<string, number>();
  readonly #listeners = new Set<ChangeListener>();
  readonly #outbox = new MemoryOutbox();
  readonly #health = new Map<string, HeldHealth>();
  #streaks = 0;
  #revision = 0;

  async create(
    subscription: Subscription,
    secret: string,
    options: StoreSubscriptionOptions,
  ): Promise<StoredSubscription | undefined> {
    const held = this.#accounts.get(subscription.accountCode) ?? new Map();
    if (held.size >= options.maxPerAccount) return undefined;
    this.#accounts.set(subscription.accountCode, held);
    const stored = this.#record({
      ...copy(subscription),
      signatureType: subscription.signatureType ?? 'hmac-sha256',
      ...(options.publicKey === undefined ? {} : { publicKey: options.publicKey }),
      status: 'enabled',
      updatedAt: iso(options.at),
      revision: 0,
    });
    held.set(stored.id, stored);
    this.#secrets.set(keyOf(stored.accountCode, stored.id), [
      { secret, createdAt: options.at, expiresAt: undefined },
    ]);
    return stored;
  }

  async get(accountCode: string, id: string): Promise<StoredSubscription | undefined> {
    return this.#accounts.get(accountCode)?.get(id);
  }

  async list(
    accountCode: string,
    page: { readonly offset: number; readonly limit: number },
  ): Promise<SubscriptionPage> {
    // A Map keeps insertion order, and an update keeps a subscription's place: creation order.
    const held = [...(this.#accounts.get(accountCode)?.values() ?? [])];
    return { items: held.slice(page.offset, page.offset + page.limit), totalItems: held.length };
  }

  async update(
    accountCode: string,
    id: string,
    changes: SubscriptionChanges,
    at: number,
  ): Promise<StoredSubscription | undefined> {
    const held = this.#accounts.get(accountCode);
    const current = held?.get(id);
    if (held === undefined || current === undefined) return undefined;
    const { propertyIds: _, disabledReason: __, disabledAt: ___, ...rest } = current;
    const propertyIds =
      changes.propertyIds === undefined ? current.propertyIds : changes.propertyIds;
    const status = changes.status ?? current.status;
    if (changes.status === 'enabled') this.#health.delete(keyOf(accountCode, id));
    const next = this.#record({
      ...withoutRemoved(rest, changes),
      ...(changes.endpointUrl === undefined ? {} : { endpointUrl: changes.endpointUrl }),
      ...(changes.events === undefined ? {} : { events: Object.freeze([...changes.events]) }),
      ...(propertyIds === null || propertyIds === undefined
        ? {}
        : { propertyIds: Object.freeze([...propertyIds]) }),
      ...settingsOf(changes),
      ...(changes.signatureType === undefined ? {} : { signatureType: changes.signatureType }),
      status,
      ...(status === 'enabled'
        ? {}
        : changes.status === 'disabled'
          ? { disabledReason: changes.disabledReason ?? 'requested', disabledAt: iso(at) }
          : {
              disabledReason: current.disabledReason ?? 'requested',
              disabledAt: current.disabledAt ?? current.updatedAt,
            }),
      updatedAt: iso(at),
    });
    held.set(id, next);
    return next;
  }

  async delete(accountCode: string, id: string, _at: number): Promise<boolean> {
    const held = this.#accounts.get(accountCode);
    if (held === undefined || !held.delete(id)) return false;
    if (held.size === 0) this.#accounts.delete(accountCode);
    this.#secrets.delete(keyOf(accountCode, id));
    this.#health.delete(keyOf(accountCode, id));
    this.#announce({ revision: ++this.#revision, id, accountCode });
    return true;
  }

  async rotateSecret(
    accountCode: string,
    id: string,
    secret: string,
    options: RotateSecretOptions,
  ): Promise<boolean> {
    const held = this.#accounts.get(accountCode);
    const current = held?.get(id);
    const secrets = current === undefined ? undefined : this.#secrets.get(keyOf(accountCode, id));
    if (held === undefined || current === undefined || secrets === undefined) return false;
    // A change like any other: a revision, announced, so that cached secrets are dropped.
    const { publicKey: _, ...rest } = current;
    const { signatureType = current.signatureType } = options;
    held.set(
      id,
      this.#record({
        ...rest,
        ...(options.publicKey === undefined ? {} : { publicKey: options.publicKey }),
        signatureType,
        ...(signatureType === current.signatureType ? {} : { updatedAt: iso(options.at) }),
      }),
    );
    const until = options.at + options.graceMs;
    for (const held of secrets) {
      if (held.expiresAt === undefined || held.expiresAt > until) held.expiresAt = until;
    }
    secrets.unshift({ secret, createdAt: options.at, expiresAt: undefined });
    // Expired secrets sign nothing again: they are dropped here rather than kept for ever.
    this.#secrets.set(
      keyOf(accountCode, id),
      secrets.filter((s) => s.expiresAt === undefined || s.expiresAt > options.at),
    );
    return true;
  }

  async signingSecrets(accountCode: string, id: string, at: number): Promise<readonly string[]> {
    if (!this.#accounts.get(accountCode)?.has(id)) return [];
    return (this.#secrets.get(keyOf(accountCode, id)) ?? [])
      .filter((s) => s.expiresAt === undefined || s.expiresAt > at)
      .map((s) => s.secret);
  }

  async changesSince(revision: number, limit: number): Promise<readonly SubscriptionChange[]> {
    const after: SubscriptionChange[] = [];
    for (const change of this.#changes.values()) if (change.revision > revision) after.push(change);
    return after.sort((a, b) => a.revision - b.revision).slice(0, limit);
  }

  async watch(listener: ChangeListener): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    listener.onReconnect();
    return async () => {
      this.#listeners.delete(listener);
    };
  }

  async recordAttempt(
    accountCode: string,
    attempt: DeliveryAttempt,
    options: { readonly leaseUntil?: number } = {},
  ): Promise<AttemptRecord> {
    const log = this.#logs.get(accountCode) ?? [];
    this.#logs.set(accountCode, log);
    // The error is copied too: the caller's object may change afterwards, the log must not.
    const entry = Object.freeze({
      ...attempt,
      ...(attempt.error === undefined ? {} : { error: Object.freeze({ ...attempt.error }) }),
      sequence: (log.at(-1)?.sequence ?? this.#lastSequence.get(accountCode) ?? 0) + 1,
    });
    log.push(entry);
    const delivery = this.#outbox.delivery(accountCode, attempt.id, attempt.subscriptionId);
    const live = this.#accounts.get(accountCode)?.has(attempt.subscriptionId) === true;
    const health = live ? this.#streak(keyOf(accountCode, attempt.subscriptionId)) : undefined;
    let ended: EndpointHealth | undefined;
    if (health !== undefined && attempt.durationMs !== undefined) {
      if (attempt.outcome === 'delivered') {
        if (health.failingSince !== undefined) {
          ended = { failingSince: health.failingSince, failedMessages: health.failedMessages };
        }
        health.streak = ++this.#streaks;
        health.failingSince = undefined;
        health.failedMessages = 0;
      } else {
        health.failingSince ??= attempt.at;
        if (delivery !== undefined && delivery.failedInStreak !== health.streak) {
          delivery.failedInStreak = health.streak;
          health.failedMessages += 1;
        } else if (delivery === undefined) {
          health.failedMessages += 1;
        }
      }
    }
    if (
      delivery !== undefined &&
      delivery.status === 'pending' &&
      delivery.replay === (attempt.replay ?? 0)
    ) {
      this.#outbox.afterAttempt(delivery, attempt, options.leaseUntil);
    }
    return {
      entry,
      health:
        health?.failingSince === undefined
          ? { failedMessages: 0 }
          : { failingSince: health.failingSince, failedMessages: health.failedMessages },
      ...(ended === undefined ? {} : { ended }),
    };
  }

  #streak(key: string): HeldHealth {
    let health = this.#health.get(key);
    if (health === undefined) {
      health = { streak: ++this.#streaks, failingSince: undefined, failedMessages: 0 };
      this.#health.set(key, health);
    }
    return health;
  }

  async recordMessage(
    message: OutboxMessage,
    deliveries: readonly OutboxDelivery[],
    options: { readonly leaseUntil: number; readonly key?: MessageKey | undefined },
  ): Promise<KeptMessage | undefined> {
    return this.#outbox.recordMessage(message, deliveries, options);
  }

  async deleteExpiredKeys(at: number, limit: number): Promise<number> {
    return this.#outbox.deleteExpiredKeys(at, limit);
  }

  async claimDeliveries(claim: DeliveryClaim): Promise<readonly PendingDelivery[]> {
    return this.#outbox.claimDeliveries(claim);
  }

  async releaseLeases(dueBy: number): Promise<number> {
    return this.#outbox.releaseLeases(dueBy);
  }

  async releaseDeliveries(deliveries: readonly DeliveryKey[], leaseUntil: number): Promise<void> {
    this.#outbox.releaseDeliveries(deliveries, leaseUntil);
  }

  async replay(
    accountCode: string,
    selection: ReplaySelection,
    plan: ReplayPlan,
  ): Promise<ReplayResult> {
    const live = this.#accounts.get(accountCode);
    return this.#outbox.replay(
      accountCode,
      selection,
      plan,
      (id) => live?.get(id)?.status === 'enabled',
    );
  }

  async deliveryStatus(
    accountCode: string,
    messageId: string,
    subscriptionId: string,
  ): Promise<DeliveryStatus | undefined> {
    return this.#outbox.delivery(accountCode, messageId, subscriptionId)?.status;
  }

  async deleteMessagesBefore(at: number, limit: number): Promise<number> {
    return this.#outbox.deleteMessagesBefore(at, limit);
  }

  async attempts(accountCode: string, query: AttemptQuery): Promise<readonly DeliveryLogEntry[]> {
    const log = this.#logs.get(accountCode) ?? [];
    const { beforeSequence, subscriptionId, outcomes, since, until } = query;
    const found: DeliveryLogEntry[] = [];
    // The log is in ascending sequences: read from its end.
    for (let i = log.length - 1; i >= 0 && found.length < query.limit; i--) {
      const entry = log[i] as DeliveryLogEntry;
      if (beforeSequence !== undefined && entry.sequence >= beforeSequence) continue;
      if (subscriptionId !== undefined && entry.subscriptionId !== subscriptionId) continue;
      if (outcomes !== undefined && !outcomes.includes(entry.outcome)) continue;
      if (since !== undefined && entry.at < since) continue;
      if (until !== undefined && entry.at >= until) continue;
      found.push(entry);
    }
    return found;
  }

  async deleteAttemptsBefore(at: number, limit: number): Promise<number> {
    let deleted = 0;
    for (const [accountCode, log] of this.#logs) {
      if (deleted >= limit) break;
      const kept = log.filter((entry) => entry.at >= at || ++deleted > limit);
      deleted = Math.min(deleted, limit);
      // The last sequence stays known, so that the next one still grows past it.
      if (kept.length === 0 && log.length > 0)
        this.#lastSequence.set(accountCode, log.at(-1)!.sequence);
      this.#logs.set(accountCode, kept);
    }
    return deleted;
  }

  /** Stamp the next revision on a subscription, keep the change and tell the watchers. */
  #record(subscription: StoredSubscription): StoredSubscription {
    const stored = Object.freeze({ ...subscription, revision: ++this.#revision });
    this.#announce({
      revision: stored.revision,
      id: stored.id,
      accountCode: stored.accountCode,
      subscription: stored,
    });
    return stored;
  }

  #announce(change: SubscriptionChange): void {
    this.#changes.set(keyOf(change.accountCode, change.id), change);
    for (const listener of this.#listeners) {
      try {
        listener.onChange(change.revision);
      } catch {
        // A listener's failure is its own; the change is kept.
      }
    }
  }
}

/** A plain copy with frozen arrays: what a caller passed can change afterwards, this cannot. */
function copy(subscription: Subscription): Subscription {
  const { id, accountCode, endpointUrl, events, propertyIds, createdAt } = subscription;
  return {
    id,
    accountCode,
    endpointUrl,
    events: Object.freeze([...events]),
    ...(propertyIds === undefined ? {} : { propertyIds: Object.freeze([...propertyIds]) }),
    ...settingsOf(subscription),
    createdAt,
  };
}

type Settings = Pick<Subscription, 'description' | 'rateLimit' | 'headers' | 'metadata'>;

/** The optional settings a create or a change sets (not `null`), copied and frozen. */
function settingsOf(from: SubscriptionChanges | Subscription): Settings {
  const { description, rateLimit, headers, metadata } = from;
  return {
    ...(description === undefined || description === null ? {} : { description }),
    ...(rateLimit === undefined || rateLimit === null ? {} : { rateLimit }),
    ...(headers === undefined || headers === null
      ? {}
      : { headers: Object.freeze({ ...headers }) }),
    ...(metadata === undefined || metadata === null
      ? {}
      : { metadata: Object.freeze({ ...metadata }) }),
  };
}

/** The subscription without the settings a change removes (`null`). */
function withoutRemoved<S extends Settings>(current: S, changes: SubscriptionChanges): S {
  const kept = { ...current };
  for (const name of ['description', 'rateLimit', 'headers', 'metadata'] as const) {
    if (changes[name] === null) delete kept[name];
  }
  return kept;
}
