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
  type CheckOptions,
  concurrency,
  createLimiter,
  type Decision,
  FakeClock,
  type LeaseToken,
  type LimitPreset,
  type LimitRequest,
  MemoryStore,
  type PeekOptions,
  type Plan,
  type PlanScope,
  type Policy,
  type ResetRequest,
  type StoreOutcome,
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
type ReleaseStep = { readonly kind: 'release'; readonly pick: number };

/** A step that resets a pair of {@link pairs}, or one resource of theirs. */
export const resetStep = (resources: readonly string[]) =>
  fc.record({
    kind: fc.constant('reset' as const),
    who,
    resource: fc.option(fc.constantFrom(...resources), { nil: undefined }),
  });
type ResetStep = {
  readonly kind: 'reset';
  readonly who: number;
  readonly resource?: string | undefined;
};

/**
 * A decision step: after `gap` ms, or with `retry` at that offset from the instant the latest
 * refusal announced (never back); `times` decisions at that instant, each lease given back at once
 * (awaited) with `release`, else held for the release steps.
 */
interface DecisionStep {
  readonly kind?: string;
  readonly gap: number;
  readonly retry?: number | undefined;
  readonly times?: number;
  readonly release?: boolean;
}
type Step = DecisionStep | ReleaseStep | ResetStep;
type Decisions<S> = Exclude<S, ReleaseStep | ResetStep>;

/** Turns of a batched store: a pause, then steps sent none awaited before the next. */
export const turnsOf = <S>(
  step: fc.Arbitrary<S>,
  max: Record<'pause' | 'steps' | 'turns', number>,
) =>
  fc.array(
    fc.record({
      pause: fc.integer({ min: 0, max: max.pause }),
      turn: fc.array(step, { minLength: 1, maxLength: max.steps }),
    }),
    { minLength: 1, maxLength: max.turns },
  );

/**
 * What the script of a plan depends on, told apart at least as finely as the store does: the
 * content of its policy lists, which scopes share a client and account, their resources, positions
 * and shadow marks, and the plan's variant.
 */
function shapes(): (plan: Plan) => string {
  const lists = new WeakMap<readonly Policy[], number>();
  const contents = new Map<string, number>();
  const listOf = (policies: readonly Policy[]): number => {
    let list = lists.get(policies);
    if (list === undefined) {
      const content = JSON.stringify(policies, (_, v: unknown) =>
        typeof v === 'number' ? `${v}` : v,
      );
      list = contents.get(content) ?? contents.size;
      contents.set(content, list);
      lists.set(policies, list);
    }
    return list;
  };
  return ({ peek, cost, statuses, shadow, scopes }) =>
    JSON.stringify([
      [peek === true, cost !== undefined && cost !== 1, statuses !== false, shadow === true],
      ...scopes.map((s) => [
        scopes.findIndex((o) => o.clientId === s.clientId && o.accountCode === s.accountCode),
        listOf(s.policies),
        s.state === undefined ? null : listOf(s.state),
        s.resource,
        s.active,
        s.shadow ?? null,
      ]),
    ]);
}

/** A decision of each limiter, the Redis one once answered. */
interface Twin {
  readonly expected: Decision;
  actual?: Decision;
}

/** A lease both sides took, the Redis one once answered; through the limiters, their decisions. */
interface Held extends Partial<Twin> {
  readonly memory: LeaseToken;
  redis?: LeaseToken | undefined;
}

/** What twins are made of besides the Redis store. */
export interface TwinsOptions {
  /** The memory store; a default one unless given. */
  readonly memory?: MemoryStore;
  /** The Redis store's; 1 unless given. */
  readonly maxBatch?: number;
  /** A limiter of `preset` on each store, on one fake clock at `start` (1,000,000 unless given). */
  readonly preset?: LimitPreset | AccountPresets;
  readonly start?: number;
  /** The memory limiter's store notes each lease (a limiter on the memory store itself reuses plans). */
  readonly leases?: boolean;
}

/** The memory store and a fresh Redis store driven alike, or a limiter on each; the leases both hold. */
export class Twins {
  readonly memory: MemoryStore;
  readonly clock: FakeClock;
  held: Held[] = [];
  readonly #limiters;
  readonly #once: (key: string) => boolean;
  readonly #shapeOf: (plan: Plan) => string;
  #queue: [Promise<unknown>, unknown, string][] = [];
  #fresh = false;
  #count = 0;
  /** The memory lease of the latest decision through the limiters, and the Redis reply. */
  #last: [LeaseToken | undefined, Promise<StoreOutcome> | undefined] = [undefined, undefined];

  /**
   * @param once - whether a key (a shape's) is new to the server for this variant; now it is not
   * @param shapeOf - the key of a plan's script
   */
  constructor(
    readonly redis: RedisStore,
    once: (key: string) => boolean,
    shapeOf: (plan: Plan) => string,
    { memory = new MemoryStore(), preset, start = 1_000_000, leases }: TwinsOptions,
  ) {
    this.#once = once;
    this.#shapeOf = shapeOf;
    this.memory = memory;
    const clock = new FakeClock(start);
    this.clock = clock;
    const last = this.#last;
    const noting = {
      synchronous: true as const,
      apply(plan: Plan, now: number) {
        const outcome = memory.apply(plan, now);
        last[0] = outcome.allowed ? outcome.lease : undefined;
        return outcome;
      },
      release: (lease: LeaseToken) => memory.release(lease),
    };
    const sending = {
      synchronous: false as const,
      apply: (plan: Plan, now: number) => (last[1] = this.#send(plan, now)),
      release: (lease: LeaseToken) => redis.release(lease),
      reset: redis.reset.bind(redis),
    };
    this.#limiters = preset && {
      memory: createLimiter({ preset, clock, store: leases === true ? noting : memory }),
      redis: createLimiter({ preset, clock, store: sending }),
    };
  }

  /** Send `plan` to the Redis store, noting a shape new to the server. */
  #send(plan: Plan, now: number): Promise<StoreOutcome> {
    if (this.#once(this.#shapeOf(plan))) this.#fresh = true;
    return this.redis.apply(plan, now);
  }

  /** Compare `actual` with `expected` when settled; settle at once after a new shape. */
  async #compare(actual: Promise<unknown>, expected: unknown, at: number): Promise<void> {
    // Awaited when settled; until then a failure must not count as unhandled.
    actual.catch(() => undefined);
    this.#queue.push([actual, expected, `decision ${++this.#count} at ${at}`]);
    if (this.#fresh) await this.settle();
  }

  /** Compare every decision sent so far (toEqual, without its cost when strictly deep-equal). */
  async settle(): Promise<void> {
    this.#fresh = false;
    for (const [actual, expected, what] of this.#queue.splice(0)) {
      const value = await actual;
      if (!isDeepStrictEqual(value, expected)) expect(value, what).toEqual(expected);
    }
  }

  /** Decide `plan` at `t` on both stores, nothing awaited but a new shape; the memory outcome. */
  async #decide(plan: Plan, t: number, batched = false) {
    const outcome = this.memory.apply(plan, t);
    const lease: Held | undefined =
      outcome.allowed && outcome.lease ? { memory: outcome.lease } : undefined;
    // A batched store's scripts are loaded beforehand: its turn goes out whole.
    const sent = batched ? this.redis.apply(plan, t) : this.#send(plan, t);
    const actual = sent.then((o) => {
      if (lease !== undefined && o.allowed) lease.redis = o.lease;
      return comparableOutcome(o);
    });
    const compared = this.#compare(actual, comparableOutcome(outcome), t);
    if (!batched) await compared;
    return { outcome, lease };
  }

  /**
   * A held lease, `pick` modulo their number, once every decision is answered (one the Redis
   * store refused, or admitted without a lease, holds none); undefined for none.
   */
  async pick(pick: number): Promise<Held | undefined> {
    await this.settle();
    this.held = this.held.filter((h) => h.redis !== undefined);
    return this.held.length === 0 ? undefined : this.held[pick % this.held.length];
  }

  /** Give back a held lease on both stores; the Redis release's promise. */
  releaseLeases(held: Held): Promise<void> {
    this.memory.release(held.memory);
    return this.redis.release(held.redis!);
  }

  /** Give back a held lease on both (still held, given back already, or expired), awaited. */
  async give(pick: number): Promise<void> {
    const held = this.held.length === 0 ? undefined : await this.pick(pick);
    if (held !== undefined) await this.releaseLeases(held);
  }

  #reset({ who, resource }: ResetStep): Promise<unknown> {
    const [clientId, accountCode] = pairs[who]!;
    const target =
      resource === undefined ? { clientId, accountCode } : { clientId, accountCode, resource };
    this.memory.reset(target);
    return this.redis.reset(target);
  }

  /** Run steps one by one from `start`, each decision of `plan(step, i)`; then compare them all. */
  async run<S extends Step>(
    steps: readonly S[],
    plan: (step: Decisions<S>, i: number) => Plan,
    start: number,
  ): Promise<void> {
    let t = start;
    let retryAt: number | undefined;
    for (const step of steps) {
      if (step.kind === 'release') await this.give((step as ReleaseStep).pick);
      else if (step.kind === 'reset') await this.#reset(step as ResetStep);
      else {
        const s = step as Decisions<S>;
        t =
          s.retry !== undefined && retryAt !== undefined
            ? Math.max(t, retryAt + s.retry)
            : t + s.gap;
        for (let i = 0; i < (s.times ?? 1); i++) {
          const { outcome, lease } = await this.#decide(plan(s, i), t);
          if (!outcome.allowed) retryAt = t + outcome.retryAfterSeconds * 1000;
          if (lease !== undefined && s.release !== true) this.held.push(lease);
          else if (lease !== undefined) {
            await this.settle();
            await this.releaseLeases(lease);
          }
        }
      }
    }
    await this.settle();
  }

  /**
   * Run turns on a batched store from `start`: a turn's decisions, releases and resets in order,
   * none awaited before the next; then each decision compared, and the leases both took held for
   * the turns after (a release gives back one still held, given back already, or expired).
   */
  async runTurns<S extends Step>(
    turns: readonly { readonly pause: number; readonly turn: readonly S[] }[],
    plan: (step: Decisions<S>) => Plan,
    start: number,
  ): Promise<void> {
    let t = start;
    for (const { pause, turn } of turns) {
      t += pause;
      const taken: Promise<{ lease: Held | undefined }>[] = [];
      const others: Promise<unknown>[] = [];
      for (const step of turn) {
        if (step.kind === 'reset') others.push(this.#reset(step as ResetStep));
        else if (step.kind !== 'release') {
          t += (step as Decisions<S>).gap;
          taken.push(this.#decide(plan(step as Decisions<S>), t, true));
        } else if (this.held.length > 0) {
          const { pick } = step as ReleaseStep;
          others.push(this.releaseLeases(this.held[pick % this.held.length]!));
        }
      }
      const leases = await Promise.all(taken);
      await this.settle();
      await Promise.all(others);
      for (const { lease } of leases) if (lease !== undefined) this.held.push(lease);
    }
  }

  /**
   * Check (or peek) on both limiters at the clock's time: the memory limiter's decision, and the
   * Redis one once answered. With `leases`, an admission that took one is held.
   */
  async check(
    request: LimitRequest,
    options?: CheckOptions | PeekOptions,
    verb: 'check' | 'peek' = 'check',
  ): Promise<Twin> {
    const limiters = this.#limiters!;
    this.#last.fill(undefined);
    const expected = limiters.memory[verb](request, options);
    const decided = limiters.redis[verb](request, options);
    const [memory, sent] = this.#last;
    const twin: Twin & Partial<Held> = memory === undefined ? { expected } : { memory, expected };
    if (memory !== undefined) this.held.push(twin as Held);
    const actual = Promise.all([decided, sent]).then(([d, o]) => {
      twin.actual = d;
      twin.redis = o?.allowed ? o.lease : undefined;
      return comparable(d);
    });
    await this.#compare(actual, comparable(expected), this.clock.now());
    return twin;
  }

  /** Give back an admitted decision's leases on both through the decisions, not awaited. */
  async release(twin: Partial<Twin>): Promise<void> {
    // A refusal holds nothing; the Redis decision is compared with it all the same.
    if (!twin.expected!.allowed) return;
    if (twin.actual === undefined) await this.settle();
    twin.expected!.release();
    if (twin.actual!.allowed) twin.actual!.release();
  }

  /** Reset on both limiters, awaited. */
  async reset(target: ResetRequest): Promise<void> {
    this.#limiters!.memory.reset(target);
    await this.#limiters!.redis.reset(target);
  }

  /**
   * Load the scripts of a batched store's plans, `plans` under each of `variants`, once per file
   * and variant: four at once, to clients of their own, two alone (nothing, then one, in Redis) and
   * two together. A call sent again with EVAL after NOSCRIPT runs after the calls sent meanwhile.
   */
  async warm(
    plans: readonly Plan[],
    variants: readonly Pick<Plan, 'cost' | 'peek' | 'statuses'>[],
  ) {
    for (const [i, plan] of plans.entries()) {
      for (const variant of variants) {
        const group = [0, 1, 2, 3].map((w) => ({
          ...plan,
          ...variant,
          scopes: plan.scopes.map((s) => ({
            ...s,
            clientId: `warm-${i}-${w}`,
            accountCode: 'warm',
          })),
        }));
        if (!this.#once(`batched ${this.#shapeOf(group[0]!)}`)) continue;
        await Promise.all(group.map((p) => this.redis.apply(p, 0)));
      }
    }
  }
}

/**
 * Connect both clients, for the file that calls it, to a database of the shared server of its own;
 * returns the makers of fresh Redis stores, and of twins on them.
 */
export function equivalence() {
  let redis: SharedRedis;
  const clients = new Map<ClientKind, TestClient>();
  // The scripts this file had the server load, by variant: both fixed ones, and plan shapes.
  const known = new Set<string>();
  const once = (variant: Variant) => (key: string) =>
    known.size < known.add(`${variant}: ${key}`).size;
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
   * decisions of one turn together.
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
    if (once(variant)('both scripts')) {
      const warm: Plan = {
        scopes: [scope('warm', 'warm', '', [concurrency(1, { name: 'w' })], [0])],
      };
      const outcome = await store.apply(warm, 0);
      if (outcome.allowed && outcome.lease !== undefined) await store.release(outcome.lease);
    }
    return store;
  }

  /** The memory store and a fresh Redis store of `variant`, or a limiter on each. */
  const twins = async (variant: Variant, options: TwinsOptions = {}) =>
    new Twins(await store(variant, options.maxBatch), once(variant), shapeOf, options);

  return { store, twins };
}
