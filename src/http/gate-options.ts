/**
 * The options of every rate limit middleware, and their reading: each read once, through the one
 * options reader, into the settings the gate runs on.
 * @module
 */
import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import {
  aBoolean,
  aFunction,
  INVALID,
  oneOf,
  optionsOf,
  type Rule,
  readOptions,
  requiredValue,
  wholeNumber,
  withMethods,
} from '../internal/options.js';
import type { CheckOptions, Decision, LimitRequest } from '../limits/limiter.js';
import type { RateLimitResponseOptions } from './rate-limit-response.js';
import {
  DEFAULT_TRACKING_ID_HEADER,
  headerName,
  randomTrackingId,
  type TrackingIdSource,
} from './tracking-id.js';

/**
 * Who sends a request, as `identify` maps it (authentication is the service's own). `T` is the
 * account types of the limiter's presets, when it knows them (`presets.byAccountType`).
 */
export interface Identity<T extends string = string> {
  /** The client (application) id. */
  readonly clientId: string;
  /** The account code. */
  readonly accountCode: string;
  /**
   * Picks the preset when the limiter has one per account type (`live`, `development`, `trial`).
   * One the limiter has no preset for is limited as anonymous (see {@link AnonymousOptions}).
   */
  readonly accountType?: T | undefined;
}

/** What the gate does when it cannot decide: let the request through, or refuse it with 503. */
export type FailureMode = 'open' | 'closed';

/**
 * What the gate does when `identify` throws or rejects: `'error'` answers 500 with problem
 * details, `'anonymous'` limits the request as anonymous (see {@link AnonymousOptions}),
 * `'allow'` lets it through unlimited. Each is reported through `onError` (phase `identify`).
 */
export type IdentifyErrorMode = 'error' | 'anonymous' | 'allow';

/**
 * How a request that `identify` cannot attribute is limited: `identify` returned nothing, or an
 * identity without a client id or account code, or one the limiter cannot count (an account type
 * without a preset, an id that is not a string). Such a request is counted under the client id
 * {@link ANONYMOUS_CLIENT_ID} and the account code `remote:` + its key.
 */
export interface AnonymousOptions<R, T extends string = string> {
  /**
   * The account type whose preset limits anonymous requests.
   * @defaultValue the limiter's `defaultAccountType` (`'development'`, the strictest, unless set)
   */
  accountType?: T;
  /**
   * The key anonymous requests are counted by. Return `undefined` when there is none: every such
   * request then shares the key `unknown`. At most 249 characters (the limiter's account codes
   * are 256 at most).
   * @defaultValue the remote address the adapter reads from the connection (Express's and
   *   Fastify's `req.ip`, which follow their `trust proxy` settings; the socket's address on
   *   node:http and Koa; on Hono, the node connection's with @hono/node-server, else none)
   */
  key?: (request: R) => string | null | undefined;
}

/** The client id under which anonymous requests are counted (see {@link AnonymousOptions}). */
export const ANONYMOUS_CLIENT_ID = 'anonymous';

/**
 * What the gate did about a failure: `open`, the failure stopped nothing; `closed`, the request
 * was answered with an error (503, or 500 for a failing `identify`); `anonymous`, it was limited
 * as anonymous.
 */
export type FailureOutcome = FailureMode | 'anonymous';

/**
 * Where a failure happened:
 * - `tracking-id`: the `trackingIds` source or the reading of the request's header; the id is
 *   replaced by a random one and the request goes on as if nothing had failed.
 * - `skip`, `identify`: the integrator's function threw, rejected or returned something unusable.
 * - `limiter`: the limiter or its store threw or rejected, or answered a decision that is neither a
 *   well-formed admitted one nor a well-formed refused one (a `ConfigurationError`
 *   `invalid_option`).
 * - `release`: giving an admitted request's lease back threw or rejected (its store is down, say);
 *   the request was already let through, and the lease stays held until its store frees it.
 * - `handler`: the node adapter's report of a throwing handler.
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
  /**
   * What the gate did about this failure. `closed`: it answered 503 because of it (a `skip` or
   * `limiter` failure under `failure: 'closed'`), or 500 (an `identify` that threw, by default).
   * `anonymous`: the request was limited as anonymous (an identity the limiter cannot count, or
   * `onIdentifyError: 'anonymous'`). `open`: the failure stopped nothing: the request was let
   * through by `failure: 'open'` or `onIdentifyError: 'allow'`, or, whatever the options, given a
   * random tracking id (`tracking-id`) or already let through when it failed (`release`,
   * `handler`).
   */
  readonly failure: FailureOutcome;
}

/** Anything with the limiter's `check`: synchronous (memory store) or asynchronous (Redis). */
export interface CheckingLimiter<T extends string = string> {
  /**
   * What a store outage does, when the limiter decides it (see `LimiterOptions.outage`); absent
   * or `'reject'`: the gate's `failure` decides.
   */
  readonly outage?: string;
  /**
   * Decide one request. The gate asks for statuses (`options.statuses`) only when it sends the
   * RateLimit fields; a limiter may ignore the options.
   */
  check(request: LimitRequest<T>, options?: CheckOptions): Decision | Promise<Decision>;
}

/**
 * Options of every rate limit middleware. `T`, the account types, comes from the limiter: with
 * `presets.byAccountType`, `identify` must answer `'live'`, `'development'` or `'trial'`.
 */
export interface RateLimitOptions<R, T extends string = string>
  extends Pick<RateLimitResponseOptions, 'trackingIds' | 'trackingIdHeader' | 'rateLimitHeaders'> {
  /** The limiter (`createLimiter`). */
  limiter: CheckingLimiter<T>;
  /**
   * Map a request to its client id, account code and account type. Authentication is outside the
   * specification: read them from what your authentication established. Return `undefined` for
   * a request you cannot attribute: it is limited as anonymous (see `anonymous`).
   */
  identify: (
    request: R,
  ) => Identity<NoInfer<T>> | null | undefined | Promise<Identity<NoInfer<T>> | null | undefined>;
  /**
   * When `identify` throws or rejects (a bug in wiring, such as reading a user that an
   * authentication step registered after the middleware has not set yet): `'error'` answers 500
   * with problem details, `'anonymous'` limits the request as anonymous, `'allow'` lets it
   * through unlimited. Each is reported through `onError`.
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
   * When `skip` fails, or the limiter fails (its store has an outage and the limiter leaves the
   * decision to its caller, `outage: 'reject'`): `open` lets the request through, `closed`
   * answers 503 with a problem details body and a Retry-After. A limiter that decides outages
   * itself (`outage` `'open'`, `'closed'` or `'fallback'`) is refused together with this option:
   * one place decides.
   * @defaultValue `'open'`
   */
  failure?: FailureMode;
  /**
   * Retry-After, in whole seconds (1 or more), of the 503 answered under `failure: 'closed'`.
   * @defaultValue 1 (the specification's recommended backoff)
   */
  failureRetryAfterSeconds?: number;
  /** Told of every failure. @defaultValue one line on `console.error` */
  onError?: (event: RateLimitErrorEvent<R>) => void;
  /**
   * Also set the tracking id header on the responses the middleware lets through. The 429 and
   * the 503 always carry it (the specification's 429 names it) and `onError` always reports it;
   * the responses of admitted requests belong to the service, which often sends a request id of
   * its own, so by default the middleware adds nothing to them (like the RateLimit fields). On,
   * it costs a header on every response (see docs/benchmarks.md, Middleware overhead).
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
  /** Whether to send the RateLimit fields. */
  readonly withFields: boolean;
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
  },
  '{ accountType?, key? }',
);

const anonymousRule: Rule<(typeof anonymousFields extends Rule<infer A> ? A : never) | 'refuse'> = {
  expected: `"refuse" or ${anonymousFields.expected}`,
  read: (value, name) => (value === 'refuse' ? value : anonymousFields.read(value, name)),
};

const rules = {
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
  rateLimitHeaders: aBoolean,
};

const defaults = {
  onIdentifyError: 'error',
  failureRetryAfterSeconds: 1,
  trackingIdOnAdmitted: false,
  trackingIds: randomTrackingId,
  trackingIdHeader: DEFAULT_TRACKING_ID_HEADER.toLowerCase(),
  rateLimitHeaders: false,
} as const;

// Without the RateLimit fields nothing reads an admitted decision's statuses.
const WITHOUT_STATUSES: CheckOptions = Object.freeze({ statuses: false });

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
  const read = readOptions(options, 'The rate limit middleware', rules, {
    defaults,
    required: true,
    example: '{ limiter, identify }',
  });
  const limiter = requiredValue(rules.limiter, read.limiter, 'limiter');
  const identify = requiredValue(rules.identify, read.identify, 'identify');
  const failure = oneSourceOfFailure(limiter, read.failure);
  const { anonymous } = read;
  const refused = anonymous === 'refuse';
  return {
    limiter,
    identify: identify as (request: R) => unknown,
    skip: read.skip as ((request: R) => unknown) | undefined,
    onError: read.onError,
    onIdentifyError: read.onIdentifyError,
    anonymousKey: refused ? undefined : (anonymous?.key ?? remoteAddress ?? noAddress),
    anonymousType: refused ? undefined : anonymous?.accountType,
    failure,
    failureRetryAfterSeconds: read.failureRetryAfterSeconds,
    header: read.trackingIdHeader,
    trackingIds: read.trackingIds,
    withFields: read.rateLimitHeaders,
    asked: read.rateLimitHeaders ? undefined : WITHOUT_STATUSES,
    trackingIdOnAdmitted: read.trackingIdOnAdmitted,
  };
}

const noAddress = (): undefined => undefined;

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
    throw new ConfigurationError(
      'invalid_option',
      'Reading limiter.outage threw; pass a limiter made by createLimiter().',
      { cause },
    );
  }
  if (outage !== undefined && outage !== 'reject') {
    throw new ConfigurationError(
      'invalid_option',
      `The limiter decides store outages itself (outage: ${describe(outage)}) and failure is ${describe(failure)}: decide in one place. Leave failure out, or create the limiter without outage (it then leaves outages to the middleware).`,
    );
  }
  return failure;
}
