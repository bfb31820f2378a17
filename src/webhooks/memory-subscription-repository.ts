/** The in-memory subscription repository: for tests and one process that may forget. @module */
import type { DeliveryAttempt } from './delivery.js';
import type { StoredSubscription, Subscription } from './subscription.js';
import type {
  AttemptQuery,
  ChangeListener,
  DeliveryLogEntry,
  SubscriptionChange,
  SubscriptionChanges,
  SubscriptionPage,
  SubscriptionRepository,
} from './subscription-repository.js';

interface HeldSecret {
  readonly secret: string;
  readonly createdAt: number;
  expiresAt: number | undefined;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** One key for an account and an id: JSON keeps any two pairs apart. */
const keyOf = (accountCode: string, id: string): string => JSON.stringify([accountCode, id]);

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
  readonly #accounts = new Map<string, Map<string, StoredSubscription>>();
  // Secrets and changes by account and id (see `keyOf`): ids are unique only within an account.
  readonly #secrets = new Map<string, HeldSecret[]>();
  // The newest change of each id, deletes kept, so that changesSince tells every instance of them.
  readonly #changes = new Map<string, SubscriptionChange>();
  readonly #logs = new Map<string, DeliveryLogEntry[]>();
  // The last sequence of an account whose log retention emptied.
  readonly #lastSequence = new Map<string, number>();
  readonly #listeners = new Set<ChangeListener>();
  #revision = 0;

  async create(
    subscription: Subscription,
    secret: string,
    options: { readonly at: number; readonly maxPerAccount: number },
  ): Promise<StoredSubscription | undefined> {
    const held = this.#accounts.get(subscription.accountCode) ?? new Map();
    if (held.size >= options.maxPerAccount) return undefined;
    this.#accounts.set(subscription.accountCode, held);
    const stored = this.#record({
      ...copy(subscription),
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
    const { propertyIds: _, ...rest } = current;
    const propertyIds =
      changes.propertyIds === undefined ? current.propertyIds : changes.propertyIds;
    const next = this.#record({
      ...rest,
      ...(changes.endpointUrl === undefined ? {} : { endpointUrl: changes.endpointUrl }),
      ...(changes.events === undefined ? {} : { events: Object.freeze([...changes.events]) }),
      ...(propertyIds === null || propertyIds === undefined
        ? {}
        : { propertyIds: Object.freeze([...propertyIds]) }),
      ...(changes.status === undefined ? {} : { status: changes.status }),
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
    this.#announce({ revision: ++this.#revision, id, accountCode });
    return true;
  }

  async rotateSecret(
    accountCode: string,
    id: string,
    secret: string,
    options: { readonly at: number; readonly graceMs: number },
  ): Promise<boolean> {
    const secrets = this.#accounts.get(accountCode)?.has(id)
      ? this.#secrets.get(keyOf(accountCode, id))
      : undefined;
    if (secrets === undefined) return false;
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

  async recordAttempt(accountCode: string, attempt: DeliveryAttempt): Promise<DeliveryLogEntry> {
    const log = this.#logs.get(accountCode) ?? [];
    this.#logs.set(accountCode, log);
    // The error is copied too: the caller's object may change afterwards, the log must not.
    const entry = Object.freeze({
      ...attempt,
      ...(attempt.error === undefined ? {} : { error: Object.freeze({ ...attempt.error }) }),
      sequence: (log.at(-1)?.sequence ?? this.#lastSequence.get(accountCode) ?? 0) + 1,
    });
    log.push(entry);
    return entry;
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
    createdAt,
  };
}
