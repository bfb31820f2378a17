/**
 * The Redis store: limit state shared by every instance of a service. One decision is one
 * `EVALSHA` of the decision script (falling back to `EVAL` when the server has lost its script
 * cache); under load, the decisions asked while others are in Redis share one (`maxBatch`), each
 * still decided alone and atomically. A release travels with the next decision, or goes in a call
 * of its own. Decisions equal the memory store's, policy for policy.
 *
 * Time comes from the Redis server (`TIME`) by default, so that app servers with skewed clocks
 * share one timeline, or from the limiter's clock. When Redis does not answer in time, or fails,
 * the store reports an outage: `apply` rejects with a {@link RedisStoreError} (also handed to
 * `onError`). It never decides open or closed itself: its caller does (the limiter's `outage`
 * option, or the HTTP middleware's `failure`).
 * @module
 */
import { createHash, randomInt } from 'node:crypto';
import { ConfigurationError } from '../errors/index.js';
import { RedisStoreError, type RedisStoreErrorCode } from '../errors/redis-store-error.js';
import { describe } from '../internal/describe.js';
import { LONE_SURROGATE } from '../internal/lone-surrogate.js';
import { nearestName } from '../internal/nearest-name.js';
import { MAX_TIMER_MS } from '../internal/timers.js';
import type { ConcurrencyPolicy, Policy } from '../limits/policy.js';
import {
  rateRemaining,
  rateResetAfter,
  throttleRemaining,
  windowRemaining,
  windowResetAfter,
} from '../limits/quota.js';
import type {
  AsyncLimitStore,
  LeaseToken,
  Plan,
  PlanScope,
  RefusalReason,
  StoreOutcome,
} from '../limits/store.js';
import { admissionWithoutStatuses, resolveTime } from '../limits/store.js';
import { type DecideShape, decideScript, leaseSlots } from './decide-script.js';
import type { RedisScriptClient, ScriptArgument } from './redis-client.js';
import { releaseScript } from './release-script.js';
import { LAYOUT_VERSION, RELEASE_RECORD_SIZE } from './state-codec.js';

/** Starts and cancels the per-operation timeout; injectable so that tests control it. */
export interface Timer {
  /** Call `callback` after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown;
  /** Cancel a timeout started by `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The client, through an adapter: `ioredisClient(redis)` or `nodeRedisClient(redis)`. */
  client: RedisScriptClient;
  /**
   * Prefix of every key. Must not contain `{` or `}` (the hash tag follows it), nor a lone
   * surrogate (UTF-8 writes every one as U+FFFD, so two such prefixes would share every key).
   * @defaultValue `'limits:'`
   */
  prefix?: string;
  /**
   * Where the time of a decision comes from: `'redis'`, the server's `TIME` (one timeline for every
   * app server), or `'clock'`, the time the limiter passes (its injected clock; tests use a
   * `FakeClock` to compare with the memory store).
   * @defaultValue `'redis'`
   */
  timeSource?: 'redis' | 'clock';
  /**
   * Milliseconds to wait for Redis to decide or release before reporting an outage: a whole number from 1 to 2^31 - 1 (the longest a timer waits). A throttle decision that Redis
   * runs after its timeout gives back the lease it took: the caller was given none.
   * @defaultValue 100
   */
  timeoutMs?: number;
  /**
   * Called with every failure (a decision that fails also rejects with it). Log it; an exception
   * thrown here is ignored.
   */
  onError?: (error: RedisStoreError) => void;
  /**
   * Milliseconds a key outlives the instant its state is fresh again. Covers the gap between the
   * caller's clock and Redis's expiry clock with `timeSource: 'clock'`.
   * @defaultValue 1000
   */
  expiryMarginMs?: number;
  /** The timeout source. @defaultValue the global `setTimeout` and `clearTimeout` */
  timer?: Timer;
  /**
   * This store's part of every lease id, unique per store instance: a whole number from 1 to
   * 2^32 - 1; ids are this number times 2^21 plus a counter (modulo 2^21), exact below 2^53. Two
   * leases of one throttle are told apart by their expiry and id together, so two stores must not
   * share it.
   * @defaultValue a random whole number below 2^32
   */
  instanceId?: number;
  /**
   * The most decisions sent in one script call, 1 to 1024. While decisions are in Redis, the
   * next ones asked in the same turn of the event loop, for plans of one shape, go together, up
   * to as many as are in Redis already and at most this many: each is still decided atomically,
   * in the order asked, after the leases given back before it, and gets its own outcome. A
   * decision that finds none in Redis goes at once, alone. It spares Redis and the client the
   * price of a command per decision under load; a failure or a timeout of a call is an outage for
   * each of its decisions. 1 sends every decision in a script call of its own. Outside Redis Cluster
   * only (see {@link RedisScriptClient.cluster}): there every decision goes alone.
   * @defaultValue 32
   */
  maxBatch?: number;
}

/** A script and its SHA-1. */
interface Script {
  readonly text: string;
  readonly sha1: string;
}

const script = (text: string): Script => ({
  text,
  sha1: createHash('sha1').update(text).digest('hex'),
});
/** The release script, for arguments in text and for arguments as bytes. */
const RELEASE_TEXT = script(releaseScript(false));
const RELEASE_BINARY = script(releaseScript(true));

/** One throttle that a decision script takes leases of, and what giving one back needs. */
interface Throttle {
  /** Its scope's place in the decision's KEYS. */
  readonly scope: number;
  /** Its position among the scope's policies, from 1. */
  readonly position: number;
  /** Its lease TTL (ms): a lease expires this long after its decision. */
  readonly ttlMs: number;
  /** How many times the plan names it (one entry each). */
  readonly copies: number;
}

/** The leases of one admitted request: the scopes that hold them, their id and their time. */
interface RedisLease extends LeaseToken {
  readonly store: RedisStore;
  /** The decision's KEYS (its scopes' keys first). */
  readonly keys: readonly string[];
  readonly throttles: readonly Throttle[];
  /** The lease id. */
  readonly id: number;
  /** The decision's time (ms). */
  readonly t: number;
}

/** A lease given back but not yet sent, and what to call once it has been. */
interface PendingRelease {
  readonly lease: RedisLease;
  readonly done: () => void;
}

/** The most given-back leases that travel with one decision. */
const MAX_RIDERS = 32;
/** The most leases one release script gives back. */
const MAX_BATCH = 256;

/** A plan shape's decision script and the throttles it takes leases of. */
interface Decider {
  readonly script: Script;
  readonly throttles: readonly Throttle[];
  /** The shape the script is written for. */
  readonly shape: DecideShape;
  /** The script for several decisions in one call, written when first needed. */
  batched: Script | undefined;
}

/** What a plan of one account-level scope needs besides its key, the same for every such plan. */
interface SingleScope {
  readonly listId: string;
  /** The active policies, in plan order. */
  readonly policies: readonly Policy[];
  /** Their resources: all `''`. */
  readonly resources: readonly string[];
  readonly decider: Decider;
}

/** One decision: what its script call needs, and what its outcome is read with. */
interface Request {
  readonly plan: Plan;
  readonly now: number;
  /** Its own (a decision that goes alone adds the keys of its riders). */
  readonly keys: string[];
  /** Its own, as `keys`. */
  readonly args: ScriptArgument[];
  /** The active policies, in plan order, and the resource of each. */
  readonly policies: readonly Policy[];
  readonly resources: readonly string[];
  /** Its lease id; 0 for a plan without a throttle. */
  readonly id: number;
  /** Leases given back before the decision was asked for: given back before it. */
  readonly riders: PendingRelease[] | undefined;
}

/** How a decision of a batch is answered. */
type Settle = (outcome: StoreOutcome | Promise<StoreOutcome>) => void;

/** The decisions of one shape waiting to go in one script call, and how to answer each. */
interface Batch {
  readonly decider: Decider;
  readonly requests: Request[];
  readonly settles: Settle[];
}

/** The most decisions in one script call. */
const MAX_BATCH_DECISIONS = 1_024;

/** Lease ids: the instance's part times this, plus a counter below it. */
const LEASE_COUNTER = 2 ** 21;

/** A policy list's key part, computed once per list. */
interface ListInfo {
  readonly id: string;
}

const REASONS: readonly (RefusalReason | undefined)[] = [undefined, 'limit', 'blocked'];
const TIMEOUT = Symbol('timeout');
const defaultTimer: Timer = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Keeps limit state in Redis (6.2+, 7, Valkey), so that limits hold across every instance of a
 * service. Exact sliding windows, GCRA and leases with a TTL, applied by one atomic script per
 * decision; every key expires on its own.
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createLimiter, presets } from 'api-conventions';
 * import { ioredisClient, RedisStore } from 'api-conventions/redis';
 *
 * const redis = new Redis({ enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
 * const store = new RedisStore({ client: ioredisClient(redis), onError: (e) => log.warn(e) });
 * const limiter = createLimiter({ preset: presets.byAccountType, store });
 * const decision = await limiter.check({ clientId, accountCode, accountType, method, path });
 * ```
 */
export class RedisStore implements AsyncLimitStore {
  /** Always false: decisions are answered with promises. */
  readonly synchronous = false as const;
  readonly #client: RedisScriptClient;
  readonly #prefix: string;
  readonly #useClock: boolean;
  readonly #timeoutMs: number;
  readonly #onError: ((error: RedisStoreError) => void) | undefined;
  readonly #margin: number;
  readonly #timer: Timer;
  /** The instance's part of every lease id (see {@link RedisStoreOptions.instanceId}). */
  readonly #leaseBase: number;
  readonly #lists = new WeakMap<readonly Policy[], ListInfo>();
  readonly #actives = new WeakMap<readonly number[], string>();
  /** What plans of one account-level scope need, by policy list, then active positions. */
  readonly #singles = new WeakMap<
    readonly Policy[],
    WeakMap<readonly number[], [SingleScope | undefined, SingleScope | undefined]>
  >();
  /** The decision script of each plan shape (see {@link shapeOf}), written once per shape. */
  readonly #deciders = new Map<string, Decider>();
  /** Leases given back since the last command, waiting to travel with one (see `release`). */
  #pending: PendingRelease[] = [];
  #flushScheduled = false;
  /** Whether every release goes in a command of its own: keys of two clients may not meet. */
  #separate: boolean;
  /** Whether the decision scripts reply in bytes (see {@link RedisScriptClient.binaryReplies}). */
  readonly #binary: boolean;
  /** Whether lease ids and given-back leases go as bytes ({@link RedisScriptClient.binaryArguments}). */
  readonly #binaryArgs: boolean;
  /** The release script for the client's kind of arguments. */
  readonly #release: Script;
  readonly #maxBatch: number;
  /** Decisions waiting to go together, until the end of the turn (see {@link RedisStoreOptions.maxBatch}). */
  #open: Batch | undefined;
  /** Decisions sent in calls of several and not answered yet. */
  #inFlight = 0;
  #counter = 0;

  /** @param options - the client, and how to time, fail and expire */
  constructor(options: RedisStoreOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new ConfigurationError(
        'invalid_option',
        `RedisStore needs options with a client, got ${describe(options)}.`,
      );
    }
    refuseUnknownOptions(options);
    const client = options.client;
    if (typeof client?.evalSha !== 'function' || typeof client.eval !== 'function') {
      throw new ConfigurationError(
        'invalid_redis_client',
        'RedisStore needs client: ioredisClient(redis) or nodeRedisClient(redis) (evalSha and eval).',
      );
    }
    const prefix = options.prefix ?? 'limits:';
    if (typeof prefix !== 'string' || /[{}]/.test(prefix) || LONE_SURROGATE.test(prefix)) {
      throw new ConfigurationError(
        'invalid_option',
        `prefix must be a string without { or } (the hash tag follows it) and without lone surrogates, got ${describe(prefix)}.`,
      );
    }
    const timeSource = options.timeSource ?? 'redis';
    if (timeSource !== 'redis' && timeSource !== 'clock') {
      throw new ConfigurationError(
        'invalid_option',
        `timeSource must be 'redis' or 'clock', got ${describe(timeSource)}.`,
      );
    }
    this.#timeoutMs = whole(options.timeoutMs ?? 100, 'timeoutMs', 1, MAX_TIMER_MS);
    this.#margin = whole(options.expiryMarginMs ?? 1000, 'expiryMarginMs', 0);
    this.#maxBatch = whole(options.maxBatch ?? 32, 'maxBatch', 1, MAX_BATCH_DECISIONS);
    const instance = options.instanceId ?? randomInt(1, 2 ** 32);
    this.#leaseBase = whole(instance, 'instanceId', 1, 2 ** 32 - 1) * LEASE_COUNTER;
    if (options.onError !== undefined && typeof options.onError !== 'function') {
      throw new ConfigurationError(
        'invalid_option',
        `onError must be a function, got ${describe(options.onError)}.`,
      );
    }
    const timer = options.timer ?? defaultTimer;
    if (typeof timer?.setTimeout !== 'function' || typeof timer.clearTimeout !== 'function') {
      throw new ConfigurationError(
        'invalid_option',
        'timer must have setTimeout and clearTimeout methods.',
      );
    }
    this.#client = client;
    this.#separate = client.cluster !== false;
    this.#binary = client.binaryReplies === true;
    this.#binaryArgs = client.binaryArguments === true;
    this.#release = this.#binaryArgs ? RELEASE_BINARY : RELEASE_TEXT;
    this.#prefix = prefix;
    this.#useClock = timeSource === 'clock';
    this.#onError = options.onError;
    this.#timer = timer;
  }

  /**
   * Apply a plan atomically in Redis: refuse if any active policy is blocked or full, otherwise
   * record the request in every active policy and take its leases. When Redis cannot decide (a
   * timeout, a lost connection, a script error, a reply it cannot read), this rejects with a
   * {@link RedisStoreError}, the outage its caller decides about; for any plan the engine builds it
   * rejects with nothing else.
   * @param plan - the scopes and policies of one request
   * @param now - the time in ms; used with `timeSource: 'clock'`
   */
  apply(plan: Plan, now: number): Promise<StoreOutcome> {
    // Not an async function: a decision that waits in a batch answers with the batch's own
    // promise, not with one more that adopts it.
    try {
      return this.#decide(plan, now);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #decide(plan: Plan, now: number): Promise<StoreOutcome> {
    const { scopes } = plan;
    const only = scopes.length === 1 && scopes[0]!.resource === '' ? scopes[0]! : undefined;
    let keys: string[];
    let policies: readonly Policy[];
    let resources: readonly string[];
    let decider: Decider;
    if (only !== undefined) {
      // The common plan, one scope of a client and account: what its shape needs is kept by its
      // policy list and active positions, found again without building its signature.
      const shape = this.#singleScope(plan, only);
      keys = [this.#key(only.clientId, only.accountCode, shape.listId, '')];
      ({ policies, resources, decider } = shape);
    } else {
      // KEYS: each distinct scope key once (two scopes with one key share one state).
      keys = [];
      const active: Policy[] = [];
      const where: string[] = [];
      const indices: number[] = [];
      let signature = '';
      for (const scope of scopes) {
        const list = this.#listInfo(scope.policies);
        const key = this.#key(scope.clientId, scope.accountCode, list.id, scope.resource);
        let index = keys.indexOf(key);
        if (index === -1) index = keys.push(key) - 1;
        indices.push(index);
        signature += `${list.id}${index}${this.#activeArg(scope.active, scope.policies.length)};`;
        for (const i of scope.active) {
          active.push(scope.policies[i]!);
          where.push(scope.resource);
        }
      }
      policies = active;
      resources = where;
      decider = this.#decider(signature, plan, indices);
    }
    // The time only from the caller's clock, on the stores' grid (the server's TIME is whole ms);
    // the lease id only for a plan with a throttle.
    const args: ScriptArgument[] = this.#useClock
      ? [String(Number.isFinite(now) ? resolveTime(now) : 0)]
      : [];
    let id = 0;
    if (decider.throttles.length > 0) {
      this.#counter = (this.#counter + 1) % LEASE_COUNTER;
      id = this.#leaseBase + this.#counter;
      args.push(this.#binaryArgs ? packedId(id) : String(id));
    }
    // Leases given back since the last command travel with this decision, and are given back
    // before it: one command instead of two.
    let riders: PendingRelease[] | undefined;
    if (this.#pending.length > 0 && !this.#separate) riders = this.#pending.splice(0, MAX_RIDERS);
    const request: Request = { plan, now, keys, args, policies, resources, id, riders };
    if (this.#maxBatch > 1 && !this.#separate) {
      return new Promise((settle) => this.#enqueue(decider, request, settle));
    }
    return this.#decideAlone(decider, request);
  }

  /** One decision in a script call of its own, with the releases that travel with it. */
  async #decideAlone(decider: Decider, request: Request): Promise<StoreOutcome> {
    const { plan, now, keys, args, id, riders } = request;
    if (riders !== undefined) {
      describeLeases(
        riders.map((r) => r.lease),
        keys,
        args,
        this.#binaryArgs,
      );
    }

    // A throttle decision that Redis runs after its timeout took a lease the caller never got.
    const throttles = decider.throttles;
    const late =
      id === 0 ? undefined : (value: unknown) => this.#giveBackLate(value, request, throttles);
    let reply: unknown;
    try {
      reply = await this.#run(decider.script, keys, args, late);
    } catch (error) {
      if (riders !== undefined) {
        // Keys of two clients may not meet in one command here (a cluster behind a proxy, say):
        // from now on every release goes alone, and this decision is asked again without them.
        const crossSlot = isCrossSlot(error);
        if (crossSlot) this.#separate = true;
        // Sent again, apart (giving back twice does nothing).
        this.#sendApart(riders);
        if (crossSlot) return this.apply(plan, now);
      }
      return this.#failed('apply', error, now);
    }
    if (riders !== undefined) for (const r of riders) r.done();
    return this.#outcome(reply, request, throttles);
  }

  /** The decider of a plan shape by its signature, written the first time the shape comes. */
  #decider(signature: string, plan: Plan, indices: readonly number[]): Decider {
    // Without statuses an admission's script skips them (a script of its own).
    const key = plan.statuses === false ? `${signature}-` : signature;
    let decider = this.#deciders.get(key);
    if (decider === undefined) {
      const shape: DecideShape = {
        ...shapeOf(plan, indices, this.#margin, this.#binary),
        binaryArguments: this.#binaryArgs,
        clock: this.#useClock,
      };
      const throttles = leaseSlots(shape).map(([scope, position, uses]) => ({
        scope,
        position: position + 1,
        ttlMs: (shape.scopes[scope]![position] as ConcurrencyPolicy).leaseTtlMs,
        copies: uses,
      }));
      decider = { script: script(decideScript(shape)), throttles, shape, batched: undefined };
      this.#deciders.set(key, decider);
    }
    return decider;
  }

  /** What a plan of one account-level scope needs, kept by its list, active positions and statuses. */
  #singleScope(plan: Plan, scope: PlanScope): SingleScope {
    let byActive = this.#singles.get(scope.policies);
    if (byActive === undefined) {
      byActive = new WeakMap();
      this.#singles.set(scope.policies, byActive);
    }
    let pair = byActive.get(scope.active);
    if (pair === undefined) {
      pair = [undefined, undefined];
      byActive.set(scope.active, pair);
    }
    const which = plan.statuses === false ? 1 : 0;
    let single = pair[which];
    if (single === undefined) {
      const list = this.#listInfo(scope.policies);
      const signature = `${list.id}0${this.#activeArg(scope.active, scope.policies.length)};`;
      const policies = Object.freeze(scope.active.map((i) => scope.policies[i]!));
      single = {
        listId: list.id,
        policies,
        resources: Object.freeze(policies.map(() => '')),
        decider: this.#decider(signature, plan, [0]),
      };
      pair[which] = single;
    }
    return single;
  }

  /** The outcome of a decision from its reply, with its lease when it took one. */
  #outcome(reply: unknown, request: Request, throttles: readonly Throttle[]): StoreOutcome {
    const { plan, now, keys, policies, resources, id } = request;
    const outcome = parseOutcome(reply, this.#binary, plan, policies, resources);
    if (outcome === undefined) {
      return this.#failed(
        'apply',
        new RedisStoreError(
          'redis_bad_reply',
          'apply',
          `Unexpected reply from the decision script: ${describe(reply)}.`,
        ),
        now,
      );
    }
    if (outcome.allowed && id !== 0) {
      const lease: RedisLease = { store: this, keys, throttles, id, t: outcome.now };
      // parseOutcome made the object for this decision: it takes the lease without a copy.
      (outcome as { lease: LeaseToken | undefined }).lease = lease;
    }
    return outcome;
  }

  /** A decision that Redis made after its timeout: give back the lease its caller never got. */
  #giveBackLate(value: unknown, request: Request, throttles: readonly Throttle[]): void {
    const { plan, keys, policies, resources, id } = request;
    const taken = parseOutcome(value, this.#binary, plan, policies, resources);
    if (taken?.allowed) {
      void this.release({ store: this, keys, throttles, id, t: taken.now } as RedisLease);
    }
  }

  /**
   * Add a decision to the open batch of its shape. A decision of another shape sends the open
   * batch first, so that decisions reach Redis in the order they were asked. A batch goes as soon
   * as it holds as many decisions as are in Redis already (at least one, at most `maxBatch`):
   * Redis then has a call to work on while the next one fills, where one call of every decision
   * in flight would leave each side waiting for the other; and a decision that finds nothing in
   * Redis goes at once, alone. What is open at the end of the turn goes then.
   */
  #enqueue(decider: Decider, request: Request, settle: Settle): void {
    let open = this.#open;
    if (open !== undefined && open.decider !== decider) {
      this.#sendOpen();
      open = undefined;
    }
    const opened = open === undefined;
    if (open === undefined) {
      open = { decider, requests: [], settles: [] };
      this.#open = open;
    }
    open.requests.push(request);
    open.settles.push(settle);
    const full = Math.min(this.#maxBatch, Math.max(1, this.#inFlight));
    if (open.requests.length >= full) this.#sendOpen();
    // Still open: it goes at the end of the turn at the latest.
    else if (opened) process.nextTick(this.#sendOpen);
  }

  readonly #sendOpen = (): void => {
    const open = this.#open;
    if (open === undefined) return;
    this.#open = undefined;
    if (open.requests.length > 1) {
      void this.#sendBatch(open);
      return;
    }
    // One decision: the script of one, which costs Redis less; counted in Redis all the same.
    this.#inFlight++;
    const outcome = this.#decideAlone(open.decider, open.requests[0]!);
    // Counted off before the caller goes on: this reaction comes before the caller's.
    const answered = () => {
      this.#inFlight--;
    };
    outcome.then(answered, answered);
    open.settles[0]!(outcome);
  };

  /** One script call for the decisions of a batch; each is settled with its own outcome. */
  async #sendBatch({ decider, requests, settles }: Batch): Promise<void> {
    const { throttles } = decider;
    const late =
      throttles.length === 0
        ? undefined
        : (value: unknown) => {
            if (!Array.isArray(value) || value.length !== requests.length) return;
            for (const [i, r] of requests.entries()) this.#giveBackLate(value[i], r, throttles);
          };
    // In Redis until answered: counted off before any decision is settled, so that the decisions
    // its callers ask next see what is still in Redis.
    this.#inFlight += requests.length;
    let replies: unknown;
    try {
      decider.batched ??= script(decideScript({ ...decider.shape, batched: true }));
      const { keys, args } = batchArguments(requests, this.#binaryArgs);
      const call = this.#run(decider.batched, keys, args, late);
      // Worth a write of its own: Redis starts on it while this process prepares the next.
      this.#client.flush?.();
      replies = await call;
    } catch (error) {
      this.#inFlight -= requests.length;
      const riders = requests.flatMap((r) => r.riders ?? []);
      // Sent again, apart (giving back twice does nothing).
      if (riders.length > 0) this.#sendApart(riders);
      if (isCrossSlot(error)) {
        // Keys of two clients may not meet in one command here: from now on every decision and
        // every release goes alone, and these decisions are asked again so.
        this.#separate = true;
        for (const [i, r] of requests.entries()) settles[i]!(this.apply(r.plan, r.now));
        return;
      }
      for (const [i, r] of requests.entries()) {
        settles[i]!(this.#settled(() => this.#failed('apply', error, r.now)));
      }
      return;
    }
    this.#inFlight -= requests.length;
    for (const r of requests) if (r.riders !== undefined) for (const p of r.riders) p.done();
    const fits = Array.isArray(replies) && replies.length === requests.length;
    for (const [i, r] of requests.entries()) {
      const reply = fits ? (replies as unknown[])[i] : replies;
      settles[i]!(this.#settled(() => this.#outcome(reply, r, throttles)));
    }
  }

  /** An outcome, or the rejection of what computing it threw (an outage). */
  #settled(outcome: () => StoreOutcome): StoreOutcome | Promise<StoreOutcome> {
    try {
      return outcome();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Give back the leases of an admitted request. Idempotent; never rejects (a lease that cannot be
   * given back expires after its TTL); resolves once Redis has answered.
   *
   * Outside Redis Cluster the lease travels with the next decision this store sends, which gives
   * it back before deciding; leases that find no decision by the end of the event loop's turn go
   * together in one release script. In a cluster (or with a client that does not say it is not
   * one, see {@link RedisScriptClient.cluster}), each release is one script call of its own.
   * @param lease - the token from an admitted outcome
   */
  release(lease: LeaseToken): Promise<void> {
    const own = lease as RedisLease;
    if (own?.store !== this) return Promise.resolve();
    if (this.#separate) return this.#send([own]);
    return new Promise((resolve) => {
      this.#pending.push({ lease: own, done: resolve });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  /** Send the leases still waiting, in batches (or one by one in a cluster). */
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const pending = this.#pending;
    this.#pending = [];
    this.#sendApart(pending);
  };

  /** Send the leases of `pending` in release scripts of their own, then tell each it is done. */
  #sendApart(pending: readonly PendingRelease[]): void {
    const size = this.#separate ? 1 : MAX_BATCH;
    for (let i = 0; i < pending.length; i += size) {
      const batch = pending.slice(i, i + size);
      void this.#send(batch.map((p) => p.lease)).then(() => {
        for (const p of batch) p.done();
      });
    }
  }

  /** One release script for `leases`; a failure is reported, never thrown. */
  async #send(leases: readonly RedisLease[]): Promise<void> {
    const keys: string[] = [];
    const args: ScriptArgument[] = [];
    describeLeases(leases, keys, args, this.#binaryArgs);
    try {
      await this.#run(this.#release, keys, args);
    } catch (error) {
      if (leases.length > 1 && isCrossSlot(error)) {
        this.#separate = true;
        await Promise.all(leases.map((lease) => this.#send([lease])));
        return;
      }
      this.#report(toStoreError('release', error));
    }
  }

  /**
   * EVALSHA, then EVAL when the server does not have the script (restart, failover, SCRIPT FLUSH).
   * A reply that comes after the timeout goes to `late`.
   */
  #run(
    s: Script,
    keys: readonly string[],
    args: readonly ScriptArgument[],
    late?: (value: unknown) => void,
  ): Promise<unknown> {
    const client = this.#client;
    const call = client.evalSha(s.sha1, keys, args).catch((error: unknown) => {
      if (isNoScript(error)) return client.eval(s.text, keys, args);
      throw error;
    });
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const handle = this.#timer.setTimeout(() => {
        timedOut = true;
        reject(TIMEOUT);
      }, this.#timeoutMs);
      call.then(
        (value) => {
          this.#timer.clearTimeout(handle);
          if (timedOut) late?.(value);
          else resolve(value);
        },
        (error: unknown) => {
          this.#timer.clearTimeout(handle);
          reject(error);
        },
      );
    });
  }

  // The store reports an outage and never decides what it means: apply rejects with it.
  #failed(operation: 'apply', error: unknown, _now: number): never {
    const failure = toStoreError(operation, error);
    this.#report(failure);
    throw failure;
  }

  #report(error: RedisStoreError): void {
    try {
      this.#onError?.(error);
    } catch {
      // A failing logger must not turn a decision into a crash.
    }
  }

  #key(clientId: string, accountCode: string, listId: string, resource: string): string {
    // The hash tag: every key of one decision hashes to one Redis Cluster slot. Length-prefixed,
    // so that no client id and account code pair can forge another pair's tag; braces and % are
    // escaped, so the tag ends where it should.
    const c = escapeTag(clientId);
    const tag = `{${c.length}:${c}${escapeTag(accountCode)}}`;
    return resource === ''
      ? `${this.#prefix}${tag}:${listId}`
      : `${this.#prefix}${tag}:${listId}:${resource}`;
  }

  #listInfo(policies: readonly Policy[]): ListInfo {
    let info = this.#lists.get(policies);
    if (info === undefined) {
      // State is kept per policy list, as in the memory store: a changed list starts afresh. So
      // does a changed layout: a value written in an earlier one is never read, only expires.
      const id = createHash('sha1')
        .update(`${LAYOUT_VERSION}:${JSON.stringify(policies)}`)
        .digest('hex')
        .slice(0, 16);
      info = { id };
      this.#lists.set(policies, info);
    }
    return info;
  }

  #activeArg(active: readonly number[], count: number): string {
    let arg = this.#actives.get(active);
    if (arg === undefined) {
      // The active positions, for the plan's shape: '*' for every position, else the list.
      arg =
        active.length === count && active.every((p, i) => p === i) ? '*' : `(${active.join(',')})`;
      this.#actives.set(active, arg);
    }
    return arg;
  }
}

/**
 * The shape of a plan that its decision script is written for: each distinct key's policy list
 * in KEYS order, and the active positions in plan order.
 * @param indices - each plan scope's place among the distinct keys
 */
function shapeOf(
  plan: Plan,
  indices: readonly number[],
  marginMs: number,
  binary: boolean,
): DecideShape {
  const scopes: (readonly Policy[])[] = [];
  const work: [number, number][] = [];
  for (const [i, scope] of plan.scopes.entries()) {
    const index = indices[i]!;
    scopes[index] ??= scope.policies;
    for (const position of scope.active) work.push([index, position]);
  }
  return { scopes, work, marginMs, binary, statuses: plan.statuses !== false };
}

// `{`, `}` and `%` as `%7B`, `%7D` and `%25`; a lone surrogate, which UTF-8 would turn into U+FFFD
// on its way to Redis (so that `x\uD800`, `x\uDBFF` and `x\uFFFD` would share one key), as `%u`
// and its four hex digits. Every `%` starts an escape, so two different ids never meet.
const TAG_ESCAPES = new RegExp(`[{}%]|${LONE_SURROGATE.source}`, 'g');

function escapeTag(value: string): string {
  if (!/[{}%\uD800-\uDFFF]/.test(value)) return value;
  return value.replace(TAG_ESCAPES, (c) => {
    const code = c.charCodeAt(0).toString(16).toUpperCase();
    return code.length === 4 ? `%u${code}` : `%${code}`;
  });
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Append the scope of each throttle of `leases` to `keys`, and its release arguments to `args`
 * (see release-script.ts): its records packed, as Redis appends them (`binary`), else the
 * throttle's position, the lease's expiry, its id and copies in text.
 */
function describeLeases(
  leases: readonly RedisLease[],
  keys: string[],
  args: ScriptArgument[],
  binary: boolean,
): void {
  for (const lease of leases) {
    for (const throttle of lease.throttles) {
      keys.push(lease.keys[throttle.scope]!);
      const expiry = lease.t + throttle.ttlMs;
      if (!binary) {
        args.push(
          String(throttle.position),
          String(expiry),
          String(lease.id),
          String(throttle.copies),
        );
        continue;
      }
      const records = Buffer.allocUnsafe(RELEASE_RECORD_SIZE * throttle.copies);
      for (let at = 0; at < records.length; at += RELEASE_RECORD_SIZE) {
        records.writeDoubleLE(throttle.position, at);
        records.writeDoubleLE(expiry, at + 8);
        records.writeDoubleLE(lease.id, at + 16);
      }
      args.push(records);
    }
  }
}

/**
 * The KEYS and ARGV of a call of several decisions (see decide-script.ts): how many, then per
 * decision its keys and arguments, how many throttles' records of given-back leases travel before
 * it, and their keys and records.
 */
function batchArguments(
  requests: readonly Request[],
  binary: boolean,
): { keys: string[]; args: ScriptArgument[] } {
  const keys: string[] = [];
  const args: ScriptArgument[] = [String(requests.length)];
  for (const r of requests) {
    keys.push(...r.keys);
    args.push(...r.args);
    if (r.riders === undefined) {
      args.push('0');
      continue;
    }
    const count = args.push('') - 1;
    const before = keys.length;
    describeLeases(
      r.riders.map((p) => p.lease),
      keys,
      args,
      binary,
    );
    args[count] = String(keys.length - before);
  }
  return { keys, args };
}

/** A lease id as the decision script takes it from a client that sends bytes: a little-endian double. */
function packedId(id: number): Buffer {
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeDoubleLE(id, 0);
  return bytes;
}

/** Redis Cluster's answer to a command whose keys are not all in one slot. */
function isCrossSlot(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('CROSSSLOT');
}

function toStoreError(operation: 'apply' | 'release', error: unknown): RedisStoreError {
  if (error instanceof RedisStoreError) return error;
  const [code, message]: [RedisStoreErrorCode, string] =
    error === TIMEOUT
      ? ['redis_timeout', `Redis did not answer the ${operation} script in time.`]
      : [
          'redis_command_failed',
          `The ${operation} script failed: ${error instanceof Error ? error.message : describe(error)}`,
        ];
  return new RedisStoreError(
    code,
    operation,
    message,
    error === TIMEOUT ? undefined : { cause: error },
  );
}

/** Read the decision script's reply; undefined when it is not what the script returns. */
function parseOutcome(
  reply: unknown,
  binary: boolean,
  plan: Plan,
  policies: readonly Policy[],
  resources: readonly string[],
): StoreOutcome | undefined {
  const numbers = binary ? readDoubles(reply) : readText(reply);
  if (numbers === undefined || numbers.length < 2) return undefined;
  const n = policies.length;
  const [allowed, t] = numbers as [number, number];
  // An admission asked without statuses replies with its first two numbers only.
  const lean = plan.statuses === false && n > 0;
  if (allowed === 1) {
    if (numbers.length !== (lean ? 2 : 2 + n)) return undefined;
    if (lean) return admissionWithoutStatuses(t, undefined);
    return {
      allowed: true,
      now: t,
      lease: undefined,
      policies: activePolicies(plan, policies),
      values: admittedStatuses(policies, numbers, t),
    };
  }
  if (allowed !== 0 || numbers.length !== 5 + 2 * n) return undefined;
  const [, , reason, retry, refusing] = numbers as [number, number, number, number, number];
  const why = REASONS[reason];
  if (why === undefined || refusing < 1 || refusing > n) return undefined;
  return {
    allowed: false,
    now: t,
    reason: why,
    retryAfterSeconds: retry,
    policy: policies[refusing - 1],
    resource: resources[refusing - 1],
    policies: activePolicies(plan, policies),
    values: numbers.slice(5),
  };
}

/** The scope's own list when it is all of them, as the memory store answers. */
function activePolicies(plan: Plan, policies: readonly Policy[]): readonly Policy[] {
  const only = plan.scopes.length === 1 ? plan.scopes[0]! : undefined;
  return only !== undefined && only.active.length === only.policies.length
    ? only.policies
    : policies;
}

/**
 * The statuses of an admission, worked out as the memory store works them out, from what the
 * script replies after the time: per active policy, a window's or a throttle's count after the
 * admission (the newest admission is now), or the rate policy's theoretical arrival time.
 */
function admittedStatuses(
  policies: readonly Policy[],
  numbers: readonly number[],
  t: number,
): number[] {
  const values: number[] = new Array(2 * policies.length);
  for (let k = 0; k < policies.length; k++) {
    const policy = policies[k]!;
    const raw = numbers[2 + k]!;
    switch (policy.kind) {
      case 'window':
        values[2 * k] = windowRemaining(policy, raw);
        values[2 * k + 1] = windowResetAfter(policy, raw, t, t);
        break;
      case 'rate':
        values[2 * k] = rateRemaining(policy, raw, t);
        values[2 * k + 1] = rateResetAfter(raw, t);
        break;
      case 'concurrency':
        values[2 * k] = throttleRemaining(policy, raw);
        values[2 * k + 1] = 0;
        break;
    }
  }
  return values;
}

/** A binary reply: little-endian doubles, each finite; undefined when it is not that. */
function readDoubles(reply: unknown): number[] | undefined {
  if (!(reply instanceof Uint8Array) || reply.byteLength % 8 !== 0) return undefined;
  const count = reply.byteLength / 8;
  const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength);
  const numbers: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const value = view.getFloat64(8 * i, true);
    if (!Number.isFinite(value)) return undefined;
    numbers[i] = value;
  }
  return numbers;
}

/** A text reply (or its bytes): numbers separated by commas; undefined when it is not that. */
function readText(reply: unknown): number[] | undefined {
  const text = reply instanceof Uint8Array ? Buffer.from(reply).toString('latin1') : reply;
  if (typeof text !== 'string') return undefined;
  const fields = text.split(',');
  const count = fields.length;
  const numbers: number[] = new Array(count);
  for (let i = 0; i < count; i++) {
    // Each written exactly: whole numbers in full, fractions with 17 digits.
    const value = Number(fields[i]);
    if (fields[i] === '' || !Number.isFinite(value)) return undefined;
    numbers[i] = value;
  }
  return numbers;
}

// The options RedisStore knows: any other key is refused, naming the nearest of these.
const OPTION_NAMES = [
  'client',
  'prefix',
  'timeSource',
  'timeoutMs',
  'onError',
  'expiryMarginMs',
  'timer',
  'instanceId',
  'maxBatch',
] as const satisfies ReadonlyArray<keyof RedisStoreOptions>;

// Options that were removed, with what to use instead: the store reports an outage and its caller
// decides what it means.
const REMOVED_OPTIONS: Readonly<Record<string, string>> = {
  failMode:
    "RedisStore has no option failMode any more: the store reports an outage (apply rejects with a RedisStoreError) and never decides it. Decide in one place: the middleware's failure option ('open' or 'closed', a 503) or createLimiter's outage option ('open', 'closed', 'fallback' or 'reject').",
  failClosedRetryAfterSeconds:
    "RedisStore has no option failClosedRetryAfterSeconds any more: set the Retry-After of an outage where it is decided, createLimiter's outageRetryAfterSeconds (with outage: 'closed') or the middleware's failureRetryAfterSeconds (with failure: 'closed').",
};

/** Refuse a key that is not an option (a misspelt one would leave its default without a word). */
function refuseUnknownOptions(options: object): void {
  let keys: string[];
  try {
    keys = Object.keys(options);
  } catch (cause) {
    throw new ConfigurationError(
      'invalid_option',
      'Reading the RedisStore options threw; pass plain data.',
      { cause },
    );
  }
  const known: readonly string[] = OPTION_NAMES;
  for (const key of keys) {
    if (known.includes(key)) continue;
    const removed = Object.hasOwn(REMOVED_OPTIONS, key) ? REMOVED_OPTIONS[key] : undefined;
    if (removed !== undefined) throw new ConfigurationError('invalid_option', removed);
    // The first characters are enough to find the nearest of short names.
    const nearest = nearestName(key.slice(0, 64), known) ?? OPTION_NAMES[0];
    throw new ConfigurationError(
      'invalid_option',
      `RedisStore has no option ${describe(key)}; did you mean "${nearest}"? Its options are ${OPTION_NAMES.join(', ')}.`,
    );
  }
}

function whole(value: number, name: string, min: number, max?: number): number {
  if (!Number.isSafeInteger(value) || value < min || (max !== undefined && value > max)) {
    throw new ConfigurationError(
      'invalid_option',
      max === undefined
        ? `${name} must be a whole number >= ${min}, got ${describe(value)}.`
        : `${name} must be a whole number from ${min} to ${max}, got ${describe(value)}.`,
    );
  }
  return value;
}
