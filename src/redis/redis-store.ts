/**
 * The Redis store: shared limit state, one atomic script call per decision (or batch), decisions
 * equal to the memory store's. It reports outages and never decides them. See docs/redis-store.md.
 * @module
 */
import { RedisStoreError } from '../errors/redis-store-error.js';
import { describe } from '../internal/describe.js';
import { leaseExpiriesWatched, reportLeaseExpiry } from '../limits/channels.js';
import type {
  AsyncLimitStore,
  LeaseToken,
  Plan,
  ResetOutcome,
  ResetScope,
  StoreOutcome,
} from '../limits/store.js';
import { resolveTime } from '../limits/store.js';
import { DecisionBatcher, type DecisionRequest, type DecisionSteps } from './decision-batch.js';
import { type Decider, PlanShapes, type Scoped } from './plan-shapes.js';
import type { ScriptArgument } from './redis-client.js';
import { RESET_SCRIPT } from './reset-script.js';
import {
  describeLeases,
  packedId,
  type RedisLease,
  ReleaseQueue,
  ridersDone,
} from './riding-releases.js';
import { type ExpiryReport, parseOutcome } from './script-reply.js';
import { isCrossSlot, ScriptRunner, toStoreError } from './script-runner.js';
import { resetPattern, scopeKey, scopeTag } from './store-keys.js';
import { LEASE_COUNTER, type RedisStoreOptions, readStoreSettings } from './store-options.js';

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
  readonly #runner: ScriptRunner;
  readonly #releases: ReleaseQueue;
  readonly #shapes: PlanShapes;
  /** Undefined with `maxBatch: 1`: every decision goes alone. */
  readonly #batcher: DecisionBatcher | undefined;
  readonly #prefix: string;
  readonly #useClock: boolean;
  /** The instance's part of every lease id (see {@link RedisStoreOptions.instanceId}). */
  readonly #leaseBase: number;
  #counter = 0;

  /**
   * @param options - the client, and how to time, fail and expire
   * @throws ConfigurationError `invalid_redis_client` for a missing or unusable client,
   *   `invalid_option` for any other bad or unknown option
   */
  constructor(options: RedisStoreOptions) {
    const settings = readStoreSettings(options);
    this.#runner = new ScriptRunner(settings);
    this.#releases = new ReleaseQueue(this.#runner);
    this.#useClock = settings.timeSource === 'clock';
    this.#shapes = new PlanShapes({
      marginMs: settings.expiryMarginMs,
      binary: this.#runner.binaryReplies,
      binaryArguments: this.#runner.binaryArguments,
      clock: this.#useClock,
    });
    this.#batcher =
      settings.maxBatch > 1
        ? new DecisionBatcher(settings.maxBatch, this.#runner, this.#releases, this.#steps())
        : undefined;
    this.#prefix = settings.prefix;
    this.#leaseBase = settings.instanceId * LEASE_COUNTER;
  }

  /**
   * Apply a plan atomically in Redis. When Redis cannot decide (timeout, lost connection, script
   * error, unreadable reply) this rejects with a {@link RedisStoreError}, and with nothing else.
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

  /**
   * Give back the leases of an admitted request, once; later calls answer the first call's promise.
   * Never rejects (a lease that cannot be given back expires after its TTL). Outside Redis Cluster
   * the lease rides on the next decision (docs/redis-store.md).
   * @param lease - the token from an admitted outcome; another store's is ignored
   */
  release(lease: LeaseToken): Promise<void> {
    const own = lease as RedisLease | undefined;
    if (own?.store !== this) return Promise.resolve();
    own.given ??= this.#releases.add(own);
    return own.given;
  }

  /**
   * Delete every key of a client and account, or those of one resource of theirs, in one atomic
   * script call: their next request is decided afresh, and a lease taken before is void. The
   * script walks the database's keys with SCAN (docs/redis.md says what that costs). Decisions
   * asked before it are sent before it. When Redis cannot answer this rejects with a
   * {@link RedisStoreError}.
   * @param scope - the client id and account code, and optionally a resource key
   */
  reset(scope: ResetScope): Promise<ResetOutcome> {
    try {
      this.#batcher?.sendOpen();
      const tag = scopeTag(this.#prefix, scope.clientId, scope.accountCode);
      const pattern = resetPattern(tag, scope.resource);
      return this.#runner
        .run(RESET_SCRIPT, [tag], [pattern])
        .then((reply) => {
          if (typeof reply !== 'number' || !Number.isSafeInteger(reply) || reply < 0) {
            throw new RedisStoreError(
              'redis_bad_reply',
              'reset',
              `Unexpected reply from the reset script: ${describe(reply)}.`,
            );
          }
          return { cleared: reply };
        })
        .catch((error: unknown) => this.#failed(error, 'reset'));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #decide(plan: Plan, now: number): Promise<StoreOutcome> {
    const { scopes } = plan;
    // A plan with shadow policies is told apart by its signature, which `several` writes; so is
    // one whose limits are overridden (its key is its `state` list's).
    const first = scopes[0];
    const only =
      scopes.length === 1 &&
      first!.resource === '' &&
      plan.shadow !== true &&
      first!.state === undefined
        ? first
        : undefined;
    let keys: string[];
    let scoped: Scoped;
    if (only !== undefined) {
      const single = this.#shapes.single(plan, only);
      keys = [scopeKey(this.#prefix, only.clientId, only.accountCode, single.listId, '')];
      scoped = single;
    } else {
      keys = [];
      scoped = this.#shapes.several(plan, this.#prefix, keys);
    }
    const { decider } = scoped;
    const args = this.#timeArgument(now);
    // The cost follows the time, in a script of its own (a cost of 1 sends none).
    if (decider.shape.costed === true) args.push(String(plan.cost));
    const id = decider.throttles.length > 0 ? this.#leaseId(args) : 0;
    // Leases given back since the last command ride on this decision: one command, not two.
    const riders = this.#releases.riders();
    const { policies, resources } = scoped;
    const request: DecisionRequest = { plan, now, keys, args, policies, resources, id, riders };
    const batcher = this.#batcher;
    if (batcher !== undefined && !this.#runner.separate) {
      return new Promise((settle) => batcher.add(decider, request, settle));
    }
    return this.#decideAlone(decider, request);
  }

  /** The time only from the caller's clock, on the stores' grid (the server's TIME is whole ms). */
  #timeArgument(now: number): ScriptArgument[] {
    return this.#useClock ? [String(Number.isFinite(now) ? resolveTime(now) : 0)] : [];
  }

  /** A new lease id, appended to the decision's arguments. */
  #leaseId(args: ScriptArgument[]): number {
    this.#counter = (this.#counter + 1) % LEASE_COUNTER;
    const id = this.#leaseBase + this.#counter;
    args.push(this.#runner.binaryArguments ? packedId(id) : String(id));
    return id;
  }

  async #decideAlone(decider: Decider, request: DecisionRequest): Promise<StoreOutcome> {
    const { plan, now, keys, args, id, riders } = request;
    if (riders !== undefined) {
      describeLeases(
        riders.map((r) => r.lease),
        keys,
        args,
        this.#runner.binaryArguments,
      );
    }
    // A throttle decision that Redis runs after its timeout took a lease the caller never got.
    const late =
      id === 0 ? undefined : (value: unknown) => this.#giveBackLate(value, request, decider);
    let reply: unknown;
    try {
      reply = await this.#runner.run(decider.script, keys, args, late);
    } catch (error) {
      if (riders !== undefined) {
        // Keys of two clients may not meet in one command here (a cluster behind a proxy, say):
        // from now on every release goes alone, and this decision is asked again without them.
        const crossSlot = isCrossSlot(error);
        if (crossSlot) this.#runner.separate = true;
        // Sent again, apart: giving a lease back twice removes nothing else.
        this.#releases.sendApart(riders);
        if (crossSlot) return this.apply(plan, now);
      }
      return this.#failed(error);
    }
    if (riders !== undefined) ridersDone(riders);
    return this.#outcome(reply, request, decider);
  }

  /**
   * The outcome of a decision from its reply, with its lease when it took one; the leases it
   * dropped expired are reported while anyone listens.
   */
  #outcome(reply: unknown, request: DecisionRequest, decider: Decider): StoreOutcome {
    const { keys, id } = request;
    const binary = this.#runner.binaryReplies;
    const outcome = parseOutcome(reply, binary, request, decider.sections, expiryReport);
    if (outcome === undefined) {
      return this.#failed(
        new RedisStoreError(
          'redis_bad_reply',
          'apply',
          `Unexpected reply from the decision script: ${describe(reply)}.`,
        ),
      );
    }
    if (outcome.allowed && id !== 0) {
      const lease: RedisLease = {
        store: this,
        keys,
        throttles: decider.throttles,
        id,
        t: outcome.now,
        given: undefined,
      };
      // parseOutcome made the object for this decision: it takes the lease without a copy.
      (outcome as { lease: LeaseToken | undefined }).lease = lease;
    }
    return outcome;
  }

  /**
   * A decision that Redis made after its timeout: give back the lease its caller never got. The
   * leases it dropped expired are reported: it did drop them.
   */
  #giveBackLate(value: unknown, request: DecisionRequest, decider: Decider): void {
    const { keys, id } = request;
    const binary = this.#runner.binaryReplies;
    const taken = parseOutcome(value, binary, request, decider.sections, expiryReport);
    if (taken?.allowed) {
      const lease: RedisLease = {
        store: this,
        keys,
        throttles: decider.throttles,
        id,
        t: taken.now,
        given: undefined,
      };
      void this.release(lease);
    }
  }

  /** Report the outage and reject with it: the store never decides what it means. */
  #failed(error: unknown, operation: 'apply' | 'reset' = 'apply'): never {
    const failure = toStoreError(operation, error);
    this.#runner.report(failure);
    throw failure;
  }

  /** What a batch of decisions needs of the store. */
  #steps(): DecisionSteps {
    return {
      alone: (decider, request) => this.#decideAlone(decider, request),
      outcome: (reply, request, decider) => this.#outcome(reply, request, decider),
      late: (reply, request, decider) => this.#giveBackLate(reply, request, decider),
      failed: (error) => this.#failed(error),
      again: (request) => this.apply(request.plan, request.now),
    };
  }
}

/**
 * Where the leases a decision dropped expired are reported, asked only when it dropped some: no
 * message is built while no one listens.
 */
function expiryReport(): ExpiryReport | undefined {
  return leaseExpiriesWatched() ? reportLeaseExpiry : undefined;
}
