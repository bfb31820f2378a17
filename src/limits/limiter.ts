/**
 * The engine: `request -> plan -> store -> decision`. It attributes a request to its client and
 * account, picks the policies that apply, asks the store to apply them atomically, and returns a
 * decision: admitted (with a lease to give back) or refused (with a truthful Retry-After and the
 * limit that was hit).
 * @module
 */
import { type Clock, isClockTime, MAX_CLOCK_MS, systemClock } from '../clock.js';
import { ConfigurationError, InvalidRequestError } from '../errors/index.js';
import { describe, isArray } from '../internal/describe.js';
import { readFields, readList, readOptions } from '../internal/read-once.js';
import {
  type CompiledRules,
  compileLimitRules,
  type LimitRule,
  type ResourceScope,
} from './limit-rule.js';
import { MemoryStore } from './memory/store.js';
import { copyPolicies, type Policy } from './policy.js';
import type { AccountPresets, LimitPreset } from './presets.js';
import type {
  AdmittedOutcome,
  LeaseToken,
  LimitStore,
  OutcomeStatuses,
  Plan,
  PlanScope,
  PolicyStatus,
  RefusalReason,
  RefusedOutcome,
  StoreOutcome,
  SyncLimitStore,
} from './store.js';
import { admissionWithoutStatuses, NO_STATUSES } from './store.js';

/**
 * What a limiter does when its store has an outage (an asynchronous store whose `apply` rejects,
 * as the Redis store does when Redis times out, is unreachable or fails):
 * - `'reject'`: `check` rejects with the store's error (a `RedisStoreError`), and the caller
 *   decides. The HTTP middleware then decides with its own `failure` option.
 * - `'open'`: the request is admitted unlimited (no statuses, no lease), and the outage reported.
 * - `'closed'`: the request is refused with reason `unavailable` and a Retry-After of
 *   `outageRetryAfterSeconds`; no limit of the client was reached, so answer it 503, never 429
 *   (the middleware does).
 * - `'fallback'`: the request is decided by a local {@link SyncLimitStore} (the `fallbackStore`, a
 *   {@link MemoryStore} by default) standing in while the store is away: limited per process, its
 *   lease given back to the fallback store. The memory store is bounded by its `maxKeys`.
 */
export type OutageMode = 'reject' | 'open' | 'closed' | 'fallback';

/** What a limiter tells `onOutage`: the store's error and what was done about it. */
export interface OutageEvent {
  /** What the store rejected with (a `RedisStoreError` for the Redis store). */
  readonly error: unknown;
  /** What the limiter did: admitted unlimited, refused as unavailable, or decided on the fallback. */
  readonly outage: Exclude<OutageMode, 'reject'>;
}

/**
 * A request as the limiter sees it: who sends it, and what it asks for. `T` is the account types
 * of the limiter's presets, when it knows them.
 */
export interface LimitRequest<T extends string = string> {
  /** The client (application) id; limits are counted per client id and account code. */
  readonly clientId: string;
  /** The account code. */
  readonly accountCode: string;
  /**
   * Picks the preset when the limiter has one per account type (`live`, `development`, `trial`).
   * Typed as the keys of the limiter's presets when they are known (`presets.byAccountType`).
   */
  readonly accountType?: T | undefined;
  /** The HTTP method. */
  readonly method: string;
  /** The request path (the query string is ignored). */
  readonly path: string;
}

/**
 * The account types a limiter's `preset` names: the keys of presets by account type, or any
 * string for a single preset, policies, or presets whose keys are not known.
 */
export type AccountTypeOf<P> = P extends LimitPreset
  ? string
  : string extends keyof P
    ? string
    : Extract<keyof P, string>;

/**
 * A {@link LimitRequest} whose fields are plain values, read once from wherever they came from.
 * The rate limit gate makes one per request; a `policies` function is handed one.
 */
export class RequestFields implements LimitRequest {
  /**
   * @param clientId - the client id
   * @param accountCode - the account code
   * @param accountType - the account type, if any
   * @param method - the HTTP method
   * @param path - the request path
   */
  constructor(
    readonly clientId: string,
    readonly accountCode: string,
    readonly accountType: string | undefined,
    readonly method: string,
    readonly path: string,
  ) {}
}

/** The request may proceed. Call `release()` when it ends, however it ends. */
export interface AdmittedDecision {
  /** Discriminant. */
  readonly allowed: true;
  /**
   * Every policy that applied, with what remains of it; empty when checked with
   * `{ statuses: false }`.
   */
  readonly statuses: readonly PolicyStatus[];
  /** The time of the decision (ms). */
  readonly now: number;
  /**
   * Give back the concurrency lease. Idempotent: a second call does nothing. A function bound to
   * its decision, so it may be passed on as a callback (`res.once('close', decision.release)`);
   * every read gives the same function. With an asynchronous store it returns the store's
   * promise, already handled (a lease the store fails to take back expires at its TTL), so that
   * a caller may report the failure; a store's synchronous throw is passed on.
   */
  readonly release: () => void;
}

/** The request must be answered with 429 and not processed. */
export interface RefusedDecision {
  /** Discriminant. */
  readonly allowed: false;
  /** Whole seconds, >= 1: a retry after this long is admitted if nothing else arrives. */
  readonly retryAfterSeconds: number;
  /** The instant (ms) a retry may be sent: `now + retryAfterSeconds * 1000`. */
  readonly retryAt: number;
  /**
   * The limit that was hit (for the 429 body); absent when the reason is `capacity` or
   * `unavailable`. It is the limiter's frozen copy of the policy, taken when it first read the
   * policy's list: the same kind, name and numbers as the policy given, but not the same object
   * (compare policies by `name`, which is unique within a list).
   */
  readonly policy: Policy | undefined;
  /**
   * Why: a full limit, a block from an earlier refusal, the store at its key cap, or a networked
   * store that could not decide and fails closed.
   */
  readonly reason: RefusalReason;
  /** Every policy that applied, unchanged by this request. */
  readonly statuses: readonly PolicyStatus[];
  /** The time of the decision (ms). */
  readonly now: number;
}

/** A limiter's answer. */
export type Decision = AdmittedDecision | RefusedDecision;

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
   * Your own policies instead of a preset: a list, or a function that picks them per request.
   * Lists with the same policies (equal kinds, names and numbers) share their state; each
   * distinct list is remembered for the limiter's life so that its state is found again, so a
   * function should pick from a bounded set of lists (plans, tiers), never build limits from
   * request input. A list is read once, when the limiter first meets it: the limiter keeps a
   * frozen copy of each policy, so changing the objects later changes no decision (give a new
   * list instead).
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
   * What a store outage does (see {@link OutageMode}): decided here, or by the caller. Behind the
   * HTTP middleware, leave it `'reject'` and set the middleware's `failure`, or set it here and
   * leave `failure` out: the middleware refuses both at once, so that one place decides.
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
   * Told of every outage the limiter decides (`outage` other than `'reject'`). An exception
   * thrown here is ignored.
   * @defaultValue one line on `console.error`
   */
  onOutage?: (event: OutageEvent) => void;
}

/** Options of one {@link Limiter.check}. */
export interface CheckOptions {
  /**
   * Report what remains of each policy in an admitted decision's `statuses`. Turn it off when
   * nothing reads them (no RateLimit header fields, say): the store then skips counting them and
   * an admitted decision's `statuses` is empty. Refused decisions always carry them. The
   * middleware turns it off unless it sends the RateLimit fields.
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

const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;
// The methods nearly every request has, accepted without running the token pattern.
const COMMON_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const NO_RULES: CompiledRules = { table: undefined, effectOf: undefined };

/**
 * Make a limiter. Its policies are read and copied here (a policy list that a `policies`
 * function returns: the first time the limiter meets it), and never read again.
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
  if (options === undefined) {
    throw new ConfigurationError(
      'invalid_option',
      'createLimiter needs options with a preset or policies, such as { preset: presets.byAccountType }.',
    );
  }
  const fields = readOptions(options, 'createLimiter', [
    'preset',
    'policies',
    'defaultAccountType',
    'store',
    'clock',
    'maxIdLength',
    'outage',
    'fallbackStore',
    'outageRetryAfterSeconds',
    'onOutage',
  ]);
  const store = (fields.store ?? new MemoryStore()) as S;
  const clock = (fields.clock ?? systemClock) as Clock;
  const givenMaxIdLength = fields.maxIdLength ?? 256;
  if (!Number.isSafeInteger(givenMaxIdLength) || (givenMaxIdLength as number) < 1) {
    throw new ConfigurationError(
      'invalid_option',
      `maxIdLength must be a whole number >= 1, got ${describe(givenMaxIdLength)}.`,
    );
  }
  const maxIdLength = givenMaxIdLength as number;
  if (typeof readMember(clock, 'now', 'clock') !== 'function') {
    throw new ConfigurationError(
      'invalid_option',
      'clock must have a now() method that returns milliseconds.',
    );
  }
  if (
    typeof readMember(store, 'apply', 'store') !== 'function' ||
    typeof readMember(store, 'release', 'store') !== 'function'
  ) {
    throw new ConfigurationError(
      'invalid_option',
      'store must implement apply() and release() (see LimitStore).',
    );
  }
  const onStoreOutage = outageHandler(store, fields);
  const outage = onStoreOutage === undefined ? 'reject' : onStoreOutage.mode;
  const select = policySelector(fields.preset, fields.policies, fields.defaultAccountType);
  // The memory store reads a plan while it decides and keeps nothing of it: a plan of one scope
  // (no resource rule matched) is then written into one object made once, not made per request.
  // Any other store may keep the plan past apply() (across an await), and gets a new one.
  const reused = isMemoryStore(store) ? reusablePlan() : undefined;

  const check = (input: LimitRequest, options?: CheckOptions): Decision | Promise<Decision> => {
    if (typeof input !== 'object' || input === null) {
      throw new InvalidRequestError(
        'invalid_request',
        `check() needs a request object; it must have clientId, accountCode, method and path, got ${describe(input)}.`,
      );
    }
    // Each field read once, into locals: a getter that throws becomes a typed error, and one that
    // answers differently on each read cannot pass the checks with one value and be counted under
    // another. No copy of the request is made. The types are what the checks below make true.
    let clientId: string;
    let accountCode: string;
    let accountType: string | undefined;
    let method: string;
    let path: string;
    try {
      ({ clientId, accountCode, accountType, method, path } = input);
    } catch (cause) {
      throw new InvalidRequestError(
        'invalid_request',
        'Reading the request object threw; pass plain values from identify().',
        { cause },
      );
    }
    checkRequest(clientId, accountCode, accountType, method, path, maxIdLength);
    const statuses = options === undefined || wantsStatuses(options);
    const group = select(clientId, accountCode, accountType, method, path);
    let active = group.active;
    let resources: readonly ResourceScope[] = NO_RESOURCES;
    const { effectOf } = group.rules;
    if (effectOf !== undefined) {
      // A malformed path matches no rule: it is still counted by the global limits and the throttle.
      const effect = effectOf(method, path);
      resources = effect.resources;
      // Exemptions only take positions away: the same length is the same list.
      if (effect.active.length !== active.length) active = effect.active;
    }
    // The clock before the plan is written: a clock that calls check() again cannot overwrite it.
    const now = clock.now();
    if (!isClockTime(now)) {
      throw new ConfigurationError(
        'invalid_option',
        `clock.now() must return milliseconds since the Unix epoch, a number from 0 to ${MAX_CLOCK_MS} (the range of a Date from 1970 on), got ${describe(now)}.`,
      );
    }
    let plan: Plan;
    if (reused !== undefined && resources.length === 0) {
      const { global } = reused;
      global.clientId = clientId;
      global.accountCode = accountCode;
      global.policies = group.list;
      global.active = active;
      reused.plan.statuses = statuses;
      plan = reused.plan;
    } else {
      const scopes: PlanScope[] = [
        { clientId, accountCode, resource: '', policies: group.list, active },
      ];
      for (const { key, policies, positions } of resources) {
        scopes.push({ clientId, accountCode, resource: key, policies, active: positions });
      }
      plan = { scopes, statuses };
    }
    if (store.synchronous) return toDecision(store, store.apply(plan, now), statuses);
    if (onStoreOutage === undefined) {
      return store.apply(plan, now).then((o) => toDecision(store, o, statuses));
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
      (error: unknown) => onStoreOutage.decide(error, plan, now, statuses),
    );
  };
  return { check, store, outage } as unknown as Limiter<S, AccountTypeOf<P>>;
}

/** What a limiter that decides outages itself does with one. */
interface OutageHandler {
  readonly mode: Exclude<OutageMode, 'reject'>;
  decide(error: unknown, plan: Plan, now: number, statuses: boolean): Decision;
}

const OUTAGE_MODES: readonly OutageMode[] = ['reject', 'open', 'closed', 'fallback'];

/** The outage options, checked; undefined when outages are left to the caller (`'reject'`). */
function outageHandler(
  store: LimitStore,
  fields: Partial<
    Record<'outage' | 'fallbackStore' | 'outageRetryAfterSeconds' | 'onOutage', unknown>
  >,
): OutageHandler | undefined {
  const mode = fields.outage ?? 'reject';
  if (!OUTAGE_MODES.includes(mode as OutageMode)) {
    throw new ConfigurationError(
      'invalid_option',
      `outage must be 'reject', 'open', 'closed' or 'fallback', got ${describe(mode)}.`,
    );
  }
  const retryAfter = fields.outageRetryAfterSeconds ?? 1;
  if (!Number.isSafeInteger(retryAfter) || (retryAfter as number) < 1) {
    throw new ConfigurationError(
      'invalid_option',
      `outageRetryAfterSeconds must be a whole number of seconds >= 1, got ${describe(retryAfter)}.`,
    );
  }
  const onOutage = fields.onOutage ?? defaultOutageReport;
  if (typeof onOutage !== 'function') {
    throw new ConfigurationError(
      'invalid_option',
      `onOutage must be a function when given, got ${describe(onOutage)}.`,
    );
  }
  const given = fields.fallbackStore;
  if (given !== undefined && mode !== 'fallback') {
    throw new ConfigurationError(
      'invalid_option',
      `fallbackStore is used only with outage: 'fallback'; set outage: 'fallback' or leave fallbackStore out (outage is ${describe(mode)}).`,
    );
  }
  const fallback = (given ?? (mode === 'fallback' ? new MemoryStore() : undefined)) as
    | SyncLimitStore
    | undefined;
  if (
    fallback !== undefined &&
    (readMember(fallback, 'synchronous', 'fallbackStore') !== true ||
      typeof readMember(fallback, 'apply', 'fallbackStore') !== 'function' ||
      typeof readMember(fallback, 'release', 'fallbackStore') !== 'function')
  ) {
    throw new ConfigurationError(
      'invalid_option',
      'fallbackStore must be a synchronous store (a MemoryStore): it decides at once while the store is away.',
    );
  }
  if (mode === 'reject') return undefined;
  if (store.synchronous) {
    // A synchronous store answers at once and has no outage: a throw there is a bug, passed on.
    throw new ConfigurationError(
      'invalid_option',
      `outage: ${JSON.stringify(mode)} applies to an asynchronous store (the RedisStore); the memory store has no outage, so leave outage out.`,
    );
  }
  const report = (error: unknown, outage: Exclude<OutageMode, 'reject'>): void => {
    try {
      (onOutage as (event: OutageEvent) => void)({ error, outage });
    } catch {
      // A failing logger must not turn a decision into a crash.
    }
  };
  const seconds = retryAfter as number;
  switch (mode as Exclude<OutageMode, 'reject'>) {
    case 'open':
      return {
        mode: 'open',
        decide: (error, _plan, now) => {
          report(error, 'open');
          return new Admitted(NO_STATUSES, admissionWithoutStatuses(now, undefined), store);
        },
      };
    case 'closed':
      return {
        mode: 'closed',
        decide: (error, _plan, now) => {
          report(error, 'closed');
          return new Refused({
            allowed: false,
            now,
            reason: 'unavailable',
            retryAfterSeconds: seconds,
            policy: undefined,
            resource: undefined,
            policies: NO_STATUSES.policies,
            values: NO_STATUSES.values,
          });
        },
      };
    default: {
      const local = fallback as SyncLimitStore;
      return {
        mode: 'fallback',
        // The lease of a decision taken here is given back here.
        decide: (error, plan, now, statuses) => {
          report(error, 'fallback');
          return toDecision(local, local.apply(plan, now), statuses);
        },
      };
    }
  }
}

function defaultOutageReport(event: OutageEvent): void {
  const message = event.error instanceof Error ? event.error.message : String(event.error);
  const what = {
    open: 'admitted unlimited',
    closed: 'refused as unavailable',
    fallback: 'decided by the fallback store',
  }[event.outage];
  console.error(
    `api-conventions: limit store outage, request ${what} (outage: '${event.outage}'): ${message}`,
  );
}

const NO_RESOURCES: readonly ResourceScope[] = Object.freeze([]);

/** A plan of one scope, written afresh by each check (see createLimiter). */
interface ReusablePlan {
  readonly global: { -readonly [K in keyof PlanScope]: PlanScope[K] };
  readonly plan: { -readonly [K in keyof Plan]: Plan[K] };
}

function reusablePlan(): ReusablePlan {
  const global = { clientId: '', accountCode: '', resource: '', policies: [], active: [] };
  return { global, plan: { scopes: [global], statuses: true } };
}

interface PolicyGroup {
  readonly list: readonly Policy[];
  readonly active: readonly number[];
  readonly rules: CompiledRules;
}

/**
 * Picks the policies of a request from its fields, checked already: a selector of the user's sees
 * them in a {@link RequestFields}, made only for it.
 */
type Selector = (
  clientId: string,
  accountCode: string,
  accountType: string | undefined,
  method: string,
  path: string,
) => PolicyGroup;

function policySelector(preset: unknown, policies: unknown, defaultAccountType: unknown): Selector {
  if ((preset === undefined) === (policies === undefined)) {
    throw new ConfigurationError(
      'invalid_option',
      'Give exactly one of `preset` and `policies` to createLimiter.',
    );
  }
  // Groups by the identity of the list given, and by what its copies hold: each list is read and
  // copied once, and lists equal as data share one group (and so one state).
  const groups = new Map<unknown, PolicyGroup>();
  const bySignature = new Map<string, PolicyGroup>();
  const groupOf = (list: unknown, where: string): PolicyGroup => {
    let group = groups.get(list);
    if (group === undefined) {
      const copies = copyPolicies(list, where);
      if (copies.length === 0) {
        throw new ConfigurationError('invalid_policy', 'A limiter needs at least one policy.');
      }
      // Two lists with the same policies share state, even when a selector builds a new array
      // each time. The copies are plain data with their fields in a fixed order, so their JSON
      // is the same exactly when they are equal.
      const signature = JSON.stringify(copies);
      group = bySignature.get(signature);
      if (group === undefined) {
        group = { list: copies, active: copies.map((_, i) => i), rules: NO_RULES };
        bySignature.set(signature, group);
      }
      if (groups.size < 10_000) groups.set(list, group);
    }
    return group;
  };
  const presetGroup = (value: PresetFields, where: string): PolicyGroup => {
    const rules =
      value.rules === undefined
        ? []
        : readList(value.rules, `${where}: rules`, 'an array', 'invalid_route_rule');
    if (rules.length === 0) return groupOf(value.policies, `${where}: policies`);
    // A preset with rules is compiled once, on its own: rules are not shared by signature.
    const copies = copyPolicies(value.policies, `${where}: policies`);
    return {
      list: copies,
      active: copies.map((_, i) => i),
      rules: compileLimitRules(rules as LimitRule[], copies, where),
    };
  };

  if (policies !== undefined) {
    if (typeof policies === 'function') {
      const pick = policies as (request: LimitRequest) => unknown;
      return (clientId, accountCode, accountType, method, path) =>
        groupOf(
          pick(new RequestFields(clientId, accountCode, accountType, method, path)),
          'policies',
        );
    }
    const group = groupOf(policies, 'policies');
    return () => group;
  }
  const single = readPreset(preset, 'preset');
  if (single !== undefined) {
    const group = presetGroup(single, `preset ${single.label}`);
    return () => group;
  }
  const entries = presetEntries(preset);
  if (entries === undefined || entries.length === 0) {
    throw new ConfigurationError(
      'invalid_option',
      `preset must be a LimitPreset or presets by account type, got ${describe(preset)}.`,
    );
  }
  const byType = new Map<string, PolicyGroup>();
  for (const [type, value] of entries) {
    const member = readPreset(value, `preset.${type}`);
    if (member === undefined) {
      throw new ConfigurationError('invalid_option', `preset.${type} is not a LimitPreset.`);
    }
    byType.set(type, presetGroup(member, `preset.${type}`));
  }
  const types = [...byType.keys()].join(', ');
  const fallback = defaultAccountType ?? 'development';
  if (typeof fallback !== 'string') {
    throw new ConfigurationError(
      'invalid_option',
      `defaultAccountType must be a string naming one of ${types}, got ${describe(fallback)}.`,
    );
  }
  if (!byType.has(fallback)) {
    throw new ConfigurationError(
      'invalid_option',
      `defaultAccountType ${JSON.stringify(fallback)} has no preset; use one of ${types}.`,
    );
  }
  return (_clientId, _accountCode, accountType) => {
    const type = accountType ?? fallback;
    const group = byType.get(type);
    if (group === undefined) {
      throw new InvalidRequestError(
        'invalid_account_type',
        `accountType ${describe(type)} has no preset; use one of ${types}.`,
      );
    }
    return group;
  };
}

/** A preset's fields, read once each; `label` names it in messages. */
interface PresetFields {
  readonly label: string;
  readonly policies: unknown;
  readonly rules: unknown;
}

/** The fields of a preset, or undefined when `value` is no preset (it has no policy array). */
function readPreset(value: unknown, what: string): PresetFields | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, policies, rules } = readFields(
    value,
    ['name', 'policies', 'rules'],
    'invalid_option',
    what,
  );
  if (!isArray(policies)) return undefined;
  return { label: typeof name === 'string' ? name : describe(name), policies, rules };
}

/** The members of presets by account type, read once; undefined for anything but an object. */
function presetEntries(value: unknown): Array<[string, unknown]> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    return Object.entries(value);
  } catch (cause) {
    throw new ConfigurationError(
      'invalid_option',
      'Reading the presets by account type threw; pass a plain object such as presets.byAccountType.',
      { cause },
    );
  }
}

/** Read `object[key]`; a read that throws (a getter, a revoked proxy) is a ConfigurationError. */
function readMember(object: unknown, key: string, what: string): unknown {
  if ((typeof object !== 'object' && typeof object !== 'function') || object === null) {
    return undefined;
  }
  try {
    return (object as Record<string, unknown>)[key];
  } catch (cause) {
    throw new ConfigurationError(
      'invalid_option',
      `Reading ${what}.${key} threw; pass ${what} as a plain object.`,
      { cause },
    );
  }
}

function isMemoryStore(store: unknown): boolean {
  try {
    return Object.getPrototypeOf(store) === MemoryStore.prototype;
  } catch {
    return false;
  }
}

// Whether check's options ask for statuses; a ConfigurationError for options it cannot read.
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
      'Reading the check() options threw; pass a plain object such as { statuses: false }.',
      { cause },
    );
  }
  if (statuses === undefined || typeof statuses === 'boolean') return statuses !== false;
  throw new ConfigurationError(
    'invalid_option',
    `check() option statuses must be true or false, got ${describe(statuses)}.`,
  );
}

/** Check the fields of a request, read once (see check). */
function checkRequest(
  clientId: unknown,
  accountCode: unknown,
  accountType: unknown,
  method: unknown,
  path: unknown,
  maxIdLength: number,
): void {
  checkId(clientId, 'clientId', 'invalid_client_id', maxIdLength);
  checkId(accountCode, 'accountCode', 'invalid_account_code', maxIdLength);
  if (accountType !== undefined && typeof accountType !== 'string') {
    throw new InvalidRequestError(
      'invalid_account_type',
      `accountType must be a string or undefined, got ${describe(accountType)}.`,
    );
  }
  if (typeof method !== 'string' || !(COMMON_METHODS.has(method) || METHOD.test(method))) {
    throw new InvalidRequestError(
      'invalid_method',
      `method must be an HTTP method token such as "GET", got ${describe(method)}.`,
    );
  }
  if (typeof path !== 'string') {
    throw new InvalidRequestError('invalid_path', `path must be a string, got ${describe(path)}.`);
  }
}

function checkId(
  value: unknown,
  name: string,
  code: 'invalid_client_id' | 'invalid_account_code',
  max: number,
): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new InvalidRequestError(
      code,
      `${name} must be a non-empty string of at most ${max} characters, got ${describe(value)}${typeof value === 'string' ? ` (${value.length} characters)` : ''}; map every request to its ${name} in identify().`,
    );
  }
}

// Without statuses asked for, an admitted decision has none, whatever the store sent.
function toDecision(store: LimitStore, outcome: StoreOutcome, statuses: boolean): Decision {
  if (!outcome.allowed) return new Refused(outcome);
  return new Admitted(statuses ? outcome : NO_STATUSES, outcome, store);
}

/** Statuses built from an outcome's compact data on first read. */
abstract class WithStatuses {
  #statuses: readonly PolicyStatus[] | undefined;
  readonly #outcome: OutcomeStatuses;

  constructor(outcome: OutcomeStatuses) {
    this.#outcome = outcome;
  }

  get statuses(): readonly PolicyStatus[] {
    if (this.#statuses === undefined) {
      const { policies, values } = this.#outcome;
      this.#statuses = policies.map((policy, k) => ({
        policy,
        remaining: values[2 * k] as number,
        resetAfterMs: values[2 * k + 1] as number,
      }));
    }
    return this.#statuses;
  }
}

// The release of a decision that holds no lease: there is nothing to give back.
const NOTHING_TO_RELEASE = (): void => undefined;

class Admitted extends WithStatuses implements AdmittedDecision {
  readonly allowed = true as const;
  readonly now: number;
  #lease: LeaseToken | undefined;
  readonly #store: LimitStore;
  /** The bound release, made on its first read. */
  #release: (() => void) | undefined = undefined;

  constructor(statuses: OutcomeStatuses, outcome: AdmittedOutcome, store: LimitStore) {
    super(statuses);
    this.now = outcome.now;
    this.#lease = outcome.lease;
    this.#store = store;
  }

  // An accessor rather than a method, so that `decision.release` works apart from its decision
  // (as an event listener, say). The bound function is made on the first read and kept, so that
  // every read gives the same one (removeEventListener finds it); a decision without a lease
  // shares one function that does nothing.
  get release(): () => void {
    let release = this.#release;
    if (release === undefined) {
      release = this.#lease === undefined ? NOTHING_TO_RELEASE : this.#giveBack.bind(this);
      this.#release = release;
    }
    return release;
  }

  #giveBack(): Promise<void> | undefined {
    const lease = this.#lease;
    if (lease === undefined) return undefined;
    this.#lease = undefined;
    const done = this.#store.release(lease);
    if (!(done instanceof Promise)) return undefined;
    // A networked store's failure to release is bounded by the lease TTL; never an unhandled
    // rejection. The promise itself goes back to the caller, who may report the failure.
    done.catch(() => undefined);
    return done;
  }
}

class Refused extends WithStatuses implements RefusedDecision {
  readonly allowed = false as const;
  readonly retryAfterSeconds: number;
  readonly retryAt: number;
  readonly policy: Policy | undefined;
  readonly reason: RefusalReason;
  readonly now: number;

  constructor(outcome: RefusedOutcome) {
    super(outcome);
    this.retryAfterSeconds = outcome.retryAfterSeconds;
    this.retryAt = outcome.now + outcome.retryAfterSeconds * 1000;
    this.policy = outcome.policy;
    this.reason = outcome.reason;
    this.now = outcome.now;
  }
}
