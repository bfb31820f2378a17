/**
 * The engine: `request -> plan -> store -> decision`. See docs/limits.md.
 * @module
 */
import { aClockTime, type Clock, isClockTime, systemClock } from '../clock.js';
import { invalidValue, refused } from '../internal/options.js';
import { decisionChannel, reportApplyFailure } from './channels.js';
import { checkCost, readVerbOptions, WITHOUT_STATUSES } from './cost.js';
import { toDecision, toShadowDecision } from './decision.js';
import type { Decision } from './decision-types.js';
import {
  checkRequest,
  type LimitRequest,
  notARequest,
  unreadableRequest,
} from './limit-request.js';
import type { ResourceScope, RuleEffect } from './limit-rule.js';
import { type LimiterConfig, readLimiterOptions } from './limiter-options.js';
import type { MemoryStore } from './memory/store.js';
import { observeDecision } from './observe-decision.js';
import { type OutageEvent, type OutageHandler, outageHandler } from './outage.js';
import type { OutageMode } from './outage-mode.js';
import { OverrideGroups } from './override-groups.js';
import type { OverrideSource } from './overrides.js';
import type { Policy } from './policy.js';
import {
  type PolicyGroup,
  PolicyGroups,
  policySelector,
  type Selector,
} from './policy-selector.js';
import type { AccountPresets, LimitPreset } from './presets.js';
import { type ResetRequest, resetScopes } from './reset-scope.js';
import { isPlainMemoryStore, ReusablePlan } from './reusable-plan.js';
import { type ShadowOption, type ShadowPolicies, shadowPolicies } from './shadow.js';
import type {
  LimitStore,
  Plan,
  PlanScope,
  ResetOutcome,
  StoreOutcome,
  SyncLimitStore,
} from './store.js';

export type {
  AdmittedDecision,
  Decision,
  RefusedDecision,
  ShadowRefusal,
} from './decision-types.js';
export type { LimitRequest } from './limit-request.js';
export type { OutageEvent } from './outage.js';
export type { OutageMode } from './outage-mode.js';
export type { ResetRequest } from './reset-scope.js';
export type { ShadowOption } from './shadow.js';
export type { ResetOutcome } from './store.js';

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

/**
 * Make a limiter. Its policies are read and copied here (or when a `policies` function first
 * returns them), and never read again.
 * @param options - the limits (`preset` or `policies`), `store`, `clock`
 * @throws ConfigurationError for options that are missing, not an object, unreadable or invalid;
 *   the message names the option and says what to change
 * @example
 * ```ts
 * const limiter = createLimiter({ preset: presets.byAccountType });
 * const decision = limiter.check({ clientId, accountCode, accountType: 'live', method, path });
 * if (decision.allowed) {
 *   try { await handle(); } finally { decision.release(); }
 * } else {
 *   respond429(decision.retryAfterSeconds, decision.policy?.name);
 * }
 * ```
 */
export function createLimiter<
  S extends LimitStore = MemoryStore,
  P extends LimitPreset | AccountPresets = LimitPreset,
>(options: LimiterOptions<S, P>): Limiter<S, AccountTypeOf<P>> {
  const config = readLimiterOptions(options);
  const onOutage = outageHandler(config.store, config);
  // The policy names are known at once, and checked, unless a function picks the policies.
  const named = typeof config.policies === 'function' ? undefined : new Set<string>();
  const groups = new PolicyGroups(named);
  const select = policySelector(config.preset, config.policies, config.defaultAccountType, groups);
  const shadow = shadowPolicies(config.shadow, named);
  const overrides =
    config.overrides === undefined ? undefined : new OverrideGroups(config.overrides, groups);
  // The reader checks the store's methods and hands back the same object; with none given, S is
  // its default, MemoryStore, which is what the reader makes.
  const store = config.store as S;
  return new LimitEngine<S, AccountTypeOf<P>>(config, store, select, onOutage, shadow, overrides);
}

/** What a limiter's `check` and `peek` answer with the store `S`. */
type DecisionOf<S extends LimitStore> = S extends SyncLimitStore ? Decision : Promise<Decision>;

/** What a limiter's `reset` answers with the store `S`. */
type ResetOf<S extends LimitStore> = S extends SyncLimitStore
  ? ResetOutcome
  : Promise<ResetOutcome>;

const NO_RESOURCES: readonly ResourceScope[] = Object.freeze([]);

/**
 * The limiter: `check` in named steps, each request read into locals and no object of its own.
 * Generic over what {@link Limiter} is: the store's kind gives the kind of answer.
 */
class LimitEngine<S extends LimitStore, T extends string> implements Limiter<S, T> {
  readonly store: S;
  readonly outage: OutageMode;
  readonly #clock: Clock;
  readonly #maxIdLength: number;
  readonly #select: Selector;
  readonly #onOutage: OutageHandler | undefined;
  readonly #reused: ReusablePlan | undefined;
  readonly #shadow: ShadowPolicies | undefined;
  readonly #overrides: OverrideGroups | undefined;
  /** The decision of an outcome: with the refusal it escaped, for a limiter with shadow mode. */
  readonly #toDecision: typeof toDecision;

  constructor(
    config: LimiterConfig,
    store: S,
    select: Selector,
    onOutage: OutageHandler | undefined,
    shadow: ShadowPolicies | undefined,
    overrides: OverrideGroups | undefined,
  ) {
    this.store = store;
    this.outage = onOutage?.mode ?? 'reject';
    this.#clock = config.clock;
    this.#maxIdLength = config.maxIdLength;
    this.#select = select;
    this.#onOutage = onOutage;
    this.#shadow = shadow;
    this.#overrides = overrides;
    this.#toDecision = shadow === undefined ? toDecision : toShadowDecision;
    // The memory store reads a plan only while it decides: a plan of one scope is then written
    // into one object made here. Any other store may keep it past apply() and gets a new one.
    // Shadow mode marks its plans: they are made afresh.
    this.#reused =
      isPlainMemoryStore(store) && shadow === undefined ? new ReusablePlan() : undefined;
  }

  // Fields, so that `limiter.check` works apart from its limiter, as the closure it replaces did.
  readonly check = (input: LimitRequest<T>, options?: CheckOptions): DecisionOf<S> =>
    this.#decide(input, options, false);

  readonly peek = (input: LimitRequest<T>, options?: PeekOptions): DecisionOf<S> =>
    this.#decide(input, options, true);

  readonly reset = (input: ResetRequest<T>): ResetOf<S> => this.#reset(input);

  // The overload says what the body does: a synchronous store's answer is a value, any other's
  // a promise (`store.synchronous` tells them apart at run time, where a type cannot follow).
  #reset(input: ResetRequest): ResetOf<S>;
  #reset(input: ResetRequest): ResetOutcome | Promise<ResetOutcome> {
    const store: LimitStore = this.store;
    const { reset: given } = store;
    if (typeof given !== 'function') {
      throw refused(
        "the limiter's store.reset",
        'a reset(scope) method, as a MemoryStore and a RedisStore have (see LimitStore)',
        given,
      );
    }
    const scopes = resetScopes(input, this.#maxIdLength, this.#select);
    if (store.synchronous) {
      let cleared = 0;
      for (const scope of scopes) cleared += store.reset!(scope).cleared;
      return { cleared };
    }
    const reset = store.reset!.bind(store);
    return Promise.all(scopes.map((scope) => reset(scope))).then((outcomes) => ({
      cleared: outcomes.reduce((sum, o) => sum + o.cleared, 0),
    }));
  }

  // The overload says what #apply does: a synchronous store decides at once, any other in a
  // promise.
  #decide(
    input: LimitRequest,
    options: CheckOptions | PeekOptions | undefined,
    peek: boolean,
  ): DecisionOf<S>;
  #decide(
    input: LimitRequest,
    options: CheckOptions | PeekOptions | undefined,
    peek: boolean,
  ): Decision | Promise<Decision> {
    // Timed only while someone listens, and never a peek: no clock read, no message, otherwise.
    const started = !peek && decisionChannel.hasSubscribers ? performance.now() : -1;
    if (typeof input !== 'object' || input === null) throw notARequest(input);
    // Each field read once into locals: a getter cannot pass the checks with one value and be
    // counted under another, and no copy of the request is made.
    let clientId: string;
    let accountCode: string;
    let accountType: string | undefined;
    let method: string;
    let path: string;
    try {
      ({ clientId, accountCode, accountType, method, path } = input);
    } catch (cause) {
      throw unreadableRequest(cause);
    }
    checkRequest(clientId, accountCode, accountType, method, path, this.#maxIdLength);
    // A peek reports the statuses: they are what it is asked for.
    let statuses = true;
    let cost = 1;
    if (options === WITHOUT_STATUSES && !peek) statuses = false;
    else if (options !== undefined) ({ statuses, cost } = readVerbOptions(options, peek));
    // The clock before the plan is written (a clock that calls check() again cannot overwrite
    // it), and before an override's expiry is read against it.
    const now = this.#now();
    let group = this.#select(clientId, accountCode, accountType, method, path);
    const overrides = this.#overrides;
    if (overrides !== undefined) group = overrides.groupFor(group, clientId, accountCode, now);
    // A malformed path matches no rule: it is still counted by the global limits and the throttle.
    const effect = group.rules.effectOf?.(method, path);
    const plan =
      cost === 1 && !peek
        ? this.#plan(clientId, accountCode, group, effect, statuses)
        : this.#planOf(clientId, accountCode, group, effect, { statuses, cost, peek });
    if (cost !== 1) checkCost(plan, cost);
    const decision = this.#apply(plan, now, statuses);
    if (started < 0) return decision;
    return observeDecision(decision, { clientId, accountCode, accountType, method, path }, started);
  }

  // Passed on to the caller, which decides the outage (the middleware's `failure`); made once.
  readonly #failed = (error: unknown): never => {
    reportApplyFailure(this.store, error, 'reject');
    throw error;
  };

  #now(): number {
    const now = this.#clock.now();
    if (!isClockTime(now)) throw invalidValue(aClockTime, now, 'clock.now()');
    return now;
  }

  #plan(
    clientId: string,
    accountCode: string,
    group: PolicyGroup,
    effect: RuleEffect | undefined,
    statuses: boolean,
  ): Plan {
    if (this.#reused !== undefined && (effect?.resources ?? NO_RESOURCES).length === 0) {
      return this.#reused.write(clientId, accountCode, group, activeOf(group, effect), statuses);
    }
    return this.#fresh(clientId, accountCode, group, effect, statuses);
  }

  /** A plan made for this request alone. */
  #fresh(
    clientId: string,
    accountCode: string,
    group: PolicyGroup,
    effect: RuleEffect | undefined,
    statuses: boolean,
  ): { scopes: PlanScope[]; statuses: boolean; shadow?: boolean } {
    const active = activeOf(group, effect);
    const resources = effect?.resources ?? NO_RESOURCES;
    if (this.#shadow !== undefined) {
      const { scopes, shadow } = this.#shadow.scopes(
        clientId,
        accountCode,
        group.list,
        group.state,
        active,
        resources,
      );
      return { scopes, statuses, shadow };
    }
    const scopes: PlanScope[] = [
      { clientId, accountCode, resource: '', policies: group.list, active, state: group.state },
    ];
    for (const { key, policies, positions } of resources) {
      scopes.push({ clientId, accountCode, resource: key, policies, active: positions });
    }
    return { scopes, statuses };
  }

  /** A plan of its own for a costed check or a peek: the reusable one is for plain checks. */
  #planOf(
    clientId: string,
    accountCode: string,
    group: PolicyGroup,
    effect: RuleEffect | undefined,
    fields: { statuses: boolean; cost: number; peek: boolean },
  ): Plan {
    const { scopes, shadow } = this.#fresh(clientId, accountCode, group, effect, fields.statuses);
    const { statuses, cost, peek } = fields;
    if (shadow === true) return { scopes, statuses, cost, peek, shadow };
    return peek ? { scopes, statuses, cost, peek } : { scopes, statuses, cost };
  }

  #apply(plan: Plan, now: number, statuses: boolean): Decision | Promise<Decision> {
    const store: LimitStore = this.store;
    if (store.synchronous) {
      // Called directly, not through #toDecision: the memory store's path stays as it was.
      const outcome = store.apply(plan, now);
      if (this.#shadow === undefined) return toDecision(store, outcome, statuses);
      return toShadowDecision(store, outcome, statuses);
    }
    const decided = this.#toDecision;
    const onOutage = this.#onOutage;
    if (onOutage === undefined) {
      return store.apply(plan, now).then((o) => decided(store, o, statuses), this.#failed);
    }
    // Only the store's own failure is an outage: a decision it answers is used as it is.
    let outcome: Promise<StoreOutcome>;
    try {
      outcome = store.apply(plan, now);
    } catch (error) {
      outcome = Promise.reject(error);
    }
    return outcome.then(
      (o) => decided(store, o, statuses),
      (error: unknown) => onOutage.decide(error, plan, now, statuses),
    );
  }
}

/** The positions of the account's policies that apply. */
function activeOf(group: PolicyGroup, effect: RuleEffect | undefined): readonly number[] {
  // Exemptions only take positions away: the same length is the same list.
  return effect === undefined || effect.active.length === group.active.length
    ? group.active
    : effect.active;
}
