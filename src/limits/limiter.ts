/**
 * The engine: `request -> plan -> store -> decision`. See docs/limits.md.
 * @module
 */
import { aClockTime, type Clock, isClockTime } from '../clock.js';
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
import type {
  AccountTypeOf,
  CheckOptions,
  Limiter,
  LimiterOptions,
  PeekOptions,
} from './limiter-types.js';
import type { MemoryStore } from './memory/store.js';
import { observeDecision } from './observe-decision.js';
import { type OutageHandler, outageHandler } from './outage.js';
import type { OutageMode } from './outage-mode.js';
import { OverrideGroups } from './override-groups.js';
import {
  type PolicyGroup,
  PolicyGroups,
  policySelector,
  type Selector,
} from './policy-selector.js';
import type { AccountPresets, LimitPreset } from './presets.js';
import { type ResetRequest, resetScopes } from './reset-scope.js';
import { isPlainMemoryStore, ReusablePlan } from './reusable-plan.js';
import { type ShadowPolicies, shadowPolicies } from './shadow.js';
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
export type {
  AccountTypeOf,
  CheckOptions,
  Limiter,
  LimiterOptions,
  PeekOptions,
  PolicySource,
} from './limiter-types.js';
export type { OutageEvent } from './outage.js';
export type { OutageMode } from './outage-mode.js';
export type { ResetRequest } from './reset-scope.js';
export type { ShadowOption } from './shadow.js';
export type { ResetOutcome } from './store.js';

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
