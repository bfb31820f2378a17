/**
 * A model of a subscription repository, written from the doc comments of `SubscriptionRepository`
 * and the specification's words (not from any repository's code): plain data per account, and what
 * each operation must answer. Revisions and log sequences are the repository's to choose; the
 * model keeps the order of changes and the values the repository reported, and says what must
 * follow from them.
 */
import type {
  AttemptQuery,
  DeliveryAttempt,
  StoredSubscription,
  Subscription,
  SubscriptionChanges,
  SubscriptionEvent,
} from '../../src/index.js';

/** A stored subscription before the repository has stamped its revision. */
export type Unstamped = Omit<StoredSubscription, 'revision'>;

/** One change as the model expects `changesSince` to tell it, in the order of the changes. */
export interface ModelChange {
  readonly id: string;
  readonly accountCode: string;
  /** The subscription after the change (its revision as the repository reported it); absent for a delete. */
  readonly subscription?: StoredSubscription;
}

interface HeldSecret {
  readonly secret: string;
  /** The first instant at which it no longer signs ("keeps signing until at + graceMs"). */
  until: number | undefined;
}

interface HeldSubscription {
  current: Unstamped;
  revision: number;
  secrets: HeldSecret[];
}

interface Account {
  readonly subscriptions: Map<string, HeldSubscription>;
  readonly log: (DeliveryAttempt & { readonly sequence: number })[];
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The copy of a subscription the repository must keep: later changes to the input do not reach it. */
function kept(subscription: Subscription): Subscription {
  const { id, accountCode, endpointUrl, events, propertyIds, createdAt } = subscription;
  const { description, rateLimit, headers, metadata, signatureType } = subscription;
  return {
    id,
    accountCode,
    endpointUrl,
    events: [...events],
    ...(propertyIds === undefined ? {} : { propertyIds: [...propertyIds] }),
    ...(description === undefined ? {} : { description }),
    ...(rateLimit === undefined ? {} : { rateLimit }),
    ...(headers === undefined ? {} : { headers: { ...headers } }),
    ...(metadata === undefined ? {} : { metadata: { ...metadata } }),
    ...(signatureType === undefined ? {} : { signatureType }),
    createdAt,
  };
}

/** "A field left out keeps its value", `null` removes it: the settings after a change. */
function changedSettings(
  current: Unstamped,
  changes: SubscriptionChanges,
): Partial<Pick<Unstamped, 'description' | 'rateLimit' | 'headers' | 'metadata'>> {
  const out: Record<string, unknown> = {};
  for (const name of ['description', 'rateLimit', 'headers', 'metadata'] as const) {
    const value = changes[name] === undefined ? current[name] : changes[name];
    if (value !== undefined && value !== null) {
      out[name] = typeof value === 'object' ? { ...value } : value;
    }
  }
  return out;
}

/** The model: every account's subscriptions, secrets and delivery log, and the order of changes. */
export class SubscriptionRepositoryModel {
  readonly #accounts = new Map<string, Account>();
  // The newest change of each id, in the order the changes happened (re-inserted on each change).
  readonly #changes = new Map<string, { accountCode: string; deleted: boolean }>();
  #lastRevision = -Infinity;

  #account(accountCode: string): Account {
    let account = this.#accounts.get(accountCode);
    if (account === undefined) {
      account = { subscriptions: new Map(), log: [] };
      this.#accounts.set(accountCode, account);
    }
    return account;
  }

  #held(accountCode: string, id: string): HeldSubscription | undefined {
    return this.#accounts.get(accountCode)?.subscriptions.get(id);
  }

  #changed(id: string, accountCode: string, deleted: boolean): void {
    this.#changes.delete(id);
    this.#changes.set(id, { accountCode, deleted });
  }

  /** Store it enabled, `updatedAt` its time, unless the account holds `maxPerAccount` already. */
  create(
    subscription: Subscription,
    secret: string,
    options: { readonly at: number; readonly maxPerAccount: number },
  ): Unstamped | undefined {
    const account = this.#account(subscription.accountCode);
    if (account.subscriptions.size >= options.maxPerAccount) return undefined;
    const current: Unstamped = {
      ...kept(subscription),
      // "defaulting to hmac-sha256"
      signatureType: subscription.signatureType ?? 'hmac-sha256',
      status: 'enabled',
      updatedAt: iso(options.at),
    };
    account.subscriptions.set(subscription.id, {
      current,
      revision: Number.NaN,
      secrets: [{ secret, until: undefined }],
    });
    this.#changed(subscription.id, subscription.accountCode, false);
    return current;
  }

  /**
   * Take the revision the repository reported for the change just made to `id`.
   * @returns why it cannot be right (revisions grow with every change), or undefined
   */
  stamp(accountCode: string, id: string, revision: number): string | undefined {
    const held = this.#held(accountCode, id);
    if (held === undefined) return `no subscription ${id} of ${accountCode} to stamp`;
    const wrong =
      Number.isSafeInteger(revision) && revision > this.#lastRevision
        ? undefined
        : `revision ${revision} does not grow past ${this.#lastRevision}`;
    held.revision = revision;
    this.#lastRevision = Math.max(this.#lastRevision, revision);
    return wrong;
  }

  /** Take a revision seen in a delete's change: later changes must have higher ones. */
  sawRevision(revision: number): void {
    this.#lastRevision = Math.max(this.#lastRevision, revision);
  }

  /** The account's subscription with this id (never another account's). */
  get(accountCode: string, id: string): StoredSubscription | undefined {
    const held = this.#held(accountCode, id);
    return held === undefined ? undefined : { ...held.current, revision: held.revision };
  }

  /** A page of the account's subscriptions in the order they were created, and how many it holds. */
  list(
    accountCode: string,
    page: { readonly offset: number; readonly limit: number },
  ): { items: StoredSubscription[]; totalItems: number } {
    const all = [...(this.#accounts.get(accountCode)?.subscriptions.values() ?? [])].map(
      (held) => ({ ...held.current, revision: held.revision }),
    );
    return { items: all.slice(page.offset, page.offset + page.limit), totalItems: all.length };
  }

  /** Change the account's subscription: fields left out keep their value, `propertyIds: null` is "all". */
  update(
    accountCode: string,
    id: string,
    changes: SubscriptionChanges,
    at: number,
  ): Unstamped | undefined {
    const held = this.#held(accountCode, id);
    if (held === undefined) return undefined;
    const { propertyIds: before, disabledReason, disabledAt, ...all } = held.current;
    const { description: _, rateLimit: __, headers: ___, metadata: ____, ...rest } = all;
    const propertyIds = changes.propertyIds === undefined ? before : changes.propertyIds;
    const status = changes.status ?? rest.status;
    // Disabling keeps why (`requested` unless told) and when; enabling clears both; a change that
    // leaves the status keeps them.
    const disabled =
      status === 'enabled'
        ? {}
        : changes.status === 'disabled'
          ? { disabledReason: changes.disabledReason ?? 'requested', disabledAt: iso(at) }
          : {
              disabledReason: disabledReason ?? 'requested',
              disabledAt: disabledAt ?? rest.updatedAt,
            };
    held.current = {
      ...rest,
      ...(changes.endpointUrl === undefined ? {} : { endpointUrl: changes.endpointUrl }),
      ...(changes.events === undefined ? {} : { events: [...changes.events] }),
      ...(propertyIds === null || propertyIds === undefined
        ? {}
        : { propertyIds: [...propertyIds] }),
      ...changedSettings(held.current, changes),
      ...(changes.signatureType === undefined ? {} : { signatureType: changes.signatureType }),
      status,
      ...disabled,
      updatedAt: iso(at),
    };
    held.revision = Number.NaN;
    this.#changed(id, accountCode, false);
    return held.current;
  }

  /** Delete the account's subscription and its secrets; whether there was one. */
  delete(accountCode: string, id: string): boolean {
    const account = this.#accounts.get(accountCode);
    if (account?.subscriptions.delete(id) !== true) return false;
    this.#changed(id, accountCode, true);
    return true;
  }

  /** Every secret it had signs until `at + graceMs` (an earlier expiry stays), the new one from now. */
  rotateSecret(
    accountCode: string,
    id: string,
    secret: string,
    options: { readonly at: number; readonly graceMs: number },
  ): boolean {
    const held = this.#held(accountCode, id);
    if (held === undefined) return false;
    const until = options.at + options.graceMs;
    for (const old of held.secrets) {
      if (old.until === undefined || old.until > until) old.until = until;
    }
    held.secrets.unshift({ secret, until: undefined });
    // A rotation is a change: the subscription takes the next revision (stamped by the caller).
    this.#changed(id, accountCode, false);
    return true;
  }

  /** The secrets that sign at `at`, newest first; none for another account's or a deleted id. */
  signingSecrets(accountCode: string, id: string, at: number): string[] {
    const held = this.#held(accountCode, id);
    if (held === undefined) return [];
    return held.secrets.filter((s) => s.until === undefined || at < s.until).map((s) => s.secret);
  }

  /** The instants at which a secret of the subscription stops signing, in order. */
  expiries(accountCode: string, id: string): number[] {
    const held = this.#held(accountCode, id);
    const until = (held?.secrets ?? []).flatMap((s) => (s.until === undefined ? [] : [s.until]));
    return [...new Set(until)].sort((a, b) => a - b);
  }

  /** The newest change of each id, in the order the changes happened. */
  changes(): ModelChange[] {
    return [...this.#changes].map(([id, { accountCode, deleted }]) => {
      if (deleted) return { id, accountCode };
      const subscription = this.get(accountCode, id);
      return subscription === undefined ? { id, accountCode } : { id, accountCode, subscription };
    });
  }

  /** Keep an attempt in the account's log, with the sequence the repository gave it. */
  recordAttempt(
    accountCode: string,
    attempt: DeliveryAttempt,
    sequence: number,
  ): string | undefined {
    const log = this.#account(accountCode).log;
    const last = log.at(-1)?.sequence ?? 0;
    log.push({ ...attempt, ...(attempt.error ? { error: { ...attempt.error } } : {}), sequence });
    return Number.isSafeInteger(sequence) && sequence > last
      ? undefined
      : `sequence ${sequence} does not grow past ${last} (from 1)`;
  }

  /**
   * The account's attempts newest first, at most `limit`: below `beforeSequence`, of the
   * subscription, with one of the outcomes, started at or after `since` and before `until`.
   */
  attempts(
    accountCode: string,
    query: AttemptQuery,
  ): (DeliveryAttempt & { readonly sequence: number })[] {
    const log = this.#accounts.get(accountCode)?.log ?? [];
    const { beforeSequence, subscriptionId, outcomes, since, until } = query;
    return [...log]
      .reverse()
      .filter(
        (entry) =>
          (beforeSequence === undefined || entry.sequence < beforeSequence) &&
          (subscriptionId === undefined || entry.subscriptionId === subscriptionId) &&
          (outcomes === undefined || outcomes.includes(entry.outcome)) &&
          (since === undefined || entry.at >= since) &&
          (until === undefined || entry.at < until),
      )
      .slice(0, query.limit);
  }

  /** The sequences in the account's log, oldest first. */
  sequences(accountCode: string): number[] {
    return (this.#accounts.get(accountCode)?.log ?? []).map((entry) => entry.sequence);
  }

  /** The account holding the id, if one does. */
  owner(id: string): string | undefined {
    for (const [accountCode, account] of this.#accounts) {
      if (account.subscriptions.has(id)) return accountCode;
    }
    return undefined;
  }

  /** The ids the account holds, in creation order. */
  ids(accountCode: string): string[] {
    return this.list(accountCode, { offset: 0, limit: Number.MAX_SAFE_INTEGER }).items.map(
      (s) => s.id,
    );
  }

  /**
   * The ids of the subscriptions that must receive the event: the event's account, enabled, a
   * pattern selecting the kind (the kind itself or `<topic>/*`), and no `propertyIds` or the
   * event's property among them (an event without a property reaches only those without).
   */
  match(event: SubscriptionEvent): string[] {
    const topic = event.kind.slice(0, event.kind.indexOf('/'));
    const held = this.#accounts.get(event.accountCode)?.subscriptions.values() ?? [];
    return [...held]
      .map((h) => h.current)
      .filter(
        (s) =>
          s.status === 'enabled' &&
          s.events.some((p) => p === event.kind || p === `${topic}/*`) &&
          (s.propertyIds === undefined ||
            (event.propertyId !== undefined && s.propertyIds.includes(event.propertyId))),
      )
      .map((s) => s.id)
      .sort();
  }
}
