/**
 * The webhook service as its user holds it: publishing events, the HTTP API through `fetch`, its
 * lifecycle, and portal tokens; made by `createWebhookService` (webhook-service.ts). @module
 */
import type { SubscriptionIndexStats } from '../subscriptions/subscription-index.js';
import type { PortalToken, PortalTokenRequest } from './portal-token.js';

/** An event to publish. */
export interface PublishEvent {
  /** The account it belongs to. */
  readonly accountCode: string;
  /** Its kind, `<topic>/<event>`. */
  readonly kind: string;
  /** The property it concerns; absent for an account-level event. */
  readonly propertyId?: string | undefined;
  /** What happened; any JSON value. */
  readonly data?: unknown;
}

/** How {@link WebhookService.publish} publishes. */
export interface PublishOptions {
  /**
   * Publish at most once: within `idempotencyWindowMs` of the first publish of the account with
   * this key, another answers the first message's result and records and delivers nothing new,
   * also on another instance at the same moment. 1 to 255 visible ASCII characters (`!` to `~`).
   */
  readonly idempotencyKey?: string | undefined;
}

/** What {@link WebhookService.publish} did. */
export interface PublishResult {
  /** The message id (`webhook-id`). */
  readonly id: string;
  /** The subscriptions a delivery was recorded (and queued) for. */
  readonly deliveries: readonly string[];
}

/** What the service's index holds, and the repository revision it has applied. */
export interface WebhookServiceStats extends SubscriptionIndexStats {
  /** The revision of the last change applied to the index. */
  revision: number;
}

/** The webhook subscription service. */
export interface WebhookService {
  /**
   * Answer one API request. Never rejects: a failure is answered 500 with problem details and
   * told to `onError`. Before {@link WebhookService.start} it starts the service first. Bound to
   * its service: pass it on as it is (`app.mount('/', service.fetch)`, `Bun.serve({ fetch })`).
   */
  readonly fetch: (request: Request) => Promise<Response>;
  /**
   * Deliver an event to each enabled subscription that matches it: the message and one pending
   * delivery per subscription are recorded in the repository in one transaction (the outbox),
   * then queued. Resolves once they are on record; a job the queue then refuses (closed, full,
   * unreachable) is told to `onError` and queued again by a later sweep, never lost.
   *
   * With an `idempotencyKey`, the same account and key within `idempotencyWindowMs` answers the
   * first message's result and records and delivers nothing new, also when instances on one
   * repository publish it at the same moment; a key that has expired publishes a new message.
   * @throws InvalidRequestError `invalid_event`, with the `pointer` of the field at fault, for an
   *   event that is no object, has no account code, a malformed kind or property id (or a lone
   *   surrogate in one), a kind of the service's own topic `operational`, or data JSON cannot
   *   hold; nothing is recorded
   * @throws InvalidRequestError `invalid_idempotency_key` (pointer `/idempotencyKey`) for a key
   *   that is no string of 1 to 255 visible ASCII characters; nothing is recorded
   * @throws InvalidRequestError `idempotency_key_reused` (pointer `/idempotencyKey`) when the key
   *   holds a message of another kind, property or data (its id is in the message); nothing is
   *   recorded
   * @throws ConfigurationError `invalid_option` for options that are no object, or a misspelt one
   * @throws the repository's error when the message could not be recorded (nothing was queued)
   * @example
   * ```ts
   * const result = await service.publish(
   *   { accountCode: 'ACME', kind: 'folio/created', data: { folioId: 'F1' } },
   *   { idempotencyKey: 'folio-F1-created' },
   * );
   * ```
   */
  publish(event: PublishEvent, options?: PublishOptions): Promise<PublishResult>;
  /**
   * Queue the pending deliveries that are due and no queue holds (the timer of
   * `redeliveryIntervalMs` calls it too; start calls it once for every due delivery).
   * @returns how many it queued
   */
  redeliver(): Promise<number>;
  /**
   * Load the index from the repository and listen for changes; warns once when secrets are stored
   * unencrypted. Idempotent; a failed start may be tried again.
   */
  start(): Promise<void>;
  /** Stop listening and close the queue; the repository stays open (it is the caller's). */
  close(): Promise<void>;
  /** What the index holds, for tests and metrics. */
  stats(): WebhookServiceStats;
  /**
   * Delete the delivery attempts older than `attemptRetentionMs`, 1,000 a statement, until none
   * is left (the timer of `attemptRetentionIntervalMs` calls it too).
   * @returns how many it deleted
   */
  deleteExpiredAttempts(): Promise<number>;
  /**
   * Issue a portal token: a bearer token that acts as one account on this service's API until it
   * expires, signed with `portalKey` and stored nowhere (see docs/webhook-service.md, "Portal
   * tokens"). A request with `Authorization: Bearer <token>` is that account without `identify`
   * being asked, limited under the client id `portal:<accountCode>`; a read-only token's changes
   * (POST, PATCH, DELETE) are answered 403 `portal_read_only`.
   * @returns the token, the portal link `{basePath}/portal#token=<token>` (the token in the
   *   fragment, which never reaches a server) and when it expires (ms, the service's clock)
   * @throws ConfigurationError `invalid_option` when the service has no `portalKey`, or for a
   *   request that is no `{ accountCode, ttlSeconds?, readOnly? }` (an empty account code, a ttl
   *   that is no whole number of seconds from 1 to 604800)
   * @example
   * ```ts
   * const { url } = service.portalToken({ accountCode: 'ACME', ttlSeconds: 900, readOnly: true });
   * // Hand `url` to the account's signed-in user (a redirect, a link in your dashboard).
   * ```
   */
  portalToken(request: PortalTokenRequest): PortalToken;
}
