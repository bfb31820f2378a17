/**
 * The engine: `request -> plan -> store -> decision`. See docs/limits.md.
 * @module
 */
import { type Clock, isClockTime, MAX_CLOCK_MS, systemClock } from '../clock.js';
import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import { aBoolean, checkValue } from '../internal/options.js';
import { decisionChannel, reportApplyFailure } from './channels.js';
import { type Decision, toDecision } from './decision.js';
import {
  checkRequest,
  type LimitRequest,
  notARequest,
  unreadableRequest,
} from './limit-request.js';
import type { ResourceScope, RuleEffect } from './limit-rule.js';
import { type LimiterConfig, readLimiterOptions } from './limiter-options.js';
import { MemoryStore } from './memory/store.js';
import { observeDecision } from './observe-decision.js';
import { type OutageEvent, type OutageHandler, type OutageMode, outageHandler } from './outage.js';
import type { Policy } from './policy.js';
import { type PolicyGroup, policySelector, type Selector } from './policy-selector.js';
import type { AccountPresets, LimitPreset } from './presets.js';
import type { LimitStore, Plan, PlanScope, StoreOutcome, SyncLimitStore } from './store.js';

export type { AdmittedDecision, Decision, RefusedDecision } from './decision.js';
export type { LimitRequest } from './limit-request.js';
export type { OutageEvent, OutageMode } from './outage.js';

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
}

/** Options of one {@link Limiter.check}. */
export interface CheckOptions {
  /**
   * Report what remains of each policy in an admitted decision's `statuses`. Off spares the store
   * counting them when nothing reads them; refused decisions always carry them.
   * @defaultValue true
   */
  readonly statuses?: boolean;
}

/** A limiter. `check` answers synchronously with a synchronous store, with a promise otherwise. */
export interface Limiter<S extends LimitStore = LimitStore, T extends string = string> {
  /**
   * Decide one request.
   * @param request - who sends it and what it asks for
   * @param options - whether an admitted decision reports its statuses
   * @throws InvalidRequestError when the request cannot be attributed (empty ids, wrong types)
   * @throws ConfigurationError `invalid_option` for options that are not `{ statuses?: boolean }`
   *   or cannot be read, or a clock reading that is not milliseconds from 0 to 8.64e15
   */
  check(
    request: LimitRequest<T>,
    options?: CheckOptions,
  ): S extends SyncLimitStore ? Decision : Promise<Decision>;
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
  const select = policySelector(config.preset, config.policies, config.defaultAccountType);
  return new LimitEngine(config, select, onOutage) as unknown as Limiter<S, AccountTypeOf<P>>;
}

const NO_RESOURCES: readonly ResourceScope[] = Object.freeze([]);

/** The limiter: `check` in named steps, each request read into locals and no object of its own. */
class LimitEngine implements Limiter {
  readonly store: LimitStore;
  readonly outage: OutageMode;
  readonly #clock: Clock;
  readonly #maxIdLength: number;
  readonly #select: Selector;
  readonly #onOutage: OutageHandler | undefined;
  readonly #reused: ReusablePlan | undefined;

  constructor(config: LimiterConfig, select: Selector, onOutage: OutageHandler | undefined) {
    this.store = config.store;
    this.outage = onOutage?.mode ?? 'reject';
    this.#clock = config.clock;
    this.#maxIdLength = config.maxIdLength;
    this.#select = select;
    this.#onOutage = onOutage;
    // The memory store reads a plan only while it decides: a plan of one scope is then written
    // into one object made here. Any other store may keep it past apply() and gets a new one.
    this.#reused = isPlainMemoryStore(config.store) ? new ReusablePlan() : undefined;
  }

  // A field, so that `limiter.check` works apart from its limiter, as the closure it replaces did.
  readonly check = (input: LimitRequest, options?: CheckOptions): Decision | Promise<Decision> => {
    // Timed only while someone listens: no clock read, no message, otherwise.
    const started = decisionChannel.hasSubscribers ? performance.now() : -1;
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
    const statuses = options === undefined || wantsStatuses(options);
    const group = this.#select(clientId, accountCode, accountType, method, path);
    // A malformed path matches no rule: it is still counted by the global limits and the throttle.
    const effect = group.rules.effectOf?.(method, path);
    // The clock before the plan is written: a clock that calls check() again cannot overwrite it.
    const now = this.#now();
    const plan = this.#plan(clientId, accountCode, group, effect, statuses);
    const decision = this.#apply(plan, now, statuses);
    if (started < 0) return decision;
    return observeDecision(decision, { clientId, accountCode, accountType, method, path }, started);
  };

  // Passed on to the caller, which decides the outage (the middleware's `failure`); made once.
  readonly #failed = (error: unknown): never => {
    reportApplyFailure(this.store, error, 'reject');
    throw error;
  };

  #now(): number {
    const now = this.#clock.now();
    if (!isClockTime(now)) {
      throw new ConfigurationError(
        'invalid_option',
        `clock.now() must return milliseconds since the Unix epoch, a number from 0 to ${MAX_CLOCK_MS} (the range of a Date from 1970 on), got ${describe(now)}.`,
      );
    }
    return now;
  }

  #plan(
    clientId: string,
    accountCode: string,
    group: PolicyGroup,
    effect: RuleEffect | undefined,
    statuses: boolean,
  ): Plan {
    // Exemptions only take positions away: the same length is the same list.
    const active =
      effect === undefined || effect.active.length === group.active.length
        ? group.active
        : effect.active;
    const resources = effect?.resources ?? NO_RESOURCES;
    if (this.#reused !== undefined && resources.length === 0) {
      return this.#reused.write(clientId, accountCode, group.list, active, statuses);
    }
    const scopes: PlanScope[] = [
      { clientId, accountCode, resource: '', policies: group.list, active },
    ];
    for (const { key, policies, positions } of resources) {
      scopes.push({ clientId, accountCode, resource: key, policies, active: positions });
    }
    return { scopes, statuses };
  }

  #apply(plan: Plan, now: number, statuses: boolean): Decision | Promise<Decision> {
    const store = this.store;
    if (store.synchronous) return toDecision(store, store.apply(plan, now), statuses);
    const onOutage = this.#onOutage;
    if (onOutage === undefined) {
      return store.apply(plan, now).then((o) => toDecision(store, o, statuses), this.#failed);
    }
    // Only the store's own failure is an outage: a decision it answers is used as it is.
    let outcome: Promise<StoreOutcome>;
    try {
      outcome = store.apply(plan, now);
    } catch (error) {
      outcome = Promise.reject(error);
    }
    return outcome.then(
      (o) => toDecision(store, o, statuses),
      (error: unknown) => onOutage.decide(error, plan, now, statuses),
    );
  }
}

/** A plan of one scope, made once and written afresh by each check. */
class ReusablePlan {
  readonly #global = { clientId: '', accountCode: '', resource: '', policies: [], active: [] } as {
    -readonly [K in keyof PlanScope]: PlanScope[K];
  };
  readonly #plan: { -readonly [K in keyof Plan]: Plan[K] } = {
    scopes: [this.#global],
    statuses: true,
  };

  write(
    clientId: string,
    accountCode: string,
    policies: readonly Policy[],
    active: readonly number[],
    statuses: boolean,
  ): Plan {
    const global = this.#global;
    global.clientId = clientId;
    global.accountCode = accountCode;
    global.policies = policies;
    global.active = active;
    this.#plan.statuses = statuses;
    return this.#plan;
  }
}

// The memory store itself, not a subclass (which may keep the plan). A Proxy whose
// getPrototypeOf trap throws is some other store.
function isPlainMemoryStore(store: LimitStore): boolean {
  try {
    return Object.getPrototypeOf(store) === MemoryStore.prototype;
  } catch {
    return false;
  }
}

// Read without an object of their own: the middleware passes them per request.
function wantsStatuses(options: CheckOptions): boolean {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError(
      'invalid_option',
      `check() options must be an object such as { statuses: false }, got ${describe(options)}.`,
    );
  }
  let statuses: unknown;
  try {
    ({ statuses } = options);
  } catch (cause) {
    throw new ConfigurationError(
      'invalid_option',
      'Reading the check() options threw; pass plain data.',
      { cause },
    );
  }
  return statuses === undefined || statuses === true || checkValue(aBoolean, statuses, 'statuses');
}
