/**
 * The JSON the webhook service's API takes and answers (docs/webhook-service.md, "JSON shapes"), as
 * the client types it. Written here, not imported from the service, so that the client runs in a
 * browser or a worker without the service's modules.
 * @module
 */

/** How a subscription's deliveries are signed. */
export type WebhookSignatureType = 'hmac-sha256' | 'ed25519';

/** Why a subscription is disabled. */
export type WebhookDisabledReason = 'requested' | 'endpoint_failing' | 'endpoint_gone';

/** A subscription as the API shows it. */
export interface WebhookSubscription {
  /** Its id. */
  readonly id: string;
  /** Where deliveries go. */
  readonly endpointUrl: string;
  /** Kinds (`folio/created`) and topic wildcards (`reservation/*`). */
  readonly events: readonly string[];
  /** The properties covered; absent: every current and future property of the account. */
  readonly propertyIds?: readonly string[];
  /** Its owner's note, never sent. */
  readonly description?: string;
  /** Most deliveries per second to its endpoint. */
  readonly rateLimit?: number;
  /** Request headers sent with every delivery. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Its owner's data, stored and returned, never sent. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** How deliveries are signed. */
  readonly signatureType: WebhookSignatureType;
  /** The public key (`whpk_…`) of an ed25519 subscription. */
  readonly publicKey?: string;
  /** Whether it receives events. */
  readonly status: 'enabled' | 'disabled';
  /** Why it is disabled, while disabled. */
  readonly disabledReason?: WebhookDisabledReason;
  /** When it was disabled (ISO 8601), while disabled. */
  readonly disabledAt?: string;
  /** When it was created (ISO 8601). */
  readonly createdAt: string;
  /** When it last changed (ISO 8601). */
  readonly updatedAt: string;
}

/** The answer of a create: the subscription and, for an HMAC one, its `secret`, shown this once. */
export interface CreatedWebhookSubscription extends WebhookSubscription {
  /** The `whsec_` secret of an `hmac-sha256` subscription. */
  readonly secret?: string;
}

/**
 * The answer of an update: the subscription after the change; a change of `signatureType` adds
 * the new `secret` (to `hmac-sha256`) or `publicKey` (to `ed25519`) and `previousSecretsExpireAt`.
 */
export interface UpdatedWebhookSubscription extends WebhookSubscription {
  /** The new secret, after a change to `hmac-sha256`. */
  readonly secret?: string;
  /** When the previous secret or key stops signing (ISO 8601), after a change of type. */
  readonly previousSecretsExpireAt?: string;
}

/** A create body. */
export interface CreateWebhookSubscription {
  /** Where deliveries go (https). */
  endpointUrl: string;
  /** Kinds and topic wildcards. */
  events: readonly string[];
  /** The properties covered; leave it out for every property. */
  propertyIds?: readonly string[];
  /** A note, at most 256 characters. */
  description?: string;
  /** Deliveries per second, 1 to 10,000. */
  rateLimit?: number;
  /** Headers sent with every delivery. */
  headers?: Readonly<Record<string, string>>;
  /** Data of your own. */
  metadata?: Readonly<Record<string, string>>;
  /** @defaultValue `'hmac-sha256'` */
  signatureType?: WebhookSignatureType;
}

/** An update body: one or more members; `null` removes an optional setting. */
export interface UpdateWebhookSubscription {
  /** A new endpoint. */
  endpointUrl?: string;
  /** New kinds and topic wildcards. */
  events?: readonly string[];
  /** New properties; `null`: every property again. */
  propertyIds?: readonly string[] | null;
  /** Enable or disable it. */
  status?: 'enabled' | 'disabled';
  /** A new note, or `null` to remove it. */
  description?: string | null;
  /** A new rate, or `null` to remove it. */
  rateLimit?: number | null;
  /** The whole new set of headers, or `null` to remove them. */
  headers?: Readonly<Record<string, string>> | null;
  /** New data of your own, or `null` to remove it. */
  metadata?: Readonly<Record<string, string>> | null;
  /** Another signature type: a rotation to a secret of that type. */
  signatureType?: WebhookSignatureType;
}

/**
 * The answer of a secret rotation: the new `secret` of an `hmac-sha256` subscription, or the new
 * `publicKey` of an ed25519 one; never both, never neither.
 */
export type RotatedWebhookSecret =
  | {
      /** The new `whsec_` secret of an `hmac-sha256` subscription. */
      readonly secret: string;
      /** Absent: an `hmac-sha256` subscription has no public key. */
      readonly publicKey?: never;
      /** When the previous secrets stop signing (ISO 8601). */
      readonly previousSecretsExpireAt: string;
    }
  | {
      /** Absent: the secret of an ed25519 subscription is never shown. */
      readonly secret?: never;
      /** The new public key (`whpk_…`) of an ed25519 subscription. */
      readonly publicKey: string;
      /** When the previous secrets stop signing (ISO 8601). */
      readonly previousSecretsExpireAt: string;
    };

/** How an attempt ended. */
export type WebhookAttemptOutcome = 'delivered' | 'retry' | 'disabled' | 'failed' | 'lost';

/** Why a delivery was given up (the `reason` of a `failed` or `disabled` attempt). */
export type WebhookDeliveryFailure =
  | 'attempts_exhausted'
  | 'max_age'
  | 'forbidden_address'
  | 'no_secret'
  | 'secret_unreadable'
  | 'invalid_job'
  | 'gone';

/** One delivery attempt on record. */
export interface WebhookAttempt {
  /** Its place in the log: newer attempts have higher ones. */
  readonly sequence: number;
  /** The message id (`webhook-id`). */
  readonly id: string;
  /** The subscription. */
  readonly subscriptionId: string;
  /** The endpoint. */
  readonly endpointUrl: string;
  /** Which attempt, from 1 (afresh in each replay). */
  readonly attempt: number;
  /** The replay it belongs to, from 1; absent for the publish's attempts. */
  readonly replay?: number;
  /** When it started, in ms since the epoch. */
  readonly at: number;
  /** How long the request took, in ms; absent when none was sent. */
  readonly durationMs?: number;
  /** The receiver's status, when it answered. */
  readonly status?: number;
  /** Why no answer came. */
  readonly error?: {
    /** What failed, e.g. `timeout`, `forbidden_address`. */
    readonly code: string;
    /** What happened, in words. */
    readonly message: string;
  };
  /** What followed. */
  readonly outcome: WebhookAttemptOutcome;
  /** For `retry`: when the next attempt is due, in ms. */
  readonly nextAttemptAt?: number;
  /** For `failed` and `disabled`: why. */
  readonly reason?: WebhookDeliveryFailure;
}

/** The navigation links of a page, each a URL of the service. */
export interface WebhookPageLinks {
  /** The first page. */
  readonly first: string;
  /** The page before, when there is one. */
  readonly prev?: string;
  /** The page after, unless this is the last. */
  readonly next?: string;
  /** The last page, when the total is known (subscriptions, not attempts). */
  readonly last?: string;
}

/** A page of `GET /v1/subscriptions`. */
export interface WebhookSubscriptionPage {
  /** The subscriptions of the page, in creation order. */
  readonly items: readonly WebhookSubscription[];
  /** The page's number, from 1. */
  readonly pageNumber: number;
  /** Items per page. */
  readonly pageSize: number;
  /** Subscriptions of the account. */
  readonly totalItems: number;
  /** Whether this is the last page. */
  readonly endOfData: boolean;
  /** `first`, and `prev`, `next` and `last` where there are such pages. */
  readonly links: WebhookPageLinks;
}

/** A page of attempts (a subscription's, or the audit log's). */
export interface WebhookAttemptPage {
  /** The attempts of the page, newest first. */
  readonly items: readonly WebhookAttempt[];
  /** Items per page. */
  readonly limit: number;
  /** The next page's cursor, `null` at the end. */
  readonly nextCursor: string | null;
  /** Whether this is the last page. */
  readonly endOfData: boolean;
  /** `first`, and `prev`, `next` and `last` where there are such pages. */
  readonly links: WebhookPageLinks;
}

/** The answer of a subscription replay (202). */
export interface WebhookSubscriptionReplay {
  /** The subscription replayed. */
  readonly subscriptionId: string;
  /** The `since` sent. */
  readonly since: string;
  /** Deliveries set pending again. */
  readonly deliveries: number;
  /** Of them, queued at once. */
  readonly queued: number;
  /** Of them, paced. */
  readonly paced: number;
  /** When the last paced one is due (ISO 8601), when any is paced. */
  readonly pacedUntil?: string;
}

/** The answer of a message replay (202). */
export interface WebhookMessageReplay {
  /** The message replayed. */
  readonly messageId: string;
  /** Deliveries set pending again. */
  readonly deliveries: number;
  /** Of them, queued at once. */
  readonly queued: number;
  /** Of them, paced. */
  readonly paced: number;
  /** When the last paced one is due (ISO 8601), when any is paced. */
  readonly pacedUntil?: string;
}

/** The filters of an attempt listing. */
export interface WebhookAttemptQuery {
  /** One or more outcomes. */
  outcome?: WebhookAttemptOutcome | readonly WebhookAttemptOutcome[];
  /** Attempts started at or after this time (RFC 3339 with a zone, or a Date). */
  since?: string | Date;
  /** Attempts started before this time. */
  until?: string | Date;
  /** Items per page, 1 to 500. */
  limit?: number;
  /** A cursor of an earlier page to resume from. */
  startCursor?: string;
}
