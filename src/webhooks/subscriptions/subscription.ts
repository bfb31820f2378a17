/** The subscription model: what a create request becomes once stored. @module */

/** The validated content of a create-subscription request. */
export interface SubscriptionRequest {
  /** Where deliveries go, in its normalised (WHATWG) serialisation. */
  readonly endpointUrl: string;
  /** Kinds (`folio/created`) and topic wildcards (`reservation/*`), each once. */
  readonly events: readonly string[];
  /** The properties covered; absent means every current and future property of the account. */
  readonly propertyIds?: readonly string[];
  /** A note of its owner's, at most 256 characters; never sent. */
  readonly description?: string;
  /**
   * The most deliveries per second its endpoint takes, a whole number from 1 to 10,000; absent:
   * no limit of its own.
   */
  readonly rateLimit?: number;
  /**
   * Request headers sent with every delivery to it, name to value, as given (see
   * docs/webhook-service.md for the names refused).
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** Its owner's own data, key to value; stored and returned, never sent. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** How its deliveries are to be signed. @defaultValue `'hmac-sha256'` */
  readonly signatureType?: SignatureType;
}

/** How a subscription's deliveries are signed: HMAC-SHA256 (the default), or Ed25519. */
export type SignatureType = 'hmac-sha256' | 'ed25519';

/** The signature types a subscription may name, the default first. */
export const signatureTypes: readonly SignatureType[] = Object.freeze(['hmac-sha256', 'ed25519']);

/** A stored subscription of one account. Treat it as immutable: the index freezes what it holds. */
export interface Subscription extends SubscriptionRequest {
  /** The subscription's identifier (a UUID by default). */
  readonly id: string;
  /** The account it belongs to; events of other accounts never reach it. */
  readonly accountCode: string;
  /** When it was created, as an ISO 8601 timestamp in UTC. */
  readonly createdAt: string;
}

/** Whether a subscription receives events: `disabled` ones are kept and listed, never matched. */
export type SubscriptionStatus = 'enabled' | 'disabled';

/**
 * Why a subscription is disabled: its owner asked (`requested`), its endpoint failed without a
 * success for too long (`endpoint_failing`), or answered 410 Gone (`endpoint_gone`).
 */
export type DisabledReason = 'requested' | 'endpoint_failing' | 'endpoint_gone';

/** A subscription as a repository holds it: with its status, last change and revision. */
export interface StoredSubscription extends Subscription {
  /** How its deliveries are to be signed: `'hmac-sha256'` unless its request named another. */
  readonly signatureType: SignatureType;
  /**
   * The public key (`whpk_…`) of its newest signing key, while that key is an ed25519 one (`whsk_…`,
   * `v1a` signatures): public, shown on reads; kept beside the key, which never leaves the
   * repository. Absent for a subscription whose newest secret is an HMAC one (`whsec_…`).
   */
  readonly publicKey?: string;
  /** `enabled` receives events; `disabled` does not. */
  readonly status: SubscriptionStatus;
  /** Why it is disabled; only while `status` is `disabled`. */
  readonly disabledReason?: DisabledReason;
  /** When it was disabled, as an ISO 8601 timestamp in UTC; only while `status` is `disabled`. */
  readonly disabledAt?: string;
  /** When it last changed, as an ISO 8601 timestamp in UTC (its creation time at first). */
  readonly updatedAt: string;
  /**
   * The repository's revision of its last change: revisions grow with every change of any
   * subscription of the repository, so an instance that applied revision r needs only the changes
   * after r.
   */
  readonly revision: number;
}

/** What a change may set; a field left out keeps its value. */
export interface SubscriptionChanges {
  /** A new endpoint, normalised as on create. */
  readonly endpointUrl?: string;
  /** New event patterns, at least one, each once. */
  readonly events?: SubscriptionRequest['events'];
  /** New property ids, or `null` for every current and future property of the account again. */
  readonly propertyIds?: readonly string[] | null;
  /**
   * Enable or disable. Disabling records why (`disabledReason`) and when (`at`); enabling clears
   * both and starts the endpoint's failing streak afresh (see {@link EndpointHealth}).
   */
  readonly status?: SubscriptionStatus;
  /** Why it is disabled, with `status: 'disabled'`. @defaultValue `'requested'` */
  readonly disabledReason?: DisabledReason;
  /** A new description, or `null` to remove it. */
  readonly description?: string | null;
  /** A new rate limit, or `null` to remove it. */
  readonly rateLimit?: number | null;
  /** New delivery headers, replacing the whole set, or `null` to remove them all. */
  readonly headers?: Readonly<Record<string, string>> | null;
  /** New metadata, replacing the whole set, or `null` to remove it. */
  readonly metadata?: Readonly<Record<string, string>> | null;
  /** A new signature type. */
  readonly signatureType?: SignatureType;
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
