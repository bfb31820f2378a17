/** The options of the webhook service, read once by the one options reader. @module */
import { aClock, type Clock, systemClock } from '../../clock.js';
import { GATE_RULES } from '../../http/gate-options.js';
import type { CheckingLimiter, Identity, RateLimitOptions } from '../../http/rate-limit-gate.js';
import { utf8 } from '../../internal/base64.js';
import {
  aFunction,
  INVALID,
  optionsOf,
  type Rule,
  readOptions,
  refused,
  requiredValue,
  wholeNumber,
  withMethods,
} from '../../internal/options.js';
import { isBytes } from '../../internal/read-once.js';
import { MAX_TIMER_MS } from '../../internal/timers.js';
import type { LimitStore } from '../../limits/store.js';
import type { CursorSecret } from '../../pagination/cursor-codec.js';
import { pageSizePresets } from '../../pagination/page-size-presets.js';
import { ENDPOINT_PAUSE_OPTION, pauseWithinAge } from '../delivery/endpoint-pause.js';
import { EXTRA_HEADERS } from '../delivery/extra-headers.js';
import type { DeliveryOptions } from '../delivery/options.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { retrySchedule, SCHEDULE_OPTION } from '../delivery/retry-schedule.js';
import type { Deliverer } from '../delivery/step.js';
import type { EventCatalog } from '../events/event-catalog.js';
import { secretRule, secretSize } from '../signing/secret-rule.js';
import type { SubscriptionRepository } from '../store/repository.js';
import type { EndpointUrlOptions } from '../subscriptions/endpoint-url.js';
import type { DisabledReason, StoredSubscription } from '../subscriptions/subscription.js';
import { SUBSCRIPTION_RULES } from '../subscriptions/subscription-request.js';
import { DEFAULT_PORTAL_FRAME_ANCESTORS, PORTAL_FRAME_ANCESTORS } from './portal-page.js';

/** How the service delivers: the options of `createDeliverer` it does not set itself. */
export type WebhookServiceDeliveryOptions = Pick<
  DeliveryOptions,
  'transport' | 'schedule' | 'maxEndpointPauseMs' | 'timeoutMs' | 'headers' | 'onAttempt' | 'random'
> & {
  /**
   * Where the deliveries of subscriptions with a `rateLimit` are counted: a `MemoryStore` holds
   * the rate on one instance; a `RedisStore` made with `timeSource: 'clock'` (and the service's
   * clock) holds it across every instance that shares it. A store that cannot decide lets the
   * delivery go, told to `onError` (see docs/webhook-service.md, "Rate per subscription").
   * @defaultValue a new `MemoryStore`
   * @example
   * ```ts
   * delivery: { rateLimitStore: new RedisStore({ client: ioredisClient(redis), timeSource: 'clock', prefix: 'rates:' }) }
   * ```
   */
  rateLimitStore?: LimitStore;
};

/** What `onDisabled` is told: the subscription the service disabled, why and when. */
export interface WebhookServiceDisabled {
  /** The subscription as it is now (`status: 'disabled'`, with its reason and time). */
  readonly subscription: StoredSubscription;
  /** `endpoint_failing` or `endpoint_gone` (a 410 answer). */
  readonly reason: DisabledReason;
  /** When, in ms. */
  readonly at: number;
}

/** Options of {@link createWebhookService}. */
export interface WebhookServiceOptions {
  /** Where subscriptions, secrets and the delivery log are kept. */
  repository: SubscriptionRepository;
  /**
   * Who sends a request, from what your authentication established; `undefined` or `null` is
   * answered 401. The same shape as the rate limit middleware's `identify`.
   */
  identify: (
    request: Request,
  ) => Identity | null | undefined | Promise<Identity | null | undefined>;
  /** Put the whole API behind these limits (`createLimiter`), counted by `identify`. */
  limiter?: CheckingLimiter;
  /**
   * How the limits answer, as for the rate limit middleware (RateLimit headers, tracking ids, the
   * failure mode); only with `limiter`.
   */
  limits?: WebhookServiceLimits;
  /** Makes the delivery queue from the service's deliverer. @defaultValue a `MemoryDeliveryQueue` */
  queue?: (deliverer: Deliverer) => DeliveryQueue;
  /**
   * Transport, retry schedule, the bound on a receiver's `Retry-After` (`maxEndpointPauseMs`),
   * timeout, extra headers and `onAttempt` of deliveries.
   */
  delivery?: WebhookServiceDeliveryOptions;
  /** Refuse event patterns the catalog does not know. @defaultValue any well-formed pattern */
  catalog?: EventCatalog;
  /** The endpoint URL policy (https only, the SSRF allow-list, the longest URL). */
  endpointUrl?: EndpointUrlOptions;
  /** @defaultValue {@link systemClock} */
  clock?: Clock;
  /** Makes subscription ids. @defaultValue `crypto.randomUUID` */
  generateId?: () => string;
  /** Subscriptions an account may hold; one more is answered 409. @defaultValue 1000 */
  maxSubscriptionsPerAccount?: number;
  /** The largest request body, in bytes; a larger one is answered 413. @defaultValue 65536 */
  maxBodyBytes?: number;
  /** How long a rotated-out secret keeps signing, in ms. @defaultValue 86400000 (24 h) */
  secretGracePeriodMs?: number;
  /** Where the routes are mounted: `''` serves `/v1/subscriptions`. @defaultValue `''` */
  basePath?: string;
  /**
   * Signs the audit log's cursors, at least 32 bytes (a refusal tells its size, never the key);
   * give the same key to every instance.
   * @defaultValue a random key: cursors hold on this instance until it restarts
   */
  cursorKey?: CursorSecret;
  /**
   * Signs portal tokens (`service.portalToken()`), at least 32 bytes (a refusal tells its size,
   * never the key); give the same key to every instance. Without it the service issues no portal
   * token and takes none: a bearer token that starts `portal.` is answered 401.
   * @defaultValue none
   */
  portalKey?: CursorSecret;
  /**
   * Who may show the portal page in a frame: the `frame-ancestors` sources of its
   * Content-Security-Policy, such as `['https://app.example.com']` for the platform's dashboard.
   * @defaultValue `["'none'"]`: no page may frame it
   */
  portalFrameAncestors?: readonly string[];
  /** Told of every failure the service survived. @defaultValue one line on `console.error` */
  onError?: (error: unknown) => void;
  /** Told once at start when secrets are stored unencrypted. @defaultValue `console.warn` */
  onWarning?: (message: string) => void;
  /**
   * How often the index catches up with the repository besides notifications, in ms (a safety
   * net; the timer does not keep the process alive); 0 turns it off. @defaultValue 30000
   */
  pollIntervalMs?: number;
  /**
   * How long delivery attempts are kept, in ms: older ones are deleted, 1,000 a statement, every
   * `attemptRetentionIntervalMs` (the timer does not keep the process alive) and when
   * `deleteExpiredAttempts()` of the service is called.
   * @defaultValue 2592000000 (30 days)
   */
  attemptRetentionMs?: number;
  /** How often expired attempts are deleted, in ms; 0 turns the timer off. @defaultValue 3600000 */
  attemptRetentionIntervalMs?: number;
  /**
   * How often pending deliveries that are due and no queue holds (their lease passed) are queued
   * again, in ms (the timer does not keep the process alive); 0: only at start. @defaultValue 10000
   */
  redeliveryIntervalMs?: number;
  /**
   * How long a delivery handed to a queue is left to it past its due time before a sweep queues
   * it again, in ms. With the memory queue on several instances of one repository, a delivery
   * waiting longer than this in one instance's queue may be sent twice (with the same
   * `webhook-id`). @defaultValue 60000
   */
  redeliveryLeaseMs?: number;
  /**
   * A subscription whose endpoint fails without a success for this long, in ms, … @defaultValue
   * 432000000 (5 days)
   */
  disableAfterMs?: number;
  /** … over at least this many messages is disabled. @defaultValue 10 */
  disableMinMessages?: number;
  /** Told of every subscription the service disabled (endpoint failing or gone). Errors are told to `onError`. */
  onDisabled?: (event: WebhookServiceDisabled) => void | Promise<void>;
  /** Deliveries a replay queues at once; a larger replay is accepted and paced. @defaultValue 100 */
  replayInlineLimit?: number;
  /** The interval between two paced replay deliveries, in ms. @defaultValue 100 */
  replayPaceMs?: number;
  /**
   * How long an idempotency key of an account holds the first message published with it, in ms:
   * within it, a publish with the key answers that message and records nothing (see
   * `publish`). A key holds for the window in force when its message was recorded.
   * @defaultValue 86400000 (24 h)
   */
  idempotencyWindowMs?: number;
}

/** The rate limit middleware's options that the service's limits take. */
export type WebhookServiceLimits = Pick<
  RateLimitOptions<Request>,
  | 'rateLimitHeaders'
  | 'trackingIdOnAdmitted'
  | 'trackingIds'
  | 'trackingIdHeader'
  | 'failure'
  | 'failureRetryAfterSeconds'
>;

const REPOSITORY_METHODS = [
  'create',
  'get',
  'list',
  'update',
  'delete',
  'rotateSecret',
  'signingSecrets',
  'changesSince',
  'recordAttempt',
  'attempts',
  'deleteAttemptsBefore',
  'recordMessage',
  'claimDeliveries',
  'replay',
  'deliveryStatus',
  'deleteMessagesBefore',
];

const BASE_PATH: Rule<string> = {
  expected:
    "'' or a path that starts with / and does not end with one, without . or .. segments, such as /webhooks",
  read: (value) =>
    value === '' ||
    (typeof value === 'string' &&
      value.length <= 1024 &&
      /^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(value) &&
      !value.split('/').some(isDotSegment))
      ? value
      : INVALID,
};

/** `.` or `..`, as sent or percent-encoded: a URL's path never holds one, so no request would match. */
function isDotSegment(segment: string): boolean {
  const plain = segment.replace(/%2e/gi, '.');
  return plain === '.' || plain === '..';
}

const DELIVERY = optionsOf(
  {
    transport: aFunction<NonNullable<DeliveryOptions['transport']>>('sends a request'),
    schedule: SCHEDULE_OPTION,
    maxEndpointPauseMs: ENDPOINT_PAUSE_OPTION,
    timeoutMs: wholeNumber(1, MAX_TIMER_MS),
    headers: EXTRA_HEADERS,
    onAttempt: aFunction<NonNullable<DeliveryOptions['onAttempt']>>('takes a DeliveryAttempt'),
    random: aFunction<() => number>('draws a number in [0, 1)'),
    rateLimitStore: withMethods<LimitStore>(
      ['apply', 'release'],
      "a LimitStore (a MemoryStore, or a RedisStore with timeSource: 'clock')",
    ),
  },
  '{ transport, timeoutMs: 15000 }',
);

const CURSOR_KEY_BYTES = 32;

// The bytes of a key, or -1 for what is no key.
const keyBytes = (value: unknown): number =>
  typeof value === 'string' ? utf8(value).length : isBytes(value) ? value.length : -1;

// A key: a refusal tells its size, never the key.
const signingKey = (leftOut: string) =>
  secretRule<CursorSecret>(
    {
      expected: `a string or Uint8Array of at least ${CURSOR_KEY_BYTES} bytes (${leftOut})`,
      read: (value) => (keyBytes(value) >= CURSOR_KEY_BYTES ? (value as CursorSecret) : INVALID),
    },
    (value) =>
      typeof value === 'string' ? `a string of ${keyBytes(value)} bytes` : secretSize(value),
  );

const CURSOR_KEY = signingKey('leave it out for a random one');
const PORTAL_KEY = signingKey(
  'crypto.randomBytes(32) makes one; leave it out to issue no portal tokens',
);

// What a value must be, for the refusal of limits given without a limiter to apply them.
const LIMITS_ALONE =
  'given only with a limiter (pass limiter: createLimiter({ ... }) as well, or leave limits out)';

const SERVICE_RULES = {
  repository: withMethods<SubscriptionRepository>(
    REPOSITORY_METHODS,
    'a SubscriptionRepository such as new MemorySubscriptionRepository()',
  ),
  identify: aFunction<WebhookServiceOptions['identify']>(
    'maps a Request to { clientId, accountCode, accountType? }',
  ),
  limiter: withMethods<CheckingLimiter>(['check'], 'a limiter made by createLimiter()'),
  limits: optionsOf(
    {
      rateLimitHeaders: GATE_RULES.rateLimitHeaders,
      trackingIdOnAdmitted: GATE_RULES.trackingIdOnAdmitted,
      trackingIds: GATE_RULES.trackingIds,
      trackingIdHeader: GATE_RULES.trackingIdHeader,
      failure: GATE_RULES.failure,
      failureRetryAfterSeconds: GATE_RULES.failureRetryAfterSeconds,
    },
    '{ rateLimitHeaders: true }',
  ),
  queue: aFunction<NonNullable<WebhookServiceOptions['queue']>>(
    'makes a DeliveryQueue from a deliverer',
  ),
  delivery: DELIVERY,
  catalog: SUBSCRIPTION_RULES.catalog,
  endpointUrl: SUBSCRIPTION_RULES.endpointUrl,
  clock: aClock,
  generateId: aFunction<() => string>('returns a new id'),
  maxSubscriptionsPerAccount: wholeNumber(),
  maxBodyBytes: wholeNumber(1, 2 ** 30),
  secretGracePeriodMs: wholeNumber(0),
  basePath: BASE_PATH,
  cursorKey: CURSOR_KEY,
  portalKey: PORTAL_KEY,
  portalFrameAncestors: PORTAL_FRAME_ANCESTORS,
  onError: aFunction<(error: unknown) => void>('takes an error'),
  onWarning: aFunction<(message: string) => void>('takes a message'),
  pollIntervalMs: wholeNumber(0, MAX_TIMER_MS),
  attemptRetentionMs: wholeNumber(1),
  attemptRetentionIntervalMs: wholeNumber(0, MAX_TIMER_MS),
  redeliveryIntervalMs: wholeNumber(0, MAX_TIMER_MS),
  redeliveryLeaseMs: wholeNumber(0),
  disableAfterMs: wholeNumber(0),
  disableMinMessages: wholeNumber(1),
  onDisabled: aFunction<NonNullable<WebhookServiceOptions['onDisabled']>>(
    'takes { subscription, reason, at }',
  ),
  replayInlineLimit: wholeNumber(0),
  replayPaceMs: wholeNumber(0),
  idempotencyWindowMs: wholeNumber(1),
};

/** The defaults of {@link WebhookServiceOptions}. */
export const webhookServiceDefaults = Object.freeze({
  /** Subscriptions an account may hold. */
  maxSubscriptionsPerAccount: 1000,
  /** The largest request body, in bytes (64 KiB). */
  maxBodyBytes: 64 * 1024,
  /** How long a rotated-out secret keeps signing (24 h). */
  secretGracePeriodMs: 24 * 60 * 60 * 1000,
  /** The routes' prefix. */
  basePath: '',
  /** Who may frame the portal page: nobody. */
  portalFrameAncestors: DEFAULT_PORTAL_FRAME_ANCESTORS,
  /** The safety-net catch-up of the index (30 s). */
  pollIntervalMs: 30_000,
  /** How long delivery attempts are kept (30 days). */
  attemptRetentionMs: 30 * 24 * 60 * 60 * 1000,
  /** How often expired attempts are deleted (1 h). */
  attemptRetentionIntervalMs: 60 * 60 * 1000,
  /** How often due deliveries no queue holds are queued again (10 s). */
  redeliveryIntervalMs: 10_000,
  /** How long a queue is left a delivery past its due time (1 min). */
  redeliveryLeaseMs: 60_000,
  /** How long an endpoint may fail without a success before it is disabled (5 days). */
  disableAfterMs: 5 * 24 * 60 * 60 * 1000,
  /** How many messages must have failed in that time. */
  disableMinMessages: 10,
  /** Deliveries a replay queues at once. */
  replayInlineLimit: 100,
  /** The interval between two paced replay deliveries (10 a second). */
  replayPaceMs: 100,
  /** How long an idempotency key holds its first message (24 h). */
  idempotencyWindowMs: 24 * 60 * 60 * 1000,
});

/**
 * How the subscription list pages (business data, by page number): offsets stay exact integers,
 * the last page number times the largest size is safe. @internal
 */
export const SERVICE_PAGES = Object.freeze({
  sizes: pageSizePresets.businessData,
  maxPageNumber: Math.floor(Number.MAX_SAFE_INTEGER / pageSizePresets.businessData.maxSize),
});

/** How the attempt listings page (analytical data, by cursor). @internal */
export const SERVICE_CURSORS = Object.freeze({
  sizes: pageSizePresets.analyticalData,
  maxCursorLength: 4096,
});

/**
 * Read the options for the OpenAPI document: those of the service, repository and identify
 * not needed.
 * @throws ConfigurationError `invalid_option` for any bad option
 * @internal
 */
export function readOpenApiOptions(options: Partial<WebhookServiceOptions>) {
  return readOptions(options, 'webhookServiceOpenApi', SERVICE_RULES, {
    defaults: webhookServiceDefaults,
    example: "{ basePath: '/webhooks' }",
  });
}

/** The options as the service runs on them. @internal */
export type ServiceSettings = ReturnType<typeof readServiceOptions>;

/**
 * Read the options once.
 * @throws ConfigurationError `invalid_option` for a missing repository or identify, or any bad option
 * @internal
 */
export function readServiceOptions(options: WebhookServiceOptions) {
  const read = readOptions(options, 'createWebhookService', SERVICE_RULES, {
    defaults: {
      ...webhookServiceDefaults,
      clock: systemClock as Clock,
      generateId: () => globalThis.crypto.randomUUID(),
      onError: reportOnConsole,
      onWarning: warnOnConsole,
      delivery: {},
    },
    required: true,
    example: '{ repository, identify: (request) => ({ clientId, accountCode }) }',
  });
  const repository = requiredValue(SERVICE_RULES.repository, read.repository, 'repository');
  const identify = requiredValue(SERVICE_RULES.identify, read.identify, 'identify');
  if (read.limits !== undefined && read.limiter === undefined) {
    throw refused('limits', LIMITS_ALONE, read.limits);
  }
  const { schedule, maxEndpointPauseMs } = read.delivery;
  pauseWithinAge(maxEndpointPauseMs, schedule ?? retrySchedule(), 'delivery.maxEndpointPauseMs');
  return {
    ...read,
    repository,
    identify,
  };
}

function reportOnConsole(error: unknown): void {
  console.error('api-conventions webhook service:', error);
}

function warnOnConsole(message: string): void {
  console.warn(message);
}
