/**
 * A limiter as its user holds it, and the options that make one with `createLimiter`
 * (limiter.ts). See docs/limits.md.
 * @module
 */
import type { Clock } from '../clock.js';
import type { Decision } from './decision-types.js';
import type { LimitRequest } from './limit-request.js';
import type { MemoryStore } from './memory/store.js';
import type { OutageEvent } from './outage.js';
import type { OutageMode } from './outage-mode.js';
import type { OverrideSource } from './overrides.js';
import type { Policy } from './policy.js';
import type { AccountPresets, LimitPreset } from './presets.js';
import type { ResetRequest } from './reset-scope.js';
import type { ShadowOption } from './shadow.js';
import type { LimitStore, ResetOutcome, SyncLimitStore } from './store.js';

/**
 * The account types a limiter's `preset` names: the keys of presets by account type, or any
 * string for a single preset, policies, or presets whose keys are not known.
 */
export type AccountTypeOf<P> = P extends LimitPreset
  ? string
  : string extends keyof P
    ? string
    : Extract<keyof P, string>;

/** Policies for a request: a fixed list, or chosen per request. */
export type PolicySource = readonly Policy[] | ((request: LimitRequest) => readonly Policy[]);

/** Options of {@link createLimiter}. */
export interface LimiterOptions<
  S extends LimitStore = LimitStore,
  P extends LimitPreset | AccountPresets = LimitPreset | AccountPresets,
> {
  /**
   * The limits: one preset for every request, or presets by account type
   * (`presets.byAccountType`), picked by `request.accountType`. Give `preset` or `policies`.
   */
  preset?: P;
  /**
   * Your own policies instead of a preset: a list, or a function that picks one per request. Lists
   * with the same policies share their state. Each distinct list is remembered for the limiter's
   * life, so pick from a bounded set, never build limits from request input. A list is read once,
   * when first met: changing the objects later changes no decision.
   */
  policies?: PolicySource;
  /**
   * With presets by account type: the type of a request that names none.
   * @defaultValue `'development'`, the strictest, so a request that is not attributed is not given Live limits
   */
  defaultAccountType?: NoInfer<AccountTypeOf<P>>;
  /** Where limit state lives. @defaultValue a new {@link MemoryStore} */
  store?: S;
  /** The time source. @defaultValue {@link systemClock} */
  clock?: Clock;
  /** Longest client id and account code accepted, in characters. @defaultValue 256 */
  maxIdLength?: number;
  /**
   * What a store outage does (see {@link OutageMode}). Behind the middleware, set this or its
   * `failure`, never both: one place decides.
   * @defaultValue `'reject'`
   */
  outage?: OutageMode;
  /**
   * The local store that decides while the store is away, with `outage: 'fallback'`.
   * @defaultValue a new {@link MemoryStore}
   */
  fallbackStore?: SyncLimitStore;
  /**
   * Retry-After, in whole seconds (1 or more), of a refusal with `outage: 'closed'`.
   * @defaultValue 1 (the specification's recommended backoff)
   */
  outageRetryAfterSeconds?: number;
  /**
   * Told of every outage the limiter decides; an exception thrown here is ignored.
   * @defaultValue one line on `console.error`
   */
  onOutage?: (event: OutageEvent) => void;
  /**
   * Shadow mode, to try limits on live traffic before enforcing them: `true` for every policy
   * (a whole preset), or the names of the policies to run in shadow. A policy in shadow mode
   * never refuses: a request that only such policies would refuse is admitted and counted in
   * every policy, and its decision reports the refusal it escaped in `shadow` (and the decision
   * channel publishes it as `'shadow_refused'`). The enforcing policies decide as before. The
   * state is the same as when enforcing: turning shadow off keeps every count.
   * @throws ConfigurationError `invalid_option` for anything but `true`, `false` or a non-empty
   *   array of names, or (with `preset` or a list of `policies`) a name no policy has
   * @defaultValue `false`: every policy enforces
   * @example
   * ```ts
   * createLimiter({ preset: presets.live, shadow: true });
   * createLimiter({ preset: presets.live, shadow: ['global: 3500 per 60 s'] });
   * ```
   */
  shadow?: ShadowOption;
  /**
   * Where per-client overrides of the limits are found: a {@link MemoryOverrides}, or a
   * `RedisOverrides` shared by every instance. Each decision asks it for the request's client and
   * account (a map lookup, no I/O): an override with a `multiplier` decides with the default
   * preset's limits multiplied and counts in the same state, so raising a limit never forgets what
   * was already admitted; one with a `preset` decides with that preset's limits. See
   * docs/limits.md, "Overrides".
   * @defaultValue none: every client has the default limits
   * @example
   * ```ts
   * const overrides = new MemoryOverrides({ presets: presets.byAccountType });
   * const limiter = createLimiter({ preset: presets.byAccountType, overrides });
   * overrides.set({ clientId: 'client-1' }, { multiplier: 2 });
   * ```
   */
  overrides?: OverrideSource;
}

/** Options of one {@link Limiter.check}. */
export interface CheckOptions {
  /**
   * Report what remains of each policy in an admitted decision's `statuses`. Off spares the store
   * counting them when nothing reads them; refused decisions always carry them.
   * @defaultValue true
   */
  readonly statuses?: boolean;
  /**
   * Admissions the request counts at once in every window and rate policy it falls under: a whole
   * number from 1, at most each such policy's limit (a window's) or burst (a rate's). Admitted only
   * when all of them fit, and a refusal's Retry-After is when they all would. A throttle counts the
   * request once: one lease, whatever the cost (docs/limits.md says why).
   * @defaultValue 1
   */
  readonly cost?: number;
}

/** Options of one {@link Limiter.peek}. */
export interface PeekOptions {
  /** The cost of the request whose decision is asked for (see {@link CheckOptions.cost}). @defaultValue 1 */
  readonly cost?: number;
}

/** A limiter. `check` answers synchronously with a synchronous store, with a promise otherwise. */
export interface Limiter<S extends LimitStore = LimitStore, T extends string = string> {
  /**
   * Decide one request.
   * @param request - who sends it and what it asks for
   * @param options - whether an admitted decision reports its statuses, and the request's cost
   * @throws InvalidRequestError when the request cannot be attributed (empty ids, wrong types)
   * @throws ConfigurationError `invalid_option` for options that are not
   *   `{ statuses?: boolean, cost?: number }` (an unknown key is named with the nearest one) or
   *   cannot be read, or a clock reading that is not
   *   milliseconds from 0 to 8.64e15; `invalid_cost` for a cost that is not a whole number from 1;
   *   `cost_above_limit` for a cost above a window's limit or a rate's burst of the request
   */
  check(
    request: LimitRequest<T>,
    options?: CheckOptions,
  ): S extends SyncLimitStore ? Decision : Promise<Decision>;
  /**
   * What `check` would decide for the request now, with every policy's status as it is, recording
   * nothing: no admission, no lease, and a block is reported but never started, extended or
   * cleared. An admitted peek's `release` does nothing.
   * @param request - who would send it and what it would ask for
   * @param options - the cost of the request asked about
   * @throws InvalidRequestError and ConfigurationError as `check` does (its options are
   *   `{ cost?: number }`: a peek always reports statuses)
   * @example
   * ```ts
   * const now = limiter.peek({ clientId, accountCode, method: 'GET', path: '/booking/v1/offers' });
   * console.log(now.allowed, now.statuses.map((s) => `${s.policy.name}: ${s.remaining} left`));
   * ```
   */
  peek(
    request: LimitRequest<T>,
    options?: PeekOptions,
  ): S extends SyncLimitStore ? Decision : Promise<Decision>;
  /**
   * Clear the counters, leases and blocks of a client and account (`{ clientId, accountCode }`),
   * or of one resource of theirs (add the `method` and `path` of a request to it): their next
   * request is decided afresh. For support staff unblocking a customer. A lease taken before is
   * void: giving it back changes nothing.
   * @param scope - whom to clear
   * @returns how many scope states the store removed (0 when it held none)
   * @throws InvalidRequestError for ids a request could not have (empty, too long, not strings),
   *   `invalid_request` for a scope that is not an object or gives only one of method and path,
   *   `invalid_path` for a path no resource limit counts
   * @throws ConfigurationError `invalid_option` for a store without `reset`
   * @example
   * ```ts
   * limiter.reset({ clientId: 'client-1', accountCode: 'ACME' });
   * limiter.reset({ clientId: 'client-1', accountCode: 'ACME', method: 'PATCH', path: '/booking/v1/bookings/B1' });
   * ```
   */
  reset(scope: ResetRequest<T>): S extends SyncLimitStore ? ResetOutcome : Promise<ResetOutcome>;
  /** The store the limiter uses. */
  readonly store: S;
  /** What a store outage does (the `outage` option); the middleware reads it. */
  readonly outage: OutageMode;
}
