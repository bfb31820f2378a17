/** The options of every rate limit middleware, read once into the gate's settings. @module */
import { describe } from '../internal/describe.js';
import {
  aBoolean,
  aFunction,
  INVALID,
  oneOf,
  optionsOf,
  type Rule,
  readOptions,
  refused,
  requiredValue,
  unreadable,
  wholeNumber,
  withMethods,
} from '../internal/options.js';
import { WITHOUT_STATUSES } from '../limits/cost.js';
import type { CheckOptions, Decision, LimitRequest } from '../limits/limiter.js';
import { DEFAULT_IPV6_SUBNET, IPV6_SUBNET_RULE, networkKey } from './anonymous-key.js';
import { fieldPolicies, fieldsRule, type RateLimitFieldPolicies } from './rate-limit-fields.js';
import type { RateLimitResponseOptions } from './rate-limit-response.js';
import {
  DEFAULT_TRACKING_ID_HEADER,
  headerName,
  randomTrackingId,
  type TrackingIdSource,
} from './tracking-id.js';

/** Who sends a request, as `identify` maps it. `T`: the account types of the limiter's presets. */
export interface Identity<T extends string = string> {
  /** The client (application) id. */
  readonly clientId: string;
  /** The account code. */
  readonly accountCode: string;
  /** Picks the preset; one without a preset is limited as anonymous ({@link AnonymousOptions}). */
  readonly accountType?: T | undefined;
}

/** What the gate does when it cannot decide: let the request through, or refuse it with 503. */
export type FailureMode = 'open' | 'closed';

/** What the gate does when `identify` throws (see `RateLimitOptions.onIdentifyError`). */
export type IdentifyErrorMode = 'error' | 'anonymous' | 'allow';

/**
 * How a request `identify` cannot attribute (no identity, or one the limiter cannot count) is
 * limited: under the client id {@link ANONYMOUS_CLIENT_ID} and the account code `remote:` + key.
 */
export interface AnonymousOptions<R, T extends string = string> {
  /**
   * The account type whose preset limits anonymous requests.
   * @defaultValue the limiter's `defaultAccountType` (`'development'`, the strictest, unless set)
   */
  accountType?: T;
  /**
   * The key anonymous requests are counted by, at most 249 characters; `undefined` shares the key
   * `unknown`. Taken as given: to count by network as the default does, return
   * `anonymousNetworkKey(address, { ipv6Subnet })`.
   * @defaultValue the network of the remote address the adapter reads (`req.ip` on Express and
   *   Fastify, following `trust proxy`; the socket's on node:http, Koa and Hono with
   *   @hono/node-server), by `anonymousNetworkKey`
   */
  key?: (request: R) => string | null | undefined;
  /**
   * The IPv6 prefix length, from 1 to 128, by which the default key counts an IPv6 client: every
   * address of one such network shares a counter (an IPv4 address, mapped or not, is counted
   * alone). Refused beside `key`, which is taken as given.
   * @defaultValue 56
   */
  ipv6Subnet?: number;
}

/** The client id under which anonymous requests are counted (see {@link AnonymousOptions}). */
export const ANONYMOUS_CLIENT_ID = 'anonymous';

/** What the gate did about a failure: let it through, answered 503/500, or limited as anonymous. */
export type FailureOutcome = FailureMode | 'anonymous';

/**
 * Where a failure happened: the tracking id source (replaced by a random id), `skip`, `identify`,
 * the limiter or its store (or a malformed decision), the release of a lease (held until its store
 * frees it), or a throwing handler (node adapter). See docs/middleware.md.
 */
export type GatePhase = 'tracking-id' | 'skip' | 'identify' | 'limiter' | 'release' | 'handler';

/** A failure the gate reports through `onError`. */
export interface RateLimitErrorEvent<R> {
  /** What was thrown or rejected. */
  readonly error: unknown;
  /** The framework's request. */
  readonly request: R;
  /** Where it happened. */
  readonly phase: GatePhase;
  /** The request's tracking id (for `tracking-id`, the one that replaced it). */
  readonly trackingId: string;
  /** What the gate did about it (see docs/middleware.md for each phase). */
  readonly failure: FailureOutcome;
}

/** Anything with the limiter's `check`: synchronous (memory store) or asynchronous (Redis). */
export interface CheckingLimiter<T extends string = string> {
  /** The limiter's `outage`; absent or `'reject'` leaves outages to the gate's `failure`. */
  readonly outage?: string;
  /** Decide one request; statuses are asked for only when the RateLimit fields are sent. */
  check(request: LimitRequest<T>, options?: CheckOptions): Decision | Promise<Decision>;
}

/** Options of every rate limit middleware; `T`, the account types, comes from the limiter. */
export interface RateLimitOptions<R, T extends string = string>
  extends Pick<RateLimitResponseOptions, 'trackingIds' | 'trackingIdHeader' | 'rateLimitHeaders'> {
  /** The limiter (`createLimiter`). */
  limiter: CheckingLimiter<T>;
  /**
   * Map a request to its identity, from what your authentication established; `undefined` limits
   * it as anonymous (see `anonymous`).
   */
  identify: (
    request: R,
  ) => Identity<NoInfer<T>> | null | undefined | Promise<Identity<NoInfer<T>> | null | undefined>;
  /**
   * When `identify` throws or rejects: `'error'` answers 500 with problem details, `'anonymous'`
   * limits as anonymous, `'allow'` lets it through unlimited; each is reported through `onError`.
   * @defaultValue `'error'`
   */
  onIdentifyError?: IdentifyErrorMode;
  /**
   * How requests that `identify` cannot attribute are limited (see {@link AnonymousOptions}), or
   * `'refuse'` to answer them 401 with problem details instead.
   * @defaultValue by remote address, under the limiter's default account type (Development)
   */
  anonymous?: AnonymousOptions<R, NoInfer<T>> | 'refuse';
  /** Requests for which this returns true are not limited (health checks, say). */
  skip?: (request: R) => boolean | Promise<boolean>;
  /**
   * When `skip` or the limiter fails: `open` lets the request through, `closed` answers 503 with
   * Retry-After. Refused beside a limiter that decides outages itself: one place decides.
   * @defaultValue `'open'`
   */
  failure?: FailureMode;
  /** Retry-After, whole seconds, of the 503 under `failure: 'closed'`. @defaultValue 1 */
  failureRetryAfterSeconds?: number;
  /** Told of every failure. @defaultValue one line on `console.error` */
  onError?: (event: RateLimitErrorEvent<R>) => void;
  /**
   * Also set the tracking id header on admitted responses (429 and 503 always carry it); off by
   * default since those responses are the service's own.
   * @defaultValue false
   */

  trackingIdOnAdmitted?: boolean;
}

/** The options as the gate runs on them: read once, defaults applied. */
export interface GateSettings<R> {
  readonly limiter: CheckingLimiter;
  readonly identify: (request: R) => unknown;
  readonly skip: ((request: R) => unknown) | undefined;
  readonly onError: ((event: RateLimitErrorEvent<R>) => void) | undefined;
  readonly onIdentifyError: IdentifyErrorMode;
  /** The key of anonymous requests; `undefined` when they are refused with 401. */
  readonly anonymousKey: ((request: R) => unknown) | undefined;
  readonly anonymousType: string | undefined;
  readonly failure: FailureMode;
  readonly failureRetryAfterSeconds: number;
  /** The tracking id header, lower case. */
  readonly header: string;
  readonly trackingIds: TrackingIdSource;
  /** Which policies the RateLimit fields name, or `false` to send none. */
  readonly withFields: RateLimitFieldPolicies | false;
  /** What the gate asks the limiter: no statuses when nothing writes them. */
  readonly asked: CheckOptions | undefined;
  readonly trackingIdOnAdmitted: boolean;
}

const anonymousFields = optionsOf(
  {
    accountType: {
      expected: "the name of an account type of the limiter's presets",
      read: (value) => (typeof value === 'string' ? value : INVALID),
    } satisfies Rule<string>,
    key: aFunction<(request: unknown) => unknown>('maps a request to its key'),
    ipv6Subnet: IPV6_SUBNET_RULE,
  },
  '{ accountType?, key?, ipv6Subnet? }',
);

const anonymousRule: Rule<(typeof anonymousFields extends Rule<infer A> ? A : never) | 'refuse'> = {
  expected: `"refuse" or ${anonymousFields.expected}`,
  read: (value, name) => (value === 'refuse' ? value : anonymousFields.read(value, name)),
};

/** The rules of every gate option, one per key. @internal */
export const GATE_RULES = {
  limiter: withMethods<CheckingLimiter>(['check'], 'a limiter made by createLimiter()'),
  identify: aFunction<(request: unknown) => unknown>(
    'maps a request to { clientId, accountCode, accountType? }',
  ),
  onIdentifyError: oneOf('error', 'anonymous', 'allow'),
  anonymous: anonymousRule,
  skip: aFunction<(request: unknown) => unknown>('tells whether to skip a request'),
  failure: oneOf('open', 'closed'),
  failureRetryAfterSeconds: wholeNumber(1),
  onError: aFunction<(event: RateLimitErrorEvent<unknown>) => void>('takes an error event'),
  trackingIdOnAdmitted: aBoolean,
  trackingIds: aFunction<TrackingIdSource>('returns a tracking id'),
  trackingIdHeader: headerName,
  rateLimitHeaders: fieldsRule,
};

const defaults = {
  onIdentifyError: 'error',
  failureRetryAfterSeconds: 1,
  trackingIdOnAdmitted: false,
  trackingIds: randomTrackingId,
  trackingIdHeader: DEFAULT_TRACKING_ID_HEADER.toLowerCase(),
  rateLimitHeaders: false,
} as const;

/**
 * Read the options of a rate limit middleware.
 * @param options - the options as given
 * @param remoteAddress - the adapter's reader of a request's remote address
 * @throws ConfigurationError `invalid_option` or `invalid_header_name` for bad options
 */
export function readGateOptions<R>(
  options: RateLimitOptions<R, string>,
  remoteAddress: ((request: R) => string | null | undefined) | undefined,
): GateSettings<R> {
  const read = readOptions(options, 'The rate limit middleware', GATE_RULES, {
    defaults,
    required: true,
    example: '{ limiter, identify }',
  });
  const limiter = requiredValue(GATE_RULES.limiter, read.limiter, 'limiter');
  const identify = requiredValue(GATE_RULES.identify, read.identify, 'identify');
  const failure = oneSourceOfFailure(limiter, read.failure);
  const { anonymous } = read;
  const refused = anonymous === 'refuse';
  return {
    limiter,
    identify: identify as (request: R) => unknown,
    skip: read.skip as ((request: R) => unknown) | undefined,
    onError: read.onError,
    onIdentifyError: read.onIdentifyError,
    anonymousKey: refused ? undefined : anonymousKey(anonymous, remoteAddress),
    anonymousType: refused ? undefined : anonymous?.accountType,
    failure,
    failureRetryAfterSeconds: read.failureRetryAfterSeconds,
    header: read.trackingIdHeader,
    trackingIds: read.trackingIds,
    withFields: fieldPolicies(read.rateLimitHeaders),
    // Without the RateLimit fields nothing reads an admitted decision's statuses.
    asked: read.rateLimitHeaders === false ? WITHOUT_STATUSES : undefined,
    trackingIdOnAdmitted: read.trackingIdOnAdmitted,
  };
}

const noAddress = (): undefined => undefined;

/** The key of anonymous requests: the integrator's as given, else the remote address's network. */
function anonymousKey<R>(
  anonymous:
    | { key?: ((request: unknown) => unknown) | undefined; ipv6Subnet?: number | undefined }
    | undefined,
  remoteAddress: ((request: R) => string | null | undefined) | undefined,
): (request: R) => unknown {
  const key = anonymous?.key;
  const subnet = anonymous?.ipv6Subnet;
  if (key !== undefined) {
    if (subnet !== undefined) {
      throw refused(
        'anonymous.ipv6Subnet',
        `left out beside anonymous.key, as it applies to the default key only (return anonymousNetworkKey(address, { ipv6Subnet: ${subnet} }) from anonymous.key instead)`,
        subnet,
      );
    }
    return key;
  }
  if (remoteAddress === undefined) return noAddress;
  const bits = subnet ?? DEFAULT_IPV6_SUBNET;
  return (request) => networkKey(remoteAddress(request), bits);
}

/** The failure mode, refused beside a limiter that decides store outages itself. */
function oneSourceOfFailure(
  limiter: CheckingLimiter,
  failure: FailureMode | undefined,
): FailureMode {
  if (failure === undefined) return 'open';
  let outage: unknown;
  try {
    outage = limiter.outage;
  } catch (cause) {
    throw unreadable('limiter', GATE_RULES.limiter.expected, limiter, cause);
  }
  if (outage !== undefined && outage !== 'reject') {
    throw refused(
      'failure',
      `left out beside a limiter that decides store outages itself (its outage is ${describe(outage)}): decide in one place, or create the limiter without outage, which leaves outages to the middleware`,
      failure,
    );
  }
  return failure;
}
