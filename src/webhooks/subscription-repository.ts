/**
 * Where subscriptions and their signing secrets are kept: the interface every repository
 * implements (memory here, PostgreSQL in `api-conventions/postgres`). Every operation names the
 * account: none of one account can read, change or delete a subscription of another. @module
 */
import type { AttemptOutcome, DeliveryAttempt } from './delivery.js';
import type {
  StoredSubscription,
  Subscription,
  SubscriptionRequest,
  SubscriptionStatus,
} from './subscription.js';

/** What a change may set; a field left out keeps its value. */
export interface SubscriptionChanges {
  /** A new endpoint, normalised as on create. */
  readonly endpointUrl?: string;
  /** New event patterns, at least one, each once. */
  readonly events?: SubscriptionRequest['events'];
  /** New property ids, or `null` for every current and future property of the account again. */
  readonly propertyIds?: readonly string[] | null;
  /** Enable or disable. */
  readonly status?: SubscriptionStatus;
}

/** One page of an account's subscriptions, in the order they were created. */
export interface SubscriptionPage {
  /** The subscriptions of the page. */
  readonly items: readonly StoredSubscription[];
  /** How many the account holds in all. */
  readonly totalItems: number;
}

/**
 * One change, as instances apply it to their index: the subscription as it now is, or, for a
 * delete, its id and account alone.
 */
export interface SubscriptionChange {
  /** The change's revision. */
  readonly revision: number;
  /** The subscription's id. */
  readonly id: string;
  /** Its account. */
  readonly accountCode: string;
  /** The subscription after the change; absent when it was deleted. */
  readonly subscription?: StoredSubscription;
}

/** A delivery attempt as the delivery log keeps it. */
export interface DeliveryLogEntry extends DeliveryAttempt {
  /** Its position in the account's log: from 1, growing with each entry (not always by 1). */
  readonly sequence: number;
}

/**
 * Which attempts of an account to read, newest first: those with a sequence below
 * `beforeSequence`, of one subscription, with one of the outcomes, started in `[since, until)`.
 * A filter left out lets every attempt through.
 */
export interface AttemptQuery {
  /** Only attempts with a lower sequence (the last one of the previous page); left out: the newest. */
  readonly beforeSequence?: number;
  /** At most this many. */
  readonly limit: number;
  /** Only the attempts of this subscription. */
  readonly subscriptionId?: string;
  /** Only attempts that ended with one of these outcomes (at least one). */
  readonly outcomes?: readonly AttemptOutcome[];
  /** Only attempts started at or after this time, in ms. */
  readonly since?: number;
  /** Only attempts started before this time, in ms. */
  readonly until?: number;
}

/** How an instance hears of other instances' changes. */
export interface ChangeListener {
  /** A change was committed with this revision (notifications may come late, twice or coalesced). */
  readonly onChange: (revision: number) => void;
  /**
   * The notification channel was lost and is back (or has just opened): changes may have been
   * missed, so read every change since the last revision applied.
   */
  readonly onReconnect: () => void;
}

/** The subscriptions of every account, their signing secrets and the delivery log. */
export interface SubscriptionRepository {
  /**
   * How signing secrets are kept: `encrypted` at rest, or `plain` (a service warns once at start).
   * Left out where nothing is at rest (memory).
   */
  readonly secretsAtRest?: 'encrypted' | 'plain';
  /**
   * Store a new subscription with its first signing secret, unless the account holds
   * `maxPerAccount` already.
   * @param options - `at`: the time of the change, in ms (its `updatedAt`); `maxPerAccount`: the
   *   most subscriptions the account may hold
   * @returns the stored subscription, or `undefined` when the account holds `maxPerAccount` already
   */
  create(
    subscription: Subscription,
    secret: string,
    options: { readonly at: number; readonly maxPerAccount: number },
  ): Promise<StoredSubscription | undefined>;
  /** The account's subscription with this id, or `undefined` (also for another account's id). */
  get(accountCode: string, id: string): Promise<StoredSubscription | undefined>;
  /**
   * A page of the account's subscriptions in the order they were created: the order in which
   * `create` stored them, whatever their `createdAt` says (clocks of instances may differ).
   */
  list(
    accountCode: string,
    page: { readonly offset: number; readonly limit: number },
  ): Promise<SubscriptionPage>;
  /**
   * Change the account's subscription with this id.
   * @returns the subscription after the change, or `undefined` when the account has none with it
   */
  update(
    accountCode: string,
    id: string,
    changes: SubscriptionChanges,
    at: number,
  ): Promise<StoredSubscription | undefined>;
  /**
   * Delete the account's subscription with this id, and its secrets.
   * @returns whether there was one
   */
  delete(accountCode: string, id: string, at: number): Promise<boolean>;
  /**
   * Give the account's subscription a new signing secret. Every secret it had keeps signing until
   * `at + graceMs` (an earlier expiry stays), the new one from now on.
   * @returns whether there was such a subscription
   */
  rotateSecret(
    accountCode: string,
    id: string,
    secret: string,
    options: { readonly at: number; readonly graceMs: number },
  ): Promise<boolean>;
  /** The secrets that sign for the subscription at time `at`, newest first (none when deleted). */
  signingSecrets(accountCode: string, id: string, at: number): Promise<readonly string[]>;
  /** Changes with a revision above `revision`, ascending, at most `limit` (the newest per id). */
  changesSince(revision: number, limit: number): Promise<readonly SubscriptionChange[]>;
  /**
   * Hear of changes made through other instances; leave out where only this instance changes the
   * repository. The listener's `onReconnect` is called once the channel is open.
   * @returns stops listening
   */
  watch?(listener: ChangeListener): Promise<() => Promise<void>>;
  /** Keep one delivery attempt in the account's log. */
  recordAttempt(accountCode: string, attempt: DeliveryAttempt): Promise<DeliveryLogEntry>;
  /** The account's attempts that the query lets through, newest (highest sequence) first. */
  attempts(accountCode: string, query: AttemptQuery): Promise<readonly DeliveryLogEntry[]>;
  /**
   * Delete at most `limit` attempts, of every account, that started before `at` (ms): retention,
   * in bounded batches.
   * @returns how many it deleted (fewer than `limit`: none older is left)
   */
  deleteAttemptsBefore(at: number, limit: number): Promise<number>;
  /** Release what the repository holds (connections it opened); the caller's own stay open. */
  close?(): Promise<void>;
}
