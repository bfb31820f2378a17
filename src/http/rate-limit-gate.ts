/**
 * The one place that decides a request for every framework adapter: skip, identify, ask the
 * limiter, and turn the answer into a verdict (go on with these headers and this lease, or write
 * this response). No failure is ever a 429, and none switches limiting off unasked: an `identify`
 * that throws is answered 500 (`onIdentifyError`), a request it cannot attribute is limited as
 * anonymous (`anonymous`), and a store outage is decided in one place, the limiter's `outage`
 * option or this gate's `failure` (open, or closed with a 503). Each failure is reported. Synchronous when
 * everything it calls is (the memory store), a promise otherwise; it never throws or rejects, and
 * neither does a verdict's `release`.
 * @module
 */
import { ConfigurationError, InvalidRequestError, isInvalidRequestError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import {
  type AdmittedDecision,
  type CheckOptions,
  type Decision,
  type LimitRequest,
  type RefusedDecision,
  RequestFields,
} from '../limits/limiter.js';
import {
  type ProblemInit,
  problemDetails,
  problemResponse,
  type ResponseParts,
} from './problem-details.js';
import {
  admittedParts,
  type RateLimitResponseOptions,
  refusalParts,
} from './rate-limit-response.js';
import {
  checkHeaderName,
  DEFAULT_TRACKING_ID_HEADER,
  isWellFormedTrackingId,
  randomTrackingId,
  resolveTrackingId,
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

/** What to do with one request. */
export interface GateVerdict {
  /** Write this response and stop; `undefined`: go on to the handler. */
  readonly response: ResponseParts | undefined;
  /** Headers for the handler's response (the tracking id, the RateLimit fields when enabled). */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The request's tracking id: the well-formed one it sent, or one made by `trackingIds`, on
   * first read when nothing has needed it yet.
   */
  readonly trackingId: string;
  /** True when there is a lease to give back with `release` when the response ends. */
  readonly holdsLease: boolean;
  /**
   * Give back the lease. Idempotent; does nothing when there is none. Never throws, and may be
   * called unbound (as an event listener): a limiter that fails to give the lease back is reported
   * through `onError` (phase `release`).
   */
  release(): void;
}

/**
 * Reads the tracking id header of a request; the gate calls it only when it needs the tracking id
 * (a 429 or a 503, a failure report, or `trackingIdOnAdmitted`). Given to {@link RateLimitGate.check}
 * in place of the header's value, it spares admitted requests the read: on node:http, the first
 * read of `req.headers` builds the headers object.
 */
export type TrackingIdReader<R> = (request: R) => string | null | undefined;

/** A gate, made once per middleware. */
export interface RateLimitGate<R> {
  /** The tracking id header, lower case, for the adapter to read from the request. */
  readonly trackingIdHeader: string;
  /**
   * Decide one request.
   * @param request - the framework's request, handed to `identify` and `skip`
   * @param method - the HTTP method
   * @param path - the request target (the query string is ignored)
   * @param incomingTrackingId - the request's tracking id header, if any, or a function that
   * reads it, called (at most once) only when the tracking id is needed
   */
  check(
    request: R,
    method: string,
    path: string,
    incomingTrackingId: string | null | undefined | TrackingIdReader<R>,
  ): GateVerdict | Promise<GateVerdict>;
  /**
   * Report a failure after the decision (a throwing handler); never throws. The request was let
   * through: the event's `failure` is `open`.
   */
  report(error: unknown, request: R, phase: GatePhase, trackingId: string): void;
}

const noop = (): void => undefined;

/**
 * A request's tracking id until something needs it: the id, '' to make one, or the reader of the
 * request's header (its well-formed value, else one made).
 */
type PendingId<R> = string | TrackingIdReader<R>;

// The headers of a verdict that adds none to the handler's response.
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

// Without the RateLimit fields nothing reads an admitted decision's statuses.
const WITHOUT_STATUSES: CheckOptions = Object.freeze({ statuses: false });

const isThenable = <T>(value: unknown): value is PromiseLike<T> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * Make the gate that every adapter runs. Adapters are its only users; use it to write an adapter
 * for a framework the library does not cover.
 * @param options - limiter, identify, skip, failure mode, error callback, tracking id and headers
 * @param remoteAddress - reads the address a request came from: the default key of anonymous
 *   requests (see {@link AnonymousOptions.key}); without it they all share one key
 * @throws ConfigurationError `invalid_option` or `invalid_header_name` for bad options
 */
export function createRateLimitGate<R, T extends string = string>(
  options: RateLimitOptions<R, T>,
  remoteAddress?: (request: R) => string | null | undefined,
): RateLimitGate<R> {
  const { limiter, identify, skip, onError } = checkOptions(options);
  const onIdentifyError: IdentifyErrorMode = options.onIdentifyError ?? 'error';
  const anonymous = options.anonymous;
  const anonymousKey =
    anonymous === 'refuse' ? undefined : (anonymous?.key ?? remoteAddress ?? noAddress);
  const anonymousType = anonymous === 'refuse' ? undefined : anonymous?.accountType;
  const failureRetryAfter = options.failureRetryAfterSeconds ?? 1;
  const header = checkHeaderName(
    options.trackingIdHeader ?? DEFAULT_TRACKING_ID_HEADER,
    'trackingIdHeader',
  );
  const source = options.trackingIds ?? randomTrackingId;
  const withFields = options.rateLimitHeaders === true;
  const asked = withFields ? undefined : WITHOUT_STATUSES;
  const onAdmitted = options.trackingIdOnAdmitted === true;
  const failure: FailureMode = options.failure ?? 'open';

  // The tracking id is read or made only when something needs it: a 429 or a 503, an error
  // report, the header on every response (trackingIdOnAdmitted), or a read of a verdict's
  // `trackingId`. Until then it is pending (see PendingId; no well-formed id is empty). A source
  // or a reader that fails is reported and replaced.
  const make = (request: R): string => {
    if (source === randomTrackingId) return randomTrackingId();
    try {
      return resolveTrackingId(undefined, source);
    } catch (error) {
      const replaced = randomTrackingId();
      report(error, request, 'tracking-id', replaced, 'open');
      return replaced;
    }
  };
  const made = (request: R, pending: PendingId<R>): string => {
    if (typeof pending === 'string') return pending === '' ? make(request) : pending;
    let incoming: string | null | undefined;
    try {
      incoming = pending(request);
    } catch (error) {
      const replaced = make(request);
      report(error, request, 'tracking-id', replaced, 'open');
      return replaced;
    }
    return isWellFormedTrackingId(incoming) ? incoming : make(request);
  };

  /** A verdict whose tracking id is made on first read. */
  class Verdict implements GateVerdict {
    #trackingId: PendingId<R>;
    readonly #request: R;
    // The admitted decision until its lease is given back.
    #lease: AdmittedDecision | undefined;
    readonly holdsLease: boolean;
    readonly release: () => void;

    constructor(
      readonly response: ResponseParts | undefined,
      readonly headers: Readonly<Record<string, string>>,
      trackingId: PendingId<R>,
      request: R,
      lease: AdmittedDecision | undefined,
    ) {
      this.#trackingId = trackingId;
      this.#request = request;
      this.#lease = lease;
      this.holdsLease = lease !== undefined;
      // Adapters pass `release` to event emitters, unbound: one bound function per lease, and
      // nothing made for a verdict without one.
      this.release = lease === undefined ? noop : this.#giveBack.bind(this);
    }

    get trackingId(): string {
      const id = made(this.#request, this.#trackingId);
      this.#trackingId = id;
      return id;
    }

    // Once only, whatever the limiter's release does on a second call. It runs from a response's
    // `close` listener or a `finally`, where a throw would crash the process or turn the handler's
    // response into a 500: a failure is reported instead, and the store frees the lease when it
    // expires.
    #giveBack(): void {
      const lease = this.#lease;
      if (lease === undefined) return;
      this.#lease = undefined;
      try {
        const done: unknown = lease.release();
        if (done !== undefined && isThenable(done)) {
          done.then(undefined, (error: unknown) => this.#releaseFailed(error));
        }
      } catch (error) {
        this.#releaseFailed(error);
      }
    }

    #releaseFailed(error: unknown): void {
      report(error, this.#request, 'release', this.trackingId, 'open');
    }
  }

  // Let the request through without a lease (skipped, or failing open). With the tracking id on
  // admitted responses, it was resolved first (see check).
  const pass = (request: R, trackingId: PendingId<R>): GateVerdict =>
    new Verdict(
      undefined,
      onAdmitted ? { [header]: made(request, trackingId) } : NO_HEADERS,
      trackingId,
      request,
      undefined,
    );

  // Write this response and stop: a 429, or a 503 when failing closed.
  const answer = (response: ResponseParts, request: R, trackingId: string): GateVerdict =>
    new Verdict(response, NO_HEADERS, trackingId, request, undefined);

  // `done` is what the gate did about this failure (see RateLimitErrorEvent.failure).
  const report = (
    error: unknown,
    request: R,
    phase: GatePhase,
    trackingId: string,
    done: FailureOutcome,
  ): void => {
    const event: RateLimitErrorEvent<R> = { error, request, phase, trackingId, failure: done };
    try {
      if (onError === undefined) defaultReport(event);
      else onError(event);
    } catch {
      // A failing error callback must not take the request down with it.
    }
  };

  const fail = (
    error: unknown,
    request: R,
    phase: GatePhase,
    pending: PendingId<R>,
  ): GateVerdict => {
    const trackingId = made(request, pending);
    report(error, request, phase, trackingId, failure);
    if (failure === 'open') return pass(request, trackingId);
    return answer(unavailable(trackingId, header, failureRetryAfter), request, trackingId);
  };

  // identify threw or rejected: 500, anonymous or unlimited, as the integrator chose by name.
  const identifyFailed = (
    error: unknown,
    request: R,
    method: string,
    path: string,
    pending: PendingId<R>,
  ): GateVerdict | Promise<GateVerdict> => {
    const trackingId = made(request, pending);
    if (onIdentifyError === 'allow') {
      report(error, request, 'identify', trackingId, 'open');
      return pass(request, trackingId);
    }
    if (onIdentifyError === 'anonymous') {
      report(error, request, 'identify', trackingId, 'anonymous');
      return limitAnonymous(request, method, path, trackingId);
    }
    return notAttributed(error, request, trackingId);
  };

  // A bug in wiring is not an outage: 500, reported, never let through unlimited.
  const notAttributed = (error: unknown, request: R, pending: PendingId<R>): GateVerdict => {
    const trackingId = made(request, pending);
    report(error, request, 'identify', trackingId, 'closed');
    return answer(identifyError(trackingId, header), request, trackingId);
  };

  // A request identify could not attribute: counted by its key under the anonymous preset, or
  // refused with 401 when the integrator asked so.
  const limitAnonymous = (
    request: R,
    method: string,
    path: string,
    pending: PendingId<R>,
  ): GateVerdict | Promise<GateVerdict> => {
    if (anonymousKey === undefined) {
      const trackingId = made(request, pending);
      return answer(unauthenticated(trackingId, header), request, trackingId);
    }
    let key: unknown;
    try {
      key = anonymousKey(request);
    } catch (error) {
      return notAttributed(error, request, pending);
    }
    const code = `remote:${typeof key === 'string' && key !== '' ? key : 'unknown'}`;
    const fields = new RequestFields(ANONYMOUS_CLIENT_ID, code, anonymousType, method, path);
    return limit(request, fields, method, path, pending, false);
  };

  // The limiter refused the identity (an account type without a preset, an id it cannot count).
  const limitFailed = (
    error: unknown,
    request: R,
    method: string,
    path: string,
    pending: PendingId<R>,
    attributed: boolean,
  ): GateVerdict | Promise<GateVerdict> => {
    if (!isInvalidRequestError(error)) return fail(error, request, 'limiter', pending);
    // The anonymous identity itself cannot be counted: the anonymous options are wrong.
    if (!attributed) return notAttributed(error, request, pending);
    report(error, request, 'identify', made(request, pending), 'anonymous');
    return limitAnonymous(request, method, path, pending);
  };

  // A decision that is neither a well-formed admission nor a well-formed refusal is the limiter's
  // failure, whatever the options: never a 429 built from missing fields. An admission costs two
  // property reads here.
  const decide = (decision: Decision, request: R, trackingId: PendingId<R>): GateVerdict => {
    if (decision?.allowed === true && typeof decision.release === 'function') {
      if (!onAdmitted && !withFields) {
        return new Verdict(undefined, NO_HEADERS, trackingId, request, decision);
      }
      let headers: Record<string, string>;
      try {
        headers = admittedParts(
          decision,
          onAdmitted ? header : undefined,
          onAdmitted ? made(request, trackingId) : '',
          withFields,
        );
      } catch (error) {
        // Statuses the RateLimit fields cannot be written from: the lease is not kept.
        new Verdict(undefined, NO_HEADERS, trackingId, request, decision).release();
        return fail(error, request, 'limiter', trackingId);
      }
      return new Verdict(undefined, headers, trackingId, request, decision);
    }
    if (!isRefusal(decision)) return fail(unreadable(decision), request, 'limiter', trackingId);
    const id = made(request, trackingId);
    // No limit of the client was reached: the limiter could not check (outage: 'closed').
    if (decision.reason === 'unavailable') {
      return answer(unavailable(id, header, decision.retryAfterSeconds), request, id);
    }
    return answer(refusalParts(decision, header, id, withFields), request, id);
  };

  // The sync path (memory store, plain identify) runs straight through, without a closure or a
  // promise; a promise from identify, skip or the store continues in `settled`.
  const limit = (
    request: R,
    fields: RequestFields,
    method: string,
    path: string,
    trackingId: PendingId<R>,
    attributed: boolean,
  ): GateVerdict | Promise<GateVerdict> => {
    let decision: Decision | Promise<Decision>;
    try {
      // The gate checks what it passes: an account type the limiter has no preset for comes back
      // as its InvalidRequestError and is counted as anonymous.
      decision = limiter.check(fields as LimitRequest<T>, asked);
      // As on the asynchronous path, a decision the gate cannot read is the limiter's failure.
      if (!isThenable<Decision>(decision)) return decide(decision, request, trackingId);
    } catch (error) {
      return limitFailed(error, request, method, path, trackingId, attributed);
    }
    return settled(
      decision,
      (d) => decide(d, request, trackingId),
      (error) => limitFailed(error, request, method, path, trackingId, attributed),
    );
  };

  const attributed = (
    request: R,
    identity: unknown,
    method: string,
    path: string,
    trackingId: PendingId<R>,
  ): GateVerdict | Promise<GateVerdict> => {
    let fields: RequestFields | undefined;
    try {
      fields = identityFields(identity, method, path);
    } catch (error) {
      if (!isInvalidRequestError(error)) {
        // Reading the identity threw (a getter): identify failed.
        return identifyFailed(error, request, method, path, trackingId);
      }
      report(error, request, 'identify', made(request, trackingId), 'anonymous');
      return limitAnonymous(request, method, path, trackingId);
    }
    if (fields === undefined) return limitAnonymous(request, method, path, trackingId);
    return limit(request, fields, method, path, trackingId, true);
  };

  const attribute = (
    request: R,
    method: string,
    path: string,
    trackingId: PendingId<R>,
  ): GateVerdict | Promise<GateVerdict> => {
    let identity: unknown;
    let pending: boolean;
    try {
      identity = identify(request);
      // Reading `then` runs user code too (a getter, a Proxy that throws on unknown keys).
      pending = isThenable<Identity>(identity);
    } catch (error) {
      return identifyFailed(error, request, method, path, trackingId);
    }
    if (!pending) return attributed(request, identity, method, path, trackingId);
    return settled(
      identity as PromiseLike<unknown>,
      (id) => attributed(request, id, method, path, trackingId),
      (error) => identifyFailed(error, request, method, path, trackingId),
    );
  };

  const check = (
    request: R,
    method: string,
    path: string,
    incoming: string | null | undefined | TrackingIdReader<R>,
  ): GateVerdict | Promise<GateVerdict> => {
    let trackingId: PendingId<R> = '';
    if (typeof incoming === 'function') trackingId = incoming;
    else if (isWellFormedTrackingId(incoming)) trackingId = incoming;
    // Every admitted response carries it: settle it once, here.
    if (onAdmitted) trackingId = made(request, trackingId);
    if (skip === undefined) return attribute(request, method, path, trackingId);
    let skipped: boolean | Promise<boolean>;
    let pending: boolean;
    try {
      skipped = skip(request);
      pending = isThenable<boolean>(skipped);
    } catch (error) {
      return fail(error, request, 'skip', trackingId);
    }
    if (!pending) {
      return skipped === true
        ? pass(request, trackingId)
        : attribute(request, method, path, trackingId);
    }
    return settled(
      skipped as PromiseLike<boolean>,
      (s) =>
        s === true ? pass(request, trackingId) : attribute(request, method, path, trackingId),
      (error) => fail(error, request, 'skip', trackingId),
    );
  };

  return {
    trackingIdHeader: header,
    check,
    report: (error, request, phase, trackingId) =>
      report(error, request, phase, trackingId, 'open'),
  };
}

/**
 * Continue after a promise from identify, skip or the store; a rejection, or a throw on the way,
 * goes to `failed`, so the verdict's promise never rejects and nothing is thrown.
 */
function settled<T>(
  value: PromiseLike<T>,
  next: (value: T) => GateVerdict | Promise<GateVerdict>,
  failed: (error: unknown) => GateVerdict | Promise<GateVerdict>,
): Promise<GateVerdict> {
  let promise: Promise<T>;
  try {
    // Promise.resolve reads a native promise's `constructor`, which may be a getter that throws.
    promise = Promise.resolve(value);
  } catch (error) {
    return Promise.resolve(failed(error));
  }
  return promise.then(next, failed).catch(failed);
}

/**
 * A refusal a 429 can be built from truthfully: a Retry-After of at least one second, a reason,
 * the statuses and the time of the decision. Read on refusals only.
 */
function isRefusal(decision: unknown): decision is RefusedDecision {
  if (typeof decision !== 'object' || decision === null) return false;
  // Each field read once, and only while the ones before it are right.
  const refused = decision as RefusedDecision;
  if (refused.allowed !== false) return false;
  const seconds = refused.retryAfterSeconds;
  return (
    typeof seconds === 'number' &&
    seconds >= 1 &&
    typeof refused.reason === 'string' &&
    Number.isFinite(refused.now) &&
    Array.isArray(refused.statuses)
  );
}

function unreadable(decision: unknown): ConfigurationError {
  return new ConfigurationError(
    'invalid_option',
    `limiter.check() gave ${describe(decision)}, not a decision the middleware can use: an admitted one has allowed: true and release(), a refused one allowed: false, retryAfterSeconds >= 1, reason, statuses and a finite now. Check the limiter and what its store's apply() returns.`,
  );
}

/**
 * The fields of an identity, each read once; `undefined` when there is none to count (nothing
 * returned, no client id or no account code), an InvalidRequestError when it is not an identity.
 * A getter that throws is passed on.
 */
function identityFields(
  identity: unknown,
  method: string,
  path: string,
): RequestFields | undefined {
  if (identity === undefined || identity === null) return undefined;
  if (typeof identity !== 'object') {
    throw new InvalidRequestError(
      'invalid_request',
      `identify() must return { clientId, accountCode, accountType? } or undefined, got ${describe(identity)}.`,
    );
  }
  const { clientId, accountCode, accountType } = identity as Record<string, unknown>;
  if (isMissing(clientId) || isMissing(accountCode)) return undefined;
  // The limiter checks the values without copying them again.
  return new RequestFields(
    clientId as string,
    accountCode as string,
    accountType as string | undefined,
    method,
    path,
  );
}

const isMissing = (value: unknown): boolean =>
  value === undefined || value === null || value === '';

const noAddress = (): undefined => undefined;

function unavailable(trackingId: string, header: string, retryAfterSeconds: number): ResponseParts {
  const response = gateProblem(trackingId, header, {
    code: 'rate_limit_unavailable',
    title: 'Rate limits cannot be checked',
    status: 503,
    detail: `The service could not check this request against its rate limits, so it was not processed. No limit of yours was reached. Try again in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}; quote tracking id ${trackingId} when you report it.`,
  });
  response.headers['retry-after'] = String(retryAfterSeconds);
  return response;
}

function identifyError(trackingId: string, header: string): ResponseParts {
  return gateProblem(trackingId, header, {
    code: 'request_not_attributed',
    title: 'The request could not be attributed',
    status: 500,
    detail: `The service failed to tell who sent this request, so it was not processed. Quote tracking id ${trackingId} when you report it.`,
  });
}

function unauthenticated(trackingId: string, header: string): ResponseParts {
  return gateProblem(trackingId, header, {
    code: 'unauthenticated',
    title: 'Authentication required',
    status: 401,
    detail: `This service serves identified clients only; send your credentials. Tracking id ${trackingId}.`,
  });
}

/** A problem details answer of the gate's own, carrying the request's tracking id. */
function gateProblem(trackingId: string, header: string, problem: ProblemInit): ResponseParts {
  const response = problemResponse(problemDetails(problem));
  response.headers[header] = trackingId;
  return response;
}

function defaultReport(event: RateLimitErrorEvent<unknown>): void {
  const what = outcome(event);
  const message = event.error instanceof Error ? event.error.message : String(event.error);
  console.error(
    `api-conventions: rate limit ${event.phase} failed, request ${event.trackingId} ${what}: ${message}`,
  );
}

// What became of the request, for the default report's line.
function outcome(event: RateLimitErrorEvent<unknown>): string {
  if (event.failure === 'anonymous') return 'limited as anonymous';
  if (event.failure === 'closed') {
    return event.phase === 'identify'
      ? 'answered 500 (not attributed)'
      : 'refused with 503 (fail closed)';
  }
  if (event.phase === 'identify') return "let through unlimited (onIdentifyError: 'allow')";
  switch (event.phase) {
    case 'tracking-id':
      return 'goes on under a random tracking id';
    case 'release':
      return 'was let through; its lease could not be given back and stays held until it expires';
    case 'handler':
      return 'was let through; its handler failed';
    default:
      return 'let through (fail open)';
  }
}

function checkOptions<R>(options: RateLimitOptions<R>): RateLimitOptions<R> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError(
      'invalid_option',
      `The rate limit middleware needs an options object with limiter and identify, got ${describe(options)}.`,
    );
  }
  if (typeof options.limiter?.check !== 'function') {
    throw new ConfigurationError(
      'invalid_option',
      'limiter must be a limiter made by createLimiter() (an object with check()).',
    );
  }
  if (typeof options.identify !== 'function') {
    throw new ConfigurationError(
      'invalid_option',
      'identify must be a function that maps a request to { clientId, accountCode, accountType? }.',
    );
  }
  if (
    options.trackingIdOnAdmitted !== undefined &&
    typeof options.trackingIdOnAdmitted !== 'boolean'
  ) {
    throw new ConfigurationError(
      'invalid_option',
      `trackingIdOnAdmitted must be true or false when given, got ${describe(options.trackingIdOnAdmitted)}.`,
    );
  }
  for (const name of ['skip', 'onError', 'trackingIds'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new ConfigurationError(
        'invalid_option',
        `${name} must be a function when given, got ${describe(options[name])}.`,
      );
    }
  }
  if (options.failure !== undefined && options.failure !== 'open' && options.failure !== 'closed') {
    throw new ConfigurationError(
      'invalid_option',
      `failure must be 'open' or 'closed', got ${describe(options.failure)}.`,
    );
  }
  const { onIdentifyError, anonymous, failureRetryAfterSeconds } = options;
  if (
    onIdentifyError !== undefined &&
    onIdentifyError !== 'error' &&
    onIdentifyError !== 'anonymous' &&
    onIdentifyError !== 'allow'
  ) {
    throw new ConfigurationError(
      'invalid_option',
      `onIdentifyError must be 'error' (answer 500), 'anonymous' or 'allow', got ${describe(onIdentifyError)}.`,
    );
  }
  if (anonymous !== undefined && anonymous !== 'refuse') {
    if (typeof anonymous !== 'object' || anonymous === null) {
      throw new ConfigurationError(
        'invalid_option',
        `anonymous must be 'refuse' or { accountType?, key? }, got ${describe(anonymous)}.`,
      );
    }
    if (anonymous.key !== undefined && typeof anonymous.key !== 'function') {
      throw new ConfigurationError(
        'invalid_option',
        `anonymous.key must be a function that maps a request to its key, got ${describe(anonymous.key)}.`,
      );
    }
    if (anonymous.accountType !== undefined && typeof anonymous.accountType !== 'string') {
      throw new ConfigurationError(
        'invalid_option',
        `anonymous.accountType must name an account type of the limiter's presets, got ${describe(anonymous.accountType)}.`,
      );
    }
  }
  if (
    failureRetryAfterSeconds !== undefined &&
    (!Number.isSafeInteger(failureRetryAfterSeconds) || failureRetryAfterSeconds < 1)
  ) {
    throw new ConfigurationError(
      'invalid_option',
      `failureRetryAfterSeconds must be a whole number of seconds >= 1, got ${describe(failureRetryAfterSeconds)}.`,
    );
  }
  let outage: unknown;
  try {
    outage = options.limiter.outage;
  } catch (cause) {
    throw new ConfigurationError(
      'invalid_option',
      'Reading limiter.outage threw; pass a limiter made by createLimiter().',
      { cause },
    );
  }
  if (options.failure !== undefined && outage !== undefined && outage !== 'reject') {
    throw new ConfigurationError(
      'invalid_option',
      `The limiter decides store outages itself (outage: ${describe(outage)}) and failure is ${describe(options.failure)}: decide in one place. Leave failure out, or create the limiter without outage (it then leaves outages to the middleware).`,
    );
  }
  return options;
}
