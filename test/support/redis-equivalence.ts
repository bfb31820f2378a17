/**
 * The driver of the properties comparing the Redis store with the memory store (invariant 5 of
 * docs/invariants.md): the store variants, both clients on a database of the shared redis-server,
 * the steps the properties draw, and both stores, or a limiter on each, driven by them on one
 * clock, every decision compared.
 *
 * The memory store decides at once. The Redis store's commands go out in the order the steps ask
 * for them, which is the order a run awaiting every reply sends, and one connection answers in
 * order: its replies are compared when the driver settles. It settles only where the command
 * sent next depends on a reply or on the wait: before a lease is given back (the Redis lease is
 * in a reply), at a release or a reset the property awaits (the release goes alone then, not on
 * the next decision), after a decision of a plan shape new to the server (the store sends its
 * script again with EVAL on NOSCRIPT, which must not run after decisions sent meanwhile), and at
 * the end. A batched store gets a turn at a time, its shapes' scripts loaded first.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  type AccountPresets,
  type AsyncLimitStore,
  type CheckOptions,
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  type LeaseToken,
  type Limiter,
  type LimitPreset,
  type LimitRequest,
  MemoryStore,
  type PeekOptions,
  type Plan,
  type PlanScope,
  type Policy,
  type ResetRequest,
  type StoreOutcome,
  type SyncLimitStore,
} from '../../src/index.js';
import { RedisStore } from '../../src/redis/index.js';
import { comparable } from './limits.js';
import { type ClientKind, clientKinds, connect, type TestClient } from './redis-server.js';
import { type SharedRedis, sharedRedis } from './shared-redis.js';

/**
 * The stores compared with the memory store: each client, and ioredis with every argument and reply
 * in text (the form a client that cannot send or read bytes gets).
 */
export const variants = [...clientKinds, 'ioredis, in text'] as const;
export type Variant = (typeof variants)[number];

export function scope(
  clientId: string,
  accountCode: string,
  resource: string,
  policies: readonly Policy[],
  active: readonly number[],
): PlanScope {
  return { clientId, accountCode, resource, policies, active };
}

export function comparableOutcome(o: StoreOutcome) {
  const { lease, ...rest } = o as StoreOutcome & { lease?: unknown };
  return { ...rest, leased: lease !== undefined };
}

/** Routes that hit the presets' resource limits, the Live throttle exemptions, and neither. */
export const routes = [
  ['GET', '/booking/v1/reservations'],
  ['GET', '/booking/v1/offers'],
  ['GET', '/booking/v2/reservations/R7/service-offers'],
  ['PUT', '/rateplan/v1/rate-plans/P1/rates'],
  ['PUT', '/rateplan/v0-nsfh/rate-plans/P1/rates'],
  ['PUT', '/rateplan/v1/rate-plans/P2/rates'],
  ['PATCH', '/rateplan/v1/rates'],
  ['PATCH', '/booking/v1/bookings/B1'],
  ['PATCH', '/booking/v3/reservations/R1'],
] as const;

export const pairs = [
  ['client-1', 'ACME'],
  ['client-1', 'OTHER'],
  ['client-{2}', '%7B'],
] as const;

/** One of {@link pairs}. */
export const who = fc.integer({ min: 0, max: pairs.length - 1 });

/** A step that gives back a lease taken earlier: `pick` modulo the leases held. */
export const releaseStep = fc.record({ kind: fc.constant('release' as const), pick: fc.nat() });
type ReleaseStep = typeof releaseStep extends fc.Arbitrary<infer T> ? T : never;

/** A step that resets a pair of {@link pairs}, or one resource of theirs. */
export const resetStep = (resources: readonly string[]) =>
  fc.record({
    kind: fc.constant('reset' as const),
    who,
    resource: fc.option(fc.constantFrom(...resources), { nil: undefined }),
  });
type ResetStep = ReturnType<typeof resetStep> extends fc.Arbitrary<infer T> ? T : never;

/**
 * A decision step: after `gap` ms, or with `retry` at that offset from the instant the latest
 * refusal announced (never back); `times` decisions at that instant, each lease given back at once
 * (awaited) with `release`, else held for the release steps.
 */
export interface DecisionStep {
  readonly kind?: string;
  readonly gap: number;
  readonly retry?: number | undefined;
  readonly times?: number;
  readonly release?: boolean;
}

/** The decision steps of a sequence. */
type Decisions<S> = Exclude<S, ReleaseStep | ResetStep>;

type Turns<S> = readonly { readonly pause: number; readonly turn: readonly S[] }[];

/** Turns of a batched store: a pause, then steps sent none awaited before the next. */
export const turnsOf = <S>(
  step: fc.Arbitrary<S>,
  max: { pause: number; steps: number; turns: number },
) =>
  fc.array(
    fc.record({
      pause: fc.integer({ min: 0, max: max.pause }),
      turn: fc.array(step, { minLength: 1, maxLength: max.steps }),
    }),
    { minLength: 1, maxLength: max.turns },
  );

const isRelease = (s: object): s is ReleaseStep => 'kind' in s && s.kind === 'release';
const isReset = (s: object): s is ResetStep => 'kind' in s && s.kind === 'reset';

/**
 * What the script of a plan depends on, told apart at least as finely as the store does: the
 * content of its policy lists, which scopes share a client and account, their resources, positions
 * and shadow marks, and the plan's variant.
 */
function shapes(): (plan: Plan) => string {
  const byList = new WeakMap<readonly Policy[], number>();
  const byContent = new Map<string, number>();
  const listOf = (policies: readonly Policy[]): number => {
    let id = byList.get(policies);
    if (id === undefined) {
      const content = JSON.stringify(policies, (_, v: unknown) =>
        typeof v === 'number' ? `${v}` : v,
      );
      id = byContent.get(content) ?? byContent.size;
      byContent.set(content, id);
      byList.set(policies, id);
    }
    return id;
  };
  return ({ peek, cost, statuses, shadow, scopes }) =>
    JSON.stringify([
      [peek === true, cost !== undefined && cost !== 1, statuses !== false, shadow === true],
      ...scopes.map((s) => [
        scopes.findIndex((o) => o.clientId === s.clientId && o.accountCode === s.accountCode),
        listOf(s.policies),
        s.state === undefined ? -1 : listOf(s.state),
        s.resource,
        s.active,
        s.shadow ?? null,
      ]),
    ]);
}

/** Decisions sent to both sides; the Redis side's compared when settled. */
class Compared {
  #queue: [Promise<unknown>, unknown, string][] = [];
  #fresh = false;
  #count = 0;

  /** @param isNew - whether a plan's shape is new to the server (and now it is not) */
  constructor(
    readonly redis: RedisStore,
    readonly isNew: (plan: Plan) => boolean,
  ) {}

  /** Send `plan` to the Redis store, noting a shape new to the server. */
  protected send(plan: Plan, now: number): Promise<StoreOutcome> {
    if (this.isNew(plan)) this.#fresh = true;
    return this.redis.apply(plan, now);
  }

  /** Compare `actual` with `expected` when settled; settle now after a new shape. */
  protected async compare(actual: Promise<unknown>, expected: unknown, at: number): Promise<void> {
    // Awaited when settled; until then a failure must not count as unhandled.
    actual.catch(() => undefined);
    this.#queue.push([actual, expected, `decision ${++this.#count} at ${at}`]);
    if (this.#fresh) await this.settle();
  }

  /** Compare every decision sent so far (toEqual, without its cost when strictly deep-equal). */
  async settle(): Promise<void> {
    this.#fresh = false;
    const queue = this.#queue;
    this.#queue = [];
    for (const [actual, expected, what] of queue) {
      const value = await actual;
      if (!isDeepStrictEqual(value, expected)) expect(value, what).toEqual(expected);
    }
  }
}

/** A lease both stores took: the Redis one once its decision is answered. */
interface HeldLease {
  readonly memory: LeaseToken;
  redis?: LeaseToken | undefined;
}

/** The memory store and a fresh Redis store, driven alike; the leases both hold. */
export class StoreTwins extends Compared {
  readonly held: HeldLease[] = [];

  constructor(
    redis: RedisStore,
    isNew: (plan: Plan) => boolean,
    readonly memory: MemoryStore,
  ) {
    super(redis, isNew);
  }

  /** Decide `plan` at `t` on both, nothing awaited but a new shape; the memory store's outcome. */
  async #decide(plan: Plan, t: number, batched: boolean) {
    const outcome = this.memory.apply(plan, t);
    const lease: HeldLease | undefined =
      outcome.allowed && outcome.lease ? { memory: outcome.lease } : undefined;
    // A batched store's scripts are loaded beforehand: its turn goes out whole.
    const sent = batched ? this.redis.apply(plan, t) : this.send(plan, t);
    const actual = sent.then((o) => {
      if (lease !== undefined && o.allowed) lease.redis = o.lease;
      return comparableOutcome(o);
    });
    const compared = this.compare(actual, comparableOutcome(outcome), t);
    if (!batched) await compared;
    return { outcome, lease };
  }

  /** Give back a lease on both once its decision is answered; the Redis release's promise. */
  async #giveBack(lease: HeldLease): Promise<void> {
    if (lease.redis === undefined) await this.settle();
    this.memory.release(lease.memory);
    return this.redis.release(lease.redis!);
  }

  /** Give back a held lease on both: still held, given back already, or expired. */
  give(pick: number): Promise<void> {
    const { held } = this;
    return held.length === 0 ? Promise.resolve() : this.#giveBack(held[pick % held.length]!);
  }

  #reset(step: ResetStep): Promise<unknown> {
    const [clientId, accountCode] = pairs[step.who]!;
    const { resource } = step;
    const target =
      resource === undefined ? { clientId, accountCode } : { clientId, accountCode, resource };
    this.memory.reset(target);
    return this.redis.reset(target);
  }

  /** Run steps one by one from `start`, each decision of `plan(step, i)`; then compare them all. */
  async run<S extends DecisionStep | ReleaseStep | ResetStep>(
    steps: readonly S[],
    plan: (step: Decisions<S>, i: number) => Plan,
    start: number,
  ): Promise<void> {
    let t = start;
    let retryAt: number | undefined;
    for (const step of steps) {
      if (isRelease(step)) await this.give(step.pick);
      else if (isReset(step)) await this.#reset(step);
      else {
        const s = step as Decisions<S>;
        t =
          s.retry !== undefined && retryAt !== undefined
            ? Math.max(t, retryAt + s.retry)
            : t + s.gap;
        for (let i = 0; i < (s.times ?? 1); i++) {
          const { outcome, lease } = await this.#decide(plan(s, i), t, false);
          if (!outcome.allowed) retryAt = t + outcome.retryAfterSeconds * 1000;
          if (lease !== undefined && s.release === true) await this.#giveBack(lease);
          else if (lease !== undefined) this.held.push(lease);
        }
      }
    }
    await this.settle();
  }

  /**
   * Run turns on a batched store from `start`: a turn's decisions, releases and resets in order,
   * none awaited before the next; then each decision compared, and the leases both took held for
   * the turns after.
   */
  async runTurns<S extends DecisionStep | ReleaseStep | ResetStep>(
    turns: Turns<S>,
    plan: (step: Decisions<S>) => Plan,
    start: number,
  ): Promise<void> {
    let t = start;
    for (const { pause, turn } of turns) {
      t += pause;
      const taken: Promise<{ lease: HeldLease | undefined }>[] = [];
      const others: Promise<unknown>[] = [];
      for (const step of turn) {
        if (isRelease(step)) others.push(this.give(step.pick));
        else if (isReset(step)) others.push(this.#reset(step));
        else {
          t += (step as Decisions<S>).gap;
          taken.push(this.#decide(plan(step as Decisions<S>), t, true));
        }
      }
      const leases = await Promise.all(taken);
      await this.settle();
      await Promise.all(others);
      for (const { lease } of leases) if (lease !== undefined) this.held.push(lease);
    }
  }
}

/** A decision of each limiter: the Redis one, and with `leases` both leases, once answered. */
export interface DecisionTwin {
  readonly expected: Decision;
  actual?: Decision;
  readonly memoryLease?: LeaseToken | undefined;
  redisLease?: LeaseToken | undefined;
}

/** A limiter on the memory store and one on a fresh Redis store, on one fake clock. */
export class LimiterTwins extends Compared {
  readonly clock: FakeClock;
  /** With `leases`: the decisions that took one, in order. */
  held: DecisionTwin[] = [];
  readonly #memory: Limiter<SyncLimitStore>;
  readonly #redis: Limiter<AsyncLimitStore>;
  #last: { memory?: LeaseToken | undefined; redis?: Promise<StoreOutcome> } = {};
  readonly #keeper: MemoryStore | undefined;

  constructor(
    redis: RedisStore,
    isNew: (plan: Plan) => boolean,
    preset: LimitPreset | AccountPresets,
    start: number,
    leases: boolean,
  ) {
    super(redis, isNew);
    this.clock = new FakeClock(start);
    const last = () => this.#last;
    // A limiter on a plain memory store reuses its plans: wrapped only when the leases are wanted.
    this.#keeper = leases ? new MemoryStore() : undefined;
    const keeper = this.#keeper;
    const memory: SyncLimitStore =
      keeper === undefined
        ? new MemoryStore()
        : {
            synchronous: true,
            apply(plan, now) {
              const outcome = keeper.apply(plan, now);
              last().memory = outcome.allowed ? outcome.lease : undefined;
              return outcome;
            },
            release: (lease) => keeper.release(lease),
            reset: (target) => keeper.reset(target),
          };
    const store: AsyncLimitStore = {
      synchronous: false,
      apply: (plan, now) => {
        const sent = this.send(plan, now);
        last().redis = sent;
        return sent;
      },
      release: (lease) => this.redis.release(lease),
      reset: (target) => this.redis.reset(target),
    };
    this.#memory = createLimiter({ preset, clock: this.clock, store: memory });
    this.#redis = createLimiter({ preset, clock: this.clock, store });
  }

  /** Check on both at the clock's time; the memory limiter's decision, the Redis one when answered. */
  check(request: LimitRequest, options?: CheckOptions): Promise<DecisionTwin> {
    this.#last = {};
    const expected = this.#memory.check(request, options);
    return this.#twin(expected, this.#redis.check(request, options));
  }

  /** Peek on both, as {@link LimiterTwins.check}. */
  peek(request: LimitRequest, options?: PeekOptions): Promise<DecisionTwin> {
    this.#last = {};
    const expected = this.#memory.peek(request, options);
    return this.#twin(expected, this.#redis.peek(request, options));
  }

  async #twin(expected: Decision, decided: Promise<Decision>): Promise<DecisionTwin> {
    const { memory, redis } = this.#last;
    const twin: DecisionTwin = { expected, memoryLease: memory };
    const actual = Promise.all([decided, redis]).then(([d, o]) => {
      twin.actual = d;
      twin.redisLease = o?.allowed ? o.lease : undefined;
      return comparable(d);
    });
    if (memory !== undefined) this.held.push(twin);
    await this.compare(actual, comparable(expected), this.clock.now());
    return twin;
  }

  /** Give back an admitted decision's leases on both through the decisions, not awaited. */
  async release(twin: DecisionTwin): Promise<void> {
    // A refusal holds nothing; the Redis decision is compared with it all the same.
    if (!twin.expected.allowed) return;
    if (twin.actual === undefined) await this.settle();
    twin.expected.release();
    if (twin.actual!.allowed) twin.actual!.release();
  }

  /**
   * A decision of {@link LimiterTwins.held}, `pick` modulo their number, once every decision is
   * answered (one the Redis store refused, or admitted without a lease, holds none).
   */
  async pick(pick: number): Promise<DecisionTwin | undefined> {
    await this.settle();
    this.held = this.held.filter((h) => h.redisLease !== undefined);
    return this.held.length === 0 ? undefined : this.held[pick % this.held.length];
  }

  /** Give back a held decision's leases on both stores directly; the Redis release's promise. */
  releaseLeases(twin: DecisionTwin): Promise<void> {
    this.#keeper!.release(twin.memoryLease!);
    return this.redis.release(twin.redisLease!);
  }

  /** Reset on both, awaited. */
  async reset(target: ResetRequest): Promise<void> {
    this.#memory.reset(target);
    await this.#redis.reset(target);
  }
}

/**
 * Connect both clients, for the file that calls it, to a database of the shared server of its own;
 * returns the makers of fresh Redis stores and of the twins the properties drive.
 */
export function equivalence() {
  let redis: SharedRedis;
  const clients = new Map<ClientKind, TestClient>();
  // By variant: the plan shapes whose scripts this file had the server load, and the warm-ups done.
  const known = new Map<Variant, Set<string>>(variants.map((v) => [v, new Set()]));
  const shapeOf = shapes();
  let run = 0;

  beforeAll(async () => {
    redis = await sharedRedis();
    for (const kind of clientKinds) clients.set(kind, await connect(kind, redis.port, redis.db));
  });

  afterAll(async () => {
    for (const c of clients.values()) await c.close();
    await redis.release();
  });

  /**
   * A store on a key prefix of its own, timed by the caller's clock; with `maxBatch`, sending the
   * decisions of one turn together. The first of a variant loads both scripts.
   */
  async function store(variant: Variant, maxBatch = 1): Promise<RedisStore> {
    const text = variant === 'ioredis, in text';
    const client = clients.get(text ? 'ioredis' : variant)!.client;
    const store = new RedisStore({
      client: text ? { ...client, binaryArguments: false, binaryReplies: false } : client,
      prefix: `eq${++run}:`,
      timeSource: 'clock',
      // Real time passes while the fake clock stands still: keep keys well past their horizon.
      expiryMarginMs: 600_000,
      timeoutMs: 10_000,
      maxBatch,
      onError: (error) => {
        throw error;
      },
    });
    // Both scripts loaded first, so that no NOSCRIPT fallback reorders a release and a decision.
    if (once(variant, 'both scripts')) {
      const warm: Plan = {
        scopes: [scope('warm', 'warm', '', [concurrency(1, { name: 'w' })], [0])],
      };
      const outcome = await store.apply(warm, 0);
      if (outcome.allowed && outcome.lease !== undefined) await store.release(outcome.lease);
    }
    return store;
  }

  /** Whether `name` is new for `variant` in this file (now it is not). */
  const once = (variant: Variant, name: string): boolean => {
    const done = known.get(variant)!;
    if (done.has(name)) return false;
    done.add(name);
    return true;
  };

  /** Whether a plan's shape is new to the server for `variant` (and now it is not). */
  const isNew = (variant: Variant) => (plan: Plan) => once(variant, shapeOf(plan));

  return {
    store,

    /** A memory store (a default one unless given) and a fresh Redis store of `variant`. */
    stores: async (variant: Variant, options: { maxBatch?: number; memory?: MemoryStore } = {}) =>
      new StoreTwins(
        await store(variant, options.maxBatch),
        isNew(variant),
        options.memory ?? new MemoryStore(),
      ),

    /** Limiters of `preset` on the memory store and a fresh Redis store, on a clock at `start`. */
    limiters: async (
      variant: Variant,
      preset: LimitPreset | AccountPresets,
      options: { start?: number; leases?: boolean } = {},
    ) =>
      new LimiterTwins(
        await store(variant),
        isNew(variant),
        preset,
        options.start ?? 1_000_000,
        options.leases === true,
      ),

    /**
     * Load the scripts of a batched store's plans, `plans` under each of `variants`, once per
     * variant in the file: four at once, to clients of their own, two alone (nothing, then one,
     * in Redis) and two together. A call sent again with EVAL after NOSCRIPT runs after the calls
     * sent meanwhile (docs/redis.md).
     */
    warm: async (
      variant: Variant,
      redis: RedisStore,
      plans: readonly Plan[],
      variants: readonly Pick<Plan, 'cost' | 'peek' | 'statuses'>[],
    ) => {
      if (!once(variant, `warm ${JSON.stringify([plans.map(shapeOf), variants])}`)) return;
      for (const [i, plan] of plans.entries()) {
        for (const v of variants) {
          const warm = [0, 1, 2, 3].map((w) => ({
            ...plan,
            ...v,
            scopes: plan.scopes.map((s) => ({
              ...s,
              clientId: `warm-${i}-${w}`,
              accountCode: 'warm',
            })),
          }));
          await Promise.all(warm.map((p) => redis.apply(p, 0)));
        }
      }
    },
  };
}
