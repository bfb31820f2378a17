/**
 * The webhook subscription service as a web-standard fetch handler: the subscription API on a
 * repository, an index kept in step with it, and publishing through a delivery queue (see
 * docs/webhook-service.md).
 * @module
 */

import { type ConfigurationError, InvalidRequestError } from '../../errors/index.js';
import type { ResponseParts } from '../../http/problem-details.js';
import { createRateLimitGate, type RateLimitGate } from '../../http/rate-limit-gate.js';
import { invalidValue, oneOf, refused, worded } from '../../internal/options.js';
import { cursorValidator } from '../../pagination/cursor-validator.js';
import { pageNumberValidator } from '../../pagination/page-number-validator.js';
import { hookedDeliverer } from '../delivery/create-deliverer.js';
import { MemoryDeliveryQueue } from '../delivery/memory-queue.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import {
  isOperationalKind,
  OPERATIONAL_TOPIC,
  operationalMessageId,
  withOperationalTopic,
} from '../events/operational-events.js';
import { createWebhookMessage, readWebhookEvent } from '../events/payload.js';
import { AttemptRetention } from '../store/attempt-retention.js';
import { Outbox } from '../store/outbox.js';
import type { KeptMessage, MessageKey } from '../store/repository.js';
import { SubscriptionMirror } from '../store/subscription-mirror.js';
import { endpointUrlPolicy } from '../subscriptions/endpoint-url.js';
import type { StoredSubscription } from '../subscriptions/subscription.js';
import { SubscriptionIndex } from '../subscriptions/subscription-index.js';
import { subscriptionRequestDefaults } from '../subscriptions/subscription-request.js';
import { auditCursorCodec } from './audit-cursors.js';
import type { OperationRequest, ServiceContext } from './context.js';
import { serviceDeliveryHooks } from './delivery-hooks.js';
import { DeliveryRates } from './delivery-rate.js';
import { operations } from './handlers.js';
import { fingerprintOf, idempotencyKeyReused, readIdempotencyKey } from './idempotency.js';
import { openApiDocument } from './openapi.js';
import type { OperationalFact } from './operational-facts.js';
import {
  readServiceOptions,
  SERVICE_CURSORS,
  SERVICE_PAGES,
  type ServiceSettings,
  type WebhookServiceLimits,
  type WebhookServiceOptions,
} from './options.js';
import { PortalPage } from './portal-page.js';
import {
  PORTAL_TOKEN_PREFIX,
  type PortalClaims,
  type PortalToken,
  type PortalTokenRequest,
  PortalTokens,
} from './portal-token.js';
import { internalError, serviceProblem } from './problems.js';
import { isAnonymous, isReading, matchRoute, type RouteMatch } from './routes.js';
import type {
  PublishEvent,
  PublishOptions,
  PublishResult,
  WebhookService,
  WebhookServiceStats,
} from './webhook-service-types.js';

/**
 * Make the webhook service.
 * @throws ConfigurationError `invalid_option` for a missing repository or identify, or a bad option
 * @example
 * ```ts
 * const service = createWebhookService({
 *   repository: new MemorySubscriptionRepository(),
 *   identify: (request) => {
 *     const account = request.headers.get('x-account');
 *     return account === null ? undefined : { clientId: 'app', accountCode: account };
 *   },
 * });
 * await service.start();
 * const response = await service.fetch(new Request('http://localhost/v1/subscriptions'));
 * ```
 */
export function createWebhookService(options: WebhookServiceOptions): WebhookService {
  return new Service(readServiceOptions(options));
}

/**
 * What the gate hands to `identify`: the request, the portal token's claims when it carries one,
 * and what `identify` answered for it.
 */
interface GateRequest {
  readonly request: Request;
  readonly portal: PortalClaims | undefined;
  identity?: unknown;
}

class Service implements WebhookService {
  readonly #settings: ServiceSettings;
  readonly #index = new SubscriptionIndex();
  readonly #mirror: SubscriptionMirror;
  readonly #queue: DeliveryQueue;
  readonly #context: ServiceContext;
  readonly #gate: RateLimitGate<GateRequest> | undefined;
  #starting: Promise<void> | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #retention: AttemptRetention;
  readonly #outbox: Outbox;
  readonly #portal: PortalTokens | undefined;
  readonly #portalPage: PortalPage | undefined;
  #warned = false;
  #closed = false;

  constructor(settings: ServiceSettings) {
    this.#settings = settings;
    const { repository, clock, onError } = settings;
    this.#mirror = new SubscriptionMirror(repository, this.#index, onError);
    const settle = (stored?: StoredSubscription) => this.#mirror.settle(stored).catch(onError);
    // The deliverer createDeliverer makes, its steps the service's hooks.
    const { onAttempt, rateLimitStore, ...delivery } = settings.delivery;
    const rates = new DeliveryRates({ store: rateLimitStore, onError });
    const hooks = serviceDeliveryHooks({
      repository,
      index: this.#index,
      clock,
      onAttempt,
      leaseMs: settings.redeliveryLeaseMs,
      disableAfterMs: settings.disableAfterMs,
      disableMinMessages: settings.disableMinMessages,
      onDisabled: settings.onDisabled,
      raise: (fact) => this.#raise(fact),
      onError,
      started: () => this.start().catch(onError),
      catchUp: settle,
      rates,
    });
    const deliverer = hookedDeliverer({ ...delivery, clock }, hooks);
    this.#queue =
      settings.queue === undefined
        ? new MemoryDeliveryQueue({ deliverer, clock })
        : settings.queue(deliverer);
    this.#outbox = new Outbox({
      repository,
      queue: this.#queue,
      index: this.#index,
      clock,
      intervalMs: settings.redeliveryIntervalMs,
      leaseMs: settings.redeliveryLeaseMs,
      replayInlineLimit: settings.replayInlineLimit,
      replayPaceMs: settings.replayPaceMs,
      onError,
    });
    this.#retention = new AttemptRetention({
      repository,
      clock,
      retentionMs: settings.attemptRetentionMs,
      intervalMs: settings.attemptRetentionIntervalMs,
      onError,
    });
    const codec = auditCursorCodec(settings.cursorKey, clock);
    const { endpointUrl, generateId, basePath } = settings;
    let document: string | undefined;
    // The service's own topic is known beside the platform's: any subscription may name it.
    const catalog =
      settings.catalog === undefined ? undefined : withOperationalTopic(settings.catalog);
    this.#context = {
      repository,
      clock,
      body: {
        ...subscriptionRequestDefaults,
        checkUrl: endpointUrlPolicy(endpointUrl),
        catalog,
      },
      create: {
        ...(endpointUrl === undefined ? {} : { endpointUrl }),
        ...(catalog === undefined ? {} : { catalog }),
        clock,
        generateId,
        collectionPath: `${basePath}/v1/subscriptions`,
      },
      maxPerAccount: settings.maxSubscriptionsPerAccount,
      maxBodyBytes: settings.maxBodyBytes,
      graceMs: settings.secretGracePeriodMs,
      collectionPath: `${basePath}/v1/subscriptions`,
      pages: pageNumberValidator(SERVICE_PAGES),
      cursors: cursorValidator({ codec, ...SERVICE_CURSORS }),
      codec,
      settle,
      replay: (accountCode, selection) => this.#outbox.replay(accountCode, selection),
      replayPaceMs: settings.replayPaceMs,
      openApi: () => {
        document ??= JSON.stringify(openApiDocument(settings));
        return document;
      },
    };
    this.#portal =
      settings.portalKey === undefined ? undefined : new PortalTokens(settings.portalKey, clock);
    // The page is served where its tokens are taken: with a portalKey.
    this.#portalPage =
      settings.portalKey === undefined
        ? undefined
        : new PortalPage(basePath, settings.portalFrameAncestors);
    const { limiter, identify } = settings;
    this.#gate =
      limiter === undefined
        ? undefined
        : createRateLimitGate<GateRequest>({
            ...(settings.limits as WebhookServiceLimits | undefined),
            limiter,
            identify: (gated) => {
              // A portal token is the account it names; the platform's identify never sees it.
              const identity =
                gated.portal === undefined ? identify(gated.request) : portalIdentity(gated.portal);
              gated.identity = identity;
              return identity;
            },
            anonymous: 'refuse',
            onError: (event) => onError(event.error),
          });
  }

  start(): Promise<void> {
    if (this.#closed) return Promise.reject(closedError());
    this.#starting ??= this.#begin().catch((error: unknown) => {
      this.#starting = undefined;
      throw error;
    });
    return this.#starting;
  }

  async #begin(): Promise<void> {
    const { repository, onWarning, pollIntervalMs } = this.#settings;
    if (repository.secretsAtRest === 'plain' && !this.#warned) {
      this.#warned = true;
      try {
        onWarning(
          'api-conventions webhook service: signing secrets are stored unencrypted in the repository. Give the repository an encryption key (32 bytes, from configuration) to store them with AES-256-GCM.',
        );
      } catch (error) {
        this.#settings.onError(error);
      }
    }
    // Before this process records or claims anything: every lease given back is a predecessor's.
    await this.#outbox.takeOver();
    await this.#mirror.start();
    await this.#checkSecrets();
    if (pollIntervalMs > 0 && !this.#closed && this.#timer === undefined) {
      this.#timer = setInterval(() => this.#mirror.signal(), pollIntervalMs);
      this.#timer.unref?.();
    }
    this.#retention.start();
    // Not awaited: the sweep may wait for room in the queue, whose attempts wait for the start.
    this.#outbox.start().catch(this.#settings.onError);
  }

  /**
   * Tell `onError` of each subscription none of whose secrets the repository's keys can read:
   * every delivery to it would fail `secret_unreadable` (keys changed or missing since).
   */
  async #checkSecrets(): Promise<void> {
    const { repository, clock, onError } = this.#settings;
    if (repository.unreadableSecrets === undefined) return;
    try {
      for (const error of await repository.unreadableSecrets(clock.now())) onError(error);
    } catch (error) {
      onError(error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#retention.close();
    await this.#outbox.close();
    await this.#mirror.close();
    await this.#queue.close();
  }

  deleteExpiredAttempts(): Promise<number> {
    return this.#retention.sweep();
  }

  async redeliver(): Promise<number> {
    await this.start();
    return this.#outbox.sweep();
  }

  stats(): WebhookServiceStats {
    return { ...this.#index.stats(), revision: this.#mirror.revision };
  }

  async publish(event: PublishEvent, options?: PublishOptions): Promise<PublishResult> {
    const { accountCode, kind, propertyId, data } = readWebhookEvent(event);
    if (isOperationalKind(kind)) throw operationalRefused(kind);
    const idempotencyKey = readIdempotencyKey(options);
    await this.start();
    const createdAt = this.#settings.clock.now();
    // Checked already but for the data, which createWebhookMessage refuses as the event's.
    const message = createWebhookMessage(
      { accountCode, kind, ...(propertyId === undefined ? {} : { propertyId }), data },
      { clock: { now: () => createdAt } },
    );
    const matches = this.#index.match({ accountCode, kind, propertyId });
    const fingerprint =
      idempotencyKey === undefined ? undefined : fingerprintOf(kind, propertyId, data);
    const kept = await this.#record(
      message,
      { accountCode, kind, propertyId, createdAt },
      matches,
      idempotencyKey === undefined || fingerprint === undefined
        ? undefined
        : {
            key: idempotencyKey,
            fingerprint,
            expiresAt: createdAt + this.#settings.idempotencyWindowMs,
          },
    );
    if (idempotencyKey === undefined)
      return { id: message.id, deliveries: matches.map((s) => s.id) };
    if (kept === undefined) throw keysNotKept();
    if (kept.fingerprint !== fingerprint)
      throw idempotencyKeyReused(idempotencyKey, kept.messageId);
    return { id: kept.messageId, deliveries: kept.deliveries };
  }

  /**
   * Publish an operational event through the outbox, to every subscription of the account that
   * names it, whatever its properties, except the one it is about. Its id is the fact's: a fact
   * raised again (by another instance, or after a failed try) records nothing new.
   */
  async #raise(fact: OperationalFact): Promise<void> {
    const { accountCode, kind, about, data } = fact;
    const createdAt = this.#settings.clock.now();
    const id = operationalMessageId(accountCode, kind, fact.fact);
    const message = createWebhookMessage(
      { accountCode, kind, data },
      { clock: { now: () => createdAt }, generateId: () => id },
    );
    const matches = this.#index.match(
      { accountCode, kind },
      { everyProperty: true, except: about },
    );
    await this.#record(message, { accountCode, kind, createdAt }, matches);
  }

  /** Record a message and its deliveries in the outbox, then queue them. */
  #record(
    message: { readonly id: string; readonly body: string },
    event: {
      readonly accountCode: string;
      readonly kind: string;
      readonly propertyId?: string | undefined;
      readonly createdAt: number;
    },
    matches: readonly { readonly id: string; readonly endpointUrl: string }[],
    key?: MessageKey,
  ): Promise<KeptMessage | undefined> {
    const { accountCode, kind, propertyId, createdAt } = event;
    return this.#outbox.publish(
      {
        accountCode,
        id: message.id,
        kind,
        ...(propertyId === undefined ? {} : { propertyId }),
        body: message.body,
        createdAt,
      },
      matches,
      key,
    );
  }

  portalToken(request: PortalTokenRequest): PortalToken {
    if (this.#portal === undefined) throw noPortalKey();
    return this.#portal.issue(request, this.#settings.basePath);
  }

  readonly fetch = (request: Request): Promise<Response> => this.#respond(request);

  async #respond(request: Request): Promise<Response> {
    let parts: ResponseParts;
    try {
      parts = await this.#answer(request);
    } catch (error) {
      this.#settings.onError(error);
      parts = internalError();
    }
    return new Response(parts.body === '' || request.method === 'HEAD' ? null : parts.body, {
      status: parts.status,
      headers: parts.headers,
    });
  }

  async #answer(request: Request): Promise<ResponseParts> {
    const url = new URL(request.url);
    const page = this.#portalPage?.answer(request.method, url.pathname, request.headers);
    if (page !== undefined) return page;
    // Matched once, answered after identify; an anonymous route (the OpenAPI document) at once:
    // no identify, no limiter, no start (it reads nothing the service loads).
    const route = matchRoute(request.method, url.pathname, this.#settings.basePath);
    if (route.ok && isAnonymous(route.operation)) {
      return operations[route.operation](this.#context, { request, url, accountCode: '', id: '' });
    }
    const unready = await this.#ready();
    if (unready !== undefined) return unready;
    const bearer = this.#bearer(request);
    if (bearer !== undefined && !bearer.ok) return bearer.response;
    const portal = bearer?.claims;
    const gate = this.#gate;
    if (gate === undefined) {
      const identity =
        portal === undefined ? await this.#identify(request) : portalIdentity(portal);
      return this.#identified(request, url, route, identity, portal);
    }
    const gated: GateRequest = { request, portal };
    const verdict = await gate.check(gated, request.method, url.pathname, (g) =>
      g.request.headers.get(gate.trackingIdHeader),
    );
    if (verdict.response !== undefined) return verdict.response;
    try {
      const parts = await this.#identified(request, url, route, await gated.identity, portal);
      return { ...parts, headers: { ...parts.headers, ...verdict.headers } };
    } finally {
      verdict.release();
    }
  }

  /** Started, or the 503 that says why not. */
  async #ready(): Promise<ResponseParts | undefined> {
    if (this.#closed) return unavailable('The service is shutting down; try another instance.');
    try {
      await this.start();
      return undefined;
    } catch (error) {
      this.#settings.onError(error);
      return unavailable('The service could not load its subscriptions; try again shortly.');
    }
  }

  /**
   * The portal token a request carries as `Authorization: Bearer portal.…`: its claims, or the
   * 401 that refuses it; `undefined` for a request with no portal token (`identify` tells who it
   * is). The answers never show the token.
   */
  #bearer(
    request: Request,
  ):
    | { readonly ok: true; readonly claims: PortalClaims }
    | { readonly ok: false; readonly response: ResponseParts }
    | undefined {
    const token = bearerToken(request.headers.get('authorization'));
    if (token === undefined || !token.startsWith(PORTAL_TOKEN_PREFIX)) return undefined;
    const verified = this.#portal?.verify(token);
    if (verified?.ok === true) return verified;
    if (verified?.reason === 'expired') {
      return {
        ok: false,
        response: portalRefused(
          'portal_token_expired',
          'Portal session expired',
          'The portal session expired; open the portal again from your account to start a new one.',
        ),
      };
    }
    return {
      ok: false,
      response: portalRefused(
        'portal_token_invalid',
        'Portal token invalid',
        this.#portal === undefined
          ? 'This service takes no portal tokens; open the portal again from your account.'
          : 'The portal token is not one this service issued, or it was changed; open the portal again from your account.',
      ),
    };
  }

  /** The identity of a request outside the gate; a throwing identify is a failure to attribute. */
  async #identify(request: Request): Promise<unknown> {
    try {
      return await this.#settings.identify(request);
    } catch (error) {
      this.#settings.onError(error);
      return NOT_ATTRIBUTED;
    }
  }

  async #identified(
    request: Request,
    url: URL,
    route: RouteMatch,
    identity: unknown,
    portal: PortalClaims | undefined,
  ): Promise<ResponseParts> {
    if (identity === NOT_ATTRIBUTED) {
      return serviceProblem(500, 'request_not_attributed', 'The request could not be attributed', {
        detail: 'The service failed to tell who sent this request, so it was not processed.',
      });
    }
    const accountCode = accountOf(identity);
    if (accountCode === undefined) {
      return serviceProblem(401, 'unauthenticated', 'Authentication required', {
        detail: 'This service serves identified clients only; send your credentials.',
      });
    }
    if (!route.ok) return route.response;
    if (portal?.readOnly === true && !isReading(request.method)) return readOnlyRefused();
    const input: OperationRequest = { request, url, accountCode, id: route.id };
    return operations[route.operation](this.#context, input);
  }
}

const NOT_ATTRIBUTED = Symbol('not attributed');

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case), if any. */
function bearerToken(header: string | null): string | undefined {
  if (header === null) return undefined;
  const match = /^bearer +(\S+)$/i.exec(header);
  return match?.[1];
}

/** Who a portal token's requests are: its account, counted under a client id of its own. */
function portalIdentity(claims: PortalClaims): { clientId: string; accountCode: string } {
  return { clientId: `portal:${claims.accountCode}`, accountCode: claims.accountCode };
}

function portalRefused(
  code: 'portal_token_invalid' | 'portal_token_expired',
  title: string,
  detail: string,
): ResponseParts {
  return serviceProblem(401, code, title, {
    detail,
    headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
  });
}

function readOnlyRefused(): ResponseParts {
  return serviceProblem(403, 'portal_read_only', 'Read-only portal session', {
    detail:
      'This portal session is read-only: it reads subscriptions and deliveries but changes nothing. Ask for a portal session that may make changes.',
  });
}

/** portalToken() on a service made without the key that signs them. */
function noPortalKey(): ConfigurationError {
  return refused(
    'portalKey',
    'given to createWebhookService to issue portal tokens (a string or Uint8Array of at least 32 bytes, such as crypto.randomBytes(32), the same on every instance)',
    undefined,
  );
}

/** The account code of an identity, or `undefined` when it names none. */
function accountOf(identity: unknown): string | undefined {
  if (typeof identity !== 'object' || identity === null) return undefined;
  const { accountCode } = identity as { accountCode?: unknown };
  return typeof accountCode === 'string' && accountCode !== '' ? accountCode : undefined;
}

function operationalRefused(kind: string): InvalidRequestError {
  return new InvalidRequestError(
    'invalid_event',
    `event.kind must be a kind of the platform's own topics, got "${kind}": the topic ${OPERATIONAL_TOPIC} is the webhook service's, which publishes its events itself.`,
    { pointer: '/kind' },
  );
}

function unavailable(detail: string): ResponseParts {
  return serviceProblem(503, 'service_unavailable', 'Service unavailable', {
    detail,
    headers: { 'retry-after': '1' },
  });
}

// Read as "closed": a closed service stays closed.
const OPEN = worded(
  oneOf('open'),
  'open (a closed service stays closed: make a new one with createWebhookService())',
);

function closedError(): ConfigurationError {
  return invalidValue(OPEN, 'closed', 'the webhook service');
}

/** A repository that answered a keyed message with nothing keeps no idempotency keys. */
function keysNotKept(): ConfigurationError {
  return refused(
    'repository.recordMessage(message, deliveries, { key })',
    'the message the idempotency key holds (a repository that keeps keys: see SubscriptionRepository.recordMessage)',
    undefined,
  );
}
