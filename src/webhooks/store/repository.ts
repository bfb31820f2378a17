/**
 * Where subscriptions and their signing secrets are kept: the interface every repository
 * implements (memory here, PostgreSQL in `api-conventions/postgres`). Every operation names the
 * account: none of one account can read, change or delete a subscription of another. @module
 */
import type { SecretCipherError } from '../../errors/secret-cipher-error.js';
import type { AttemptOutcome, DeliveryAttempt } from '../delivery/attempt.js';
import type {
  SignatureType,
  StoredSubscription,
  Subscription,
  SubscriptionChange,
  SubscriptionChanges,
} from '../subscriptions/subscription.js';

/** How {@link SubscriptionRepository.signingSecrets} reports a secret it skipped. */
export interface SigningSecretsOptions {
  /** Told of each secret that cannot be read while others of the subscription can. */
  readonly onUnreadable?: (error: SecretCipherError) => void;
}

/** How {@link SubscriptionRepository.create} stores a subscription. */
export interface StoreSubscriptionOptions {
  /** The time of the change, in ms (its `updatedAt`). */
  readonly at: number;
  /** The most subscriptions the account may hold. */
  readonly maxPerAccount: number;
  /** For an ed25519 signing key (`whsk_…`): its public key (`whpk_…`), kept beside it. */
  readonly publicKey?: string | undefined;
}

/** How {@link SubscriptionRepository.rotateSecret} rotates. */
export interface RotateSecretOptions {
  /** Now, in ms: the new secret signs from then on. */
  readonly at: number;
  /** How long (ms) every older secret keeps signing. */
  readonly graceMs: number;
  /** For an ed25519 signing key (`whsk_…`): its public key (`whpk_…`), kept beside it. */
  readonly publicKey?: string | undefined;
  /**
   * The type the new secret signs with, which the subscription takes with it (a change of type
   * is a rotation to a secret of the new type). Left out: the type stays.
   */
  readonly signatureType?: SignatureType | undefined;
}

/** One page of an account's subscriptions, in the order they were created. */
export interface SubscriptionPage {
  /** The subscriptions of the page. */
  readonly items: readonly StoredSubscription[];
  /** How many the account holds in all. */
  readonly totalItems: number;
}

/** A delivery attempt as the delivery log keeps it. */
export interface DeliveryLogEntry extends DeliveryAttempt {
  /** Its position in the account's log: from 1, growing with each entry (not always by 1). */
  readonly sequence: number;
}

/**
 * How a subscription's endpoint has fared since its last success: the failing streak that
 * disables it. An attempt whose request was sent (it has a `durationMs`) and did not deliver
 * starts or extends the streak; a delivered one ends it; an attempt that sent nothing leaves it.
 */
export interface EndpointHealth {
  /** When the first failed attempt of the streak started, in ms; absent: no streak. */
  readonly failingSince?: number;
  /** The messages with a failed attempt in the streak, each counted once. */
  readonly failedMessages: number;
}

/** What {@link SubscriptionRepository.recordAttempt} kept. */
export interface AttemptRecord {
  /** The attempt as the log keeps it. */
  readonly entry: DeliveryLogEntry;
  /** The endpoint's failing streak after it. */
  readonly health: EndpointHealth;
  /**
   * For a delivered attempt that ended a failing streak: the streak as it stood before it (its
   * `failingSince` set). Left out otherwise, and by a repository that does not tell it (the
   * service then raises no `operational/attempt-recovered`).
   */
  readonly ended?: EndpointHealth;
}

/** A published message as the outbox keeps it. */
export interface OutboxMessage {
  /** Its account. */
  readonly accountCode: string;
  /** Its id (`webhook-id`), unique within the account. */
  readonly id: string;
  /** Its kind, `<topic>/<event>`. */
  readonly kind: string;
  /** The property it concerns; absent for an account-level event. */
  readonly propertyId?: string;
  /** The exact body every delivery sends. */
  readonly body: string;
  /** When it was published, in ms: its deliveries are due then. */
  readonly createdAt: number;
}

/**
 * The idempotency key a message is published with: the account's key holds the first message
 * published with it until `expiresAt`, and a publish with it meanwhile records nothing.
 */
export interface MessageKey {
  /** The key, 1 to 255 visible ASCII characters. */
  readonly key: string;
  /** What the message is of (its kind, property and data), to tell a reuse of the key apart. */
  readonly fingerprint: string;
  /** Until when, in ms, the key holds this message (its `createdAt` plus the window). */
  readonly expiresAt: number;
}

/** The message an account's idempotency key holds, as the publish that recorded it answered. */
export interface KeptMessage {
  /** Its id. */
  readonly messageId: string;
  /** The fingerprint it was published with. */
  readonly fingerprint: string;
  /** The subscriptions a delivery was recorded for, in the order given. */
  readonly deliveries: readonly string[];
}

/** One delivery a message owes: the subscription it goes to and where. */
export interface OutboxDelivery {
  /** The subscription. */
  readonly subscriptionId: string;
  /** Its endpoint when the message was published. */
  readonly endpointUrl: string;
}

/**
 * Where a delivery stands: `pending` until an attempt delivers it (`delivered`) or it is given up
 * (`failed`: kept, and replayable).
 */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** A pending delivery taken to be queued: what its job is made of. */
export interface PendingDelivery {
  /** The message's account. */
  readonly accountCode: string;
  /** The message id (`webhook-id`). */
  readonly messageId: string;
  /** The subscription. */
  readonly subscriptionId: string;
  /** The endpoint kept with the delivery. */
  readonly endpointUrl: string;
  /** The message's body. */
  readonly body: string;
  /** Attempts started in this round (since the publish, or since the last replay). */
  readonly attempts: number;
  /** When the round's first attempt started, in ms; absent before it. */
  readonly firstAttemptAt?: number;
  /** Which replay this round is: 0 for the publish, 1 for the first replay, … */
  readonly replay: number;
  /** When the next attempt is due, in ms. */
  readonly nextAttemptAt: number;
}

/**
 * The lease of a delivery whose lease {@link SubscriptionRepository.releaseLeases} gave back: long
 * past, so any claim takes it once due, and unlike any lease a claim or a record writes. @internal
 */
export const RELEASED_LEASE = -1;

/** Which pending deliveries {@link SubscriptionRepository.claimDeliveries} takes. */
export interface DeliveryClaim {
  /** Those due at or before this time, in ms. */
  readonly dueBy: number;
  /** Left to the taker until this time: no other claim takes them before (see `releaseLeases`). */
  readonly leaseUntil: number;
  /** At most this many, those due first first. */
  readonly limit: number;
  /**
   * Take only deliveries whose lease {@link SubscriptionRepository.releaseLeases} gave back, due
   * by `dueBy` or not yet: the start of a process alone on its data queues each for its time.
   * Every other lease, a released one once claimed included, is left alone.
   */
  readonly released?: boolean;
}

/** One pending delivery, by its message and subscription. */
export interface DeliveryKey {
  /** The message's account. */
  readonly accountCode: string;
  /** The message id. */
  readonly messageId: string;
  /** The subscription. */
  readonly subscriptionId: string;
}

/**
 * The failed deliveries a replay sends again: those of one message (to each subscription of the
 * account that failed it and is enabled), or those of one subscription whose message was published
 * at or after `since` (ms).
 */
export type ReplaySelection =
  | {
      /** The message whose failed deliveries are sent again. */
      readonly messageId: string;
    }
  | {
      /** The subscription whose failed deliveries are sent again. */
      readonly subscriptionId: string;
      /** Only messages published at or after this time, in ms. */
      readonly since: number;
    };

/**
 * How a replay is paced: per subscription, across calls and instances. Each subscription has an
 * allowance of `inline` deliveries, used by each replayed delivery and given back one every
 * `paceMs`, kept in the repository (a call never starts it afresh). A replay's deliveries to a
 * subscription, oldest message first, are due at once while the allowance lasts, then one every
 * `paceMs` after the subscription's replayed deliveries before them. Precisely: with `P` the
 * subscription's paced-until time (no earlier than `at`; `at` for a subscription never replayed),
 * the k-th (from 1) is due at `max(at, P + (k - inline) * paceMs)`, and `P` becomes
 * `P + n * paceMs` for `n` deliveries. So from the first replay on, no span of `w` ms has more than
 * `inline + w / paceMs` replayed deliveries of one subscription due in it.
 */
export interface ReplayPlan {
  /** Now, in ms. */
  readonly at: number;
  /**
   * A subscription's allowance: at most this many of its deliveries due at once. Of those a call
   * makes due now, the first this many (oldest message first) are leased until `leaseUntil` and
   * returned; any others are left to the sweeps.
   */
  readonly inline: number;
  /** The lease of those returned. */
  readonly leaseUntil: number;
  /**
   * The interval between two paced deliveries of a subscription, and the time that gives one of
   * its allowance back. The paced ones are not leased: the redelivery sweeps take them as they come
   * due.
   */
  readonly paceMs: number;
}

/** What a replay did. */
export interface ReplayResult {
  /** For a message: whether the account has it. For a subscription: always true. */
  readonly found: boolean;
  /** The deliveries set pending again, each with its replay number one higher and no attempts. */
  readonly total: number;
  /** Those due now that are leased to the caller (at most `inline`), to enqueue at once. */
  readonly due: readonly PendingDelivery[];
  /** When the last of the others is due, in ms; absent when every one is returned in `due`. */
  readonly pacedUntil?: number;
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
   * Whether this process is the only one on the data (memory; PGlite, one process per folder):
   * every lease on it at start was this process's predecessor's, whose queue is gone, so the
   * service gives back every pending delivery's lease at start and takes each, due or not, queued
   * for its time. Left out or false: the data is shared (a PostgreSQL server), and the start takes
   * back only the due ones; another instance's retries not yet due keep their lease.
   */
  readonly exclusive?: boolean;
  /**
   * Store a new subscription with its first signing secret, unless the account holds
   * `maxPerAccount` already.
   * @param secret - an HMAC secret (`whsec_…`) or an ed25519 signing key (`whsk_…`), kept as
   *   secrets are (encrypted at rest where the repository encrypts)
   * @param options - `at`: the time of the change, in ms (its `updatedAt`); `maxPerAccount`: the
   *   most subscriptions the account may hold; `publicKey`: for a `whsk_` key, its public key
   *   (`whpk_…`), kept beside it and returned as the subscription's `publicKey`
   * @returns the stored subscription, or `undefined` when the account holds `maxPerAccount` already
   */
  create(
    subscription: Subscription,
    secret: string,
    options: StoreSubscriptionOptions,
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
   * `at + graceMs` (an earlier expiry stays), the new one from now on. A rotation is a change: the
   * subscription takes the next revision and `changesSince` and `watch` tell it, so that instances
   * drop the secrets they hold of it. Its `publicKey` becomes `options.publicKey` (removed when
   * left out: the new secret is an HMAC one); with `options.signatureType` it takes that type, and
   * `updatedAt` becomes `at` when the type changes. Its other fields stay as they are, `updatedAt`
   * too.
   * @param secret - an HMAC secret (`whsec_…`) or an ed25519 signing key (`whsk_…`)
   * @returns whether there was such a subscription
   */
  rotateSecret(
    accountCode: string,
    id: string,
    secret: string,
    options: RotateSecretOptions,
  ): Promise<boolean>;
  /**
   * The secrets that sign for the subscription at time `at`, newest first (none when deleted).
   * A repository that stores them encrypted skips one its keys cannot decrypt, telling
   * `onUnreadable`, so that the others still sign; when it can read none of them it throws.
   * @throws SecretCipherError naming the subscription when it has secrets and none can be read
   */
  signingSecrets(
    accountCode: string,
    id: string,
    at: number,
    options?: SigningSecretsOptions,
  ): Promise<readonly string[]>;
  /**
   * Check, at start, that the configured keys read the secrets: one error for each subscription
   * that has secrets signing at `at` and none of them can be read. Left out by repositories
   * that store secrets as they are given.
   */
  unreadableSecrets?(at: number): Promise<readonly SecretCipherError[]>;
  /** Changes with a revision above `revision`, ascending, at most `limit` (the newest per id). */
  changesSince(revision: number, limit: number): Promise<readonly SubscriptionChange[]>;
  /**
   * Hear of changes made through other instances; leave out where only this instance changes the
   * repository. The listener's `onReconnect` is called once the channel is open.
   * @returns stops listening
   */
  watch?(listener: ChangeListener): Promise<() => Promise<void>>;
  /**
   * Keep one delivery attempt in the account's log and, in the same transaction, move its
   * delivery (the message's to the subscription, when the outbox holds it in the attempt's replay
   * round): `retry` leaves it pending, due at `nextAttemptAt`, leased until `leaseUntil`, with the
   * attempt's count and first attempt time; `delivered` marks it delivered; `failed`, `disabled`
   * and `lost` mark it failed (kept, replayable). The subscription's {@link EndpointHealth} moves
   * with it.
   * @param options - `leaseUntil`: for a retry, until when the queue holding it keeps it
   *   (`nextAttemptAt` when left out)
   */
  recordAttempt(
    accountCode: string,
    attempt: DeliveryAttempt,
    options?: { readonly leaseUntil?: number },
  ): Promise<AttemptRecord>;
  /** The account's attempts that the query lets through, newest (highest sequence) first. */
  attempts(accountCode: string, query: AttemptQuery): Promise<readonly DeliveryLogEntry[]>;
  /**
   * Delete at most `limit` attempts, of every account, that started before `at` (ms): retention,
   * in bounded batches.
   * @returns how many it deleted (fewer than `limit`: none older is left)
   */
  deleteAttemptsBefore(at: number, limit: number): Promise<number>;
  /**
   * The outbox: keep the message and one pending delivery per subscription, due at its
   * `createdAt` and leased until `leaseUntil`, all in one transaction, before any is queued.
   * Recording the account's message id again changes nothing.
   *
   * With `key`: unless the account's key holds a message that has not expired by the message's
   * `createdAt`, the key takes this message (and its deliveries, none too), in the same
   * transaction; otherwise nothing is recorded. Atomic across instances: of publishes with one key
   * at once, one message is recorded and every call answers it.
   * @returns with `key`, the message the key holds afterwards (this one when it was recorded);
   *   without, `undefined`
   */
  recordMessage(
    message: OutboxMessage,
    deliveries: readonly OutboxDelivery[],
    options: { readonly leaseUntil: number; readonly key?: MessageKey | undefined },
  ): Promise<KeptMessage | undefined>;
  /**
   * Take pending deliveries that are due and whose lease has passed (or, for a `released`
   * claim, whose lease was given back), lease them to the caller and return them with their
   * message's body: the redelivery sweep. Two claims at once never take the same delivery.
   */
  claimDeliveries(claim: DeliveryClaim): Promise<readonly PendingDelivery[]>;
  /**
   * Give back the lease of pending deliveries a queue had no room for: each still leased until
   * `leaseUntil` (this caller's lease) is left to the next sweep from its due time. Left out, such
   * deliveries wait for their lease to pass.
   */
  releaseDeliveries?(deliveries: readonly DeliveryKey[], leaseUntil: number): Promise<void>;
  /**
   * Give back the lease of every pending delivery due by `dueBy`, whoever holds it: a claim takes
   * it as if no queue held it (`released` claims take only these). The webhook service calls it
   * once as it starts, before it records or claims anything: what its predecessor's queue held is
   * gone (every pending delivery where this process is alone on the data, those due on a shared
   * server). Left out, a start takes only what is due and unleased.
   * @returns how many leases it gave back
   */
  releaseLeases?(dueBy: number): Promise<number>;
  /**
   * Set failed deliveries pending again, in a new replay round, paced per subscription (see
   * {@link ReplayPlan}). Replays at once, of one subscription or of messages to it, never
   * deadlock: each takes its subscriptions' pacing in one order before their deliveries.
   */
  replay(accountCode: string, selection: ReplaySelection, plan: ReplayPlan): Promise<ReplayResult>;
  /** The status of a message's delivery to a subscription, or `undefined` when there is none. */
  deliveryStatus(
    accountCode: string,
    messageId: string,
    subscriptionId: string,
  ): Promise<DeliveryStatus | undefined>;
  /**
   * Delete at most `limit` messages, of every account, published before `at` (ms) that owe no
   * pending delivery, with their deliveries: retention, in bounded batches.
   * @returns how many it deleted
   */
  deleteMessagesBefore(at: number, limit: number): Promise<number>;
  /**
   * Delete at most `limit` idempotency keys, of every account, that expired by `at` (ms):
   * retention, in bounded batches. Left out, expired keys stay until a publish reuses them.
   * @returns how many it deleted
   */
  deleteExpiredKeys?(at: number, limit: number): Promise<number>;
  /** Release what the repository holds (connections it opened); the caller's own stay open. */
  close?(): Promise<void>;
}
