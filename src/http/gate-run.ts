/**
 * One request through the gate. The run is its own verdict, so a request costs one object; steps
 * are methods, handed to {@link proceed} without a closure.
 * @module
 */
import { isInvalidRequestError } from '../errors/index.js';
import { refused } from '../internal/options.js';
import { RequestFields } from '../limits/limit-request.js';
import type {
  AdmittedDecision,
  Decision,
  LimitRequest,
  RefusedDecision,
} from '../limits/limiter.js';
import {
  ANONYMOUS_CLIENT_ID,
  type FailureOutcome,
  type GatePhase,
  type GateSettings,
} from './gate-options.js';
import { notAttributed, unauthenticated, unavailable } from './gate-problems.js';
import { reportFailure } from './gate-report.js';
import { isThenable, type MaybePromise, proceed } from './maybe-promise.js';
import type { ResponseParts } from './problem-details.js';
import { admittedParts, refusalParts } from './rate-limit-response.js';
import { identityFields } from './request-identity.js';
import { isWellFormedTrackingId, randomTrackingId, resolveTrackingId } from './tracking-id.js';

/** What to do with one request. */
export interface GateVerdict {
  /** Write this response and stop; `undefined`: go on to the handler. */
  readonly response: ResponseParts | undefined;
  /** Headers for the handler's response (the tracking id, the RateLimit fields when enabled). */
  readonly headers: Readonly<Record<string, string>>;
  /** The request's tracking id: the well-formed one it sent, else made on first read. */
  readonly trackingId: string;
  /** True when there is a lease to give back with `release` when the response ends. */
  readonly holdsLease: boolean;
  /** Give back the lease: idempotent, never throws, may be called unbound (as a listener). */
  release(): void;
}

/**
 * Reads a request's tracking id header, only when it is needed: on node:http the first read of
 * `req.headers` builds the headers object, which admitted requests are spared.
 */
export type TrackingIdReader<R> = (request: R) => string | null | undefined;

/** A tracking id until something needs it: the id, '' to make one, or the header's reader. */
type PendingId<R> = string | TrackingIdReader<R>;

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

const noop = (): void => undefined;

/** One request's way through the gate, and the verdict it ends in. */
export class GateRun<R> implements GateVerdict {
  response: ResponseParts | undefined = undefined;
  headers: Readonly<Record<string, string>> = NO_HEADERS;
  holdsLease = false;
  /** One bound function per lease: adapters hand it to event emitters, unbound. */
  release: () => void = noop;
  readonly #gate: GateSettings<R>;
  readonly #request: R;
  readonly #method: string;
  readonly #path: string;
  #trackingId: PendingId<R>;
  #fields: RequestFields | undefined = undefined;
  #anonymous = false;
  #lease: AdmittedDecision | undefined = undefined;

  /** @param incoming - the request's tracking id header, or its reader */
  constructor(
    gate: GateSettings<R>,
    request: R,
    method: string,
    path: string,
    incoming: string | null | undefined | TrackingIdReader<R>,
  ) {
    this.#gate = gate;
    this.#request = request;
    this.#method = method;
    this.#path = path;
    this.#trackingId =
      typeof incoming === 'function' || isWellFormedTrackingId(incoming) ? incoming : '';
  }

  /** The request's tracking id, read or made on first need. */
  get trackingId(): string {
    return this.#settledId();
  }

  /** Decide the request; never throws, and a promise never rejects. */
  run(): MaybePromise<GateVerdict> {
    // Every admitted response carries it: settle it once, here.
    if (this.#gate.trackingIdOnAdmitted) this.#settledId();
    if (this.#gate.skip === undefined) return this.#attribute();
    return proceed(this, this.#askSkip, this.#skipped, this.#skipFailed);
  }

  #askSkip(): unknown {
    return (this.#gate.skip as (request: R) => unknown)(this.#request);
  }

  #skipped(skip: unknown): MaybePromise<GateVerdict> {
    return skip === true ? this.#pass() : this.#attribute();
  }

  #skipFailed(error: unknown): GateVerdict {
    return this.#fail(error, 'skip');
  }

  #attribute(): MaybePromise<GateVerdict> {
    return proceed(this, this.#identify, this.#attributed, this.#identifyFailed);
  }

  #identify(): unknown {
    return this.#gate.identify(this.#request);
  }

  #attributed(identity: unknown): MaybePromise<GateVerdict> {
    let fields: RequestFields | undefined;
    try {
      fields = identityFields(identity, this.#method, this.#path);
    } catch (error) {
      // A getter that threw is identify failing; anything else is no identity to count.
      if (!isInvalidRequestError(error)) return this.#identifyFailed(error);
      this.#report(error, 'identify', 'anonymous');
      return this.#limitAnonymous();
    }
    if (fields === undefined) return this.#limitAnonymous();
    return this.#limit(fields, false);
  }

  /** identify threw or rejected: 500, anonymous or unlimited, as the integrator chose by name. */
  #identifyFailed(error: unknown): MaybePromise<GateVerdict> {
    const mode = this.#gate.onIdentifyError;
    if (mode === 'error') return this.#notAttributed(error);
    this.#report(error, 'identify', mode === 'allow' ? 'open' : 'anonymous');
    return mode === 'allow' ? this.#pass() : this.#limitAnonymous();
  }

  /** A bug in wiring is not an outage: 500, reported, never let through unlimited. */
  #notAttributed(error: unknown): GateVerdict {
    this.#report(error, 'identify', 'closed');
    const id = this.#settledId();
    return this.#answer(notAttributed(id, this.#gate.header));
  }

  /** Counted by its key under the anonymous preset, or refused with 401 when so configured. */
  #limitAnonymous(): MaybePromise<GateVerdict> {
    const { anonymousKey, anonymousType } = this.#gate;
    if (anonymousKey === undefined) {
      return this.#answer(unauthenticated(this.#settledId(), this.#gate.header));
    }
    let key: unknown;
    try {
      key = anonymousKey(this.#request);
    } catch (error) {
      return this.#notAttributed(error);
    }
    const code = `remote:${typeof key === 'string' && key !== '' ? key : 'unknown'}`;
    const fields = new RequestFields(
      ANONYMOUS_CLIENT_ID,
      code,
      anonymousType,
      this.#method,
      this.#path,
    );
    return this.#limit(fields, true);
  }

  #limit(fields: RequestFields, anonymous: boolean): MaybePromise<GateVerdict> {
    this.#fields = fields;
    this.#anonymous = anonymous;
    return proceed(this, this.#check, this.#decide, this.#limitFailed);
  }

  #check(): MaybePromise<Decision> {
    return this.#gate.limiter.check(this.#fields as LimitRequest, this.#gate.asked);
  }

  /** An identity the limiter cannot count is limited as anonymous. */
  #limitFailed(error: unknown): MaybePromise<GateVerdict> {
    if (!isInvalidRequestError(error)) return this.#fail(error, 'limiter');
    if (this.#anonymous) return this.#notAttributed(error);
    this.#report(error, 'identify', 'anonymous');
    return this.#limitAnonymous();
  }

  /** Never a 429 built from missing fields: see {@link isRefusal}. */
  #decide(decision: Decision): GateVerdict {
    if (decision?.allowed === true && typeof decision.release === 'function') {
      return this.#admit(decision);
    }
    if (!isRefusal(decision)) return this.#fail(notADecision(decision), 'limiter');
    const id = this.#settledId();
    const { header } = this.#gate;
    // No limit of the client was reached: the limiter could not check (outage: 'closed').
    if (decision.reason === 'unavailable') {
      return this.#answer(unavailable(id, header, decision.retryAfterSeconds));
    }
    return this.#answer(refusalParts(decision, header, id, this.#gate.withFields));
  }

  #admit(decision: AdmittedDecision): GateVerdict {
    this.#lease = decision;
    const { trackingIdOnAdmitted, withFields, header } = this.#gate;
    if (trackingIdOnAdmitted || withFields) {
      const id = trackingIdOnAdmitted ? this.#settledId() : '';
      try {
        this.headers = admittedParts(
          decision,
          trackingIdOnAdmitted ? header : undefined,
          id,
          withFields,
        );
      } catch (error) {
        // Statuses the RateLimit fields cannot be written from: the lease is not kept.
        this.#giveBack();
        return this.#fail(error, 'limiter');
      }
    }
    this.holdsLease = true;
    this.release = this.#giveBack.bind(this);
    return this;
  }

  /** Once only; a throw here (a `close` listener, a `finally`) would crash or turn into a 500. */
  #giveBack(): void {
    const lease = this.#lease;
    if (lease === undefined) return;
    this.#lease = undefined;
    try {
      const done: unknown = lease.release();
      if (done !== undefined && isThenable(done)) {
        done.then(undefined, (error: unknown) => this.#report(error, 'release', 'open'));
      }
    } catch (error) {
      this.#report(error, 'release', 'open');
    }
  }

  /** Let the request through without a lease (skipped, or failing open). */
  #pass(): GateVerdict {
    if (this.#gate.trackingIdOnAdmitted) this.headers = { [this.#gate.header]: this.#settledId() };
    return this;
  }

  #fail(error: unknown, phase: GatePhase): GateVerdict {
    const { failure } = this.#gate;
    this.#report(error, phase, failure);
    if (failure === 'open') return this.#pass();
    const id = this.#settledId();
    return this.#answer(unavailable(id, this.#gate.header, this.#gate.failureRetryAfterSeconds));
  }

  /** Write this response and stop: a 429, a 401, a 500 or a 503. */
  #answer(response: ResponseParts): GateVerdict {
    this.response = response;
    return this;
  }

  #report(error: unknown, phase: GatePhase, failure: FailureOutcome): void {
    const id = this.#settledId();
    reportFailure(this.#gate.onError, error, this.#request, phase, id, failure);
  }

  /** The tracking id, read or made once; a source or a reader that fails is replaced and reported. */
  #settledId(): string {
    const pending = this.#trackingId;
    if (typeof pending === 'string' && pending !== '') return pending;
    const id = typeof pending === 'string' ? this.#madeId() : this.#readId(pending);
    this.#trackingId = id;
    return id;
  }

  #readId(reader: TrackingIdReader<R>): string {
    let incoming: string | null | undefined;
    try {
      incoming = reader(this.#request);
    } catch (error) {
      const replaced = this.#madeId();
      reportFailure(this.#gate.onError, error, this.#request, 'tracking-id', replaced, 'open');
      return replaced;
    }
    return isWellFormedTrackingId(incoming) ? incoming : this.#madeId();
  }

  #madeId(): string {
    const source = this.#gate.trackingIds;
    if (source === randomTrackingId) return randomTrackingId();
    try {
      return resolveTrackingId(undefined, source);
    } catch (error) {
      const replaced = randomTrackingId();
      reportFailure(this.#gate.onError, error, this.#request, 'tracking-id', replaced, 'open');
      return replaced;
    }
  }
}

/**
 * A refusal a 429 can be built from truthfully; any {@link CheckingLimiter}'s answer enters here.
 */
function isRefusal(decision: unknown): decision is RefusedDecision {
  if (typeof decision !== 'object' || decision === null) return false;
  const refusal = decision as RefusedDecision;
  if (refusal.allowed !== false) return false;
  const seconds = refusal.retryAfterSeconds;
  return (
    typeof seconds === 'number' &&
    seconds >= 1 &&
    typeof refusal.reason === 'string' &&
    Number.isFinite(refusal.now) &&
    Array.isArray(refusal.statuses)
  );
}

function notADecision(decision: unknown): Error {
  return refused(
    'limiter.check()',
    "a decision the middleware can use (an admitted one has allowed: true and release(), a refused one allowed: false, retryAfterSeconds >= 1, reason, statuses and a finite now; check the limiter and what its store's apply() returns)",
    decision,
  );
}
