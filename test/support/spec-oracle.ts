/**
 * An oracle of the limits written from the specification's sentences (Limits; Errors, "Rate limit
 * exceeded") and the block rule of docs/limits.md, apart from the library: it imports nothing from
 * src/, and reads routes with its own patterns. Times are whole milliseconds and every sum is of
 * whole numbers, so each comparison is exact. Numbers the specification does not give (the
 * throttle's size, its lease lifetime, the average rate as a token bucket) are the documented
 * defaults of docs/limits.md.
 */

/** At most `limit` admissions in any half-open interval `[s, s + windowMs)`. */
export interface SpecWindow {
  readonly kind: 'window';
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * An average rate with bursts: a bucket of `burst` tokens, refilled at `perSecond` tokens a second
 * (a whole number here, so that the oracle's arithmetic stays exact); a request takes one token.
 */
export interface SpecAverage {
  readonly kind: 'average';
  readonly perSecond: number;
  readonly burst: number;
}

/**
 * At most `max` requests in flight; a request holds its place until it ends or `leaseTtlMs` have
 * passed. A refusal recommends `backoffMs` ("the recommended backoff ... is one second").
 */
export interface SpecConcurrent {
  readonly kind: 'concurrent';
  readonly max: number;
  readonly backoffMs: number;
  readonly leaseTtlMs: number;
}

export type SpecLimit = SpecWindow | SpecAverage | SpecConcurrent;

/** An endpoint with resource limits: its method, its path (version segment `v*`), its limits. */
export interface SpecResourceRow {
  readonly method: string;
  /** The path with `v*` for the version segment and `{id}` for the resource id, if any. */
  readonly path: string;
  readonly limits: readonly SpecLimit[];
}

/** The limits of one kind of account. */
export interface SpecAccount {
  readonly global: readonly SpecLimit[];
  readonly throttle: SpecConcurrent;
  /** Routes (method and `v*` path) the throttle does not apply to. */
  readonly exempt: readonly string[];
  readonly resources: readonly SpecResourceRow[];
}

const minutes = (n: number) => n * 60_000;
const throttle = (max: number): SpecConcurrent => ({
  kind: 'concurrent',
  max,
  backoffMs: 1_000,
  leaseTtlMs: 60_000,
});
const row = (method: string, path: string, ...limits: SpecWindow[]): SpecResourceRow => ({
  method,
  path,
  limits,
});
const per = (limit: number, windowMs: number): SpecWindow => ({ kind: 'window', limit, windowMs });

/**
 * Live: "3500 requests per minute in total, 100 requests per second on average, bursts up to 200
 * requests per second"; the business-critical offers calls are not throttled; the Live table.
 */
export const SPEC_LIVE: SpecAccount = {
  global: [
    per(200, 1_000),
    { kind: 'average', perSecond: 100, burst: 200 },
    per(3_500, minutes(1)),
  ],
  throttle: throttle(20),
  exempt: [
    'GET /booking/v*/offers',
    'GET /booking/v*/rate-plan-offers',
    'GET /booking/v*/service-offers',
    'GET /booking/v*/reservations/{id}/offers',
    'GET /booking/v*/reservations/{id}/service-offers',
  ],
  resources: [
    row('PUT', '/rateplan/v*/rate-plans/{id}/rates', per(150, minutes(60)), per(50, minutes(20))),
    row('PATCH', '/rateplan/v*/rates', per(200, minutes(1))),
    row('PATCH', '/booking/v*/bookings/{id}', per(20, minutes(5))),
    row('PATCH', '/booking/v*/reservations/{id}', per(20, minutes(5))),
  ],
};

/**
 * Development and Trial: "5 requests per second in total and 200 requests per minute in total. All
 * endpoints are throttled there, with no exceptions"; the Development and Trial table.
 */
export const SPEC_DEVELOPMENT: SpecAccount = {
  global: [per(5, 1_000), per(200, minutes(1))],
  throttle: throttle(5),
  exempt: [],
  resources: [
    row('PUT', '/rateplan/v*/rate-plans/{id}/rates', per(30, minutes(60)), per(10, minutes(20))),
    row('PATCH', '/rateplan/v*/rates', per(50, minutes(1))),
    row('PATCH', '/booking/v*/bookings/{id}', per(5, minutes(5))),
    row('PATCH', '/booking/v*/reservations/{id}', per(5, minutes(5))),
  ],
};

/** What the oracle answers for one request. */
export interface SpecDecision {
  readonly allowed: boolean;
  /** Whole seconds, for a refusal. */
  readonly retryAfterSeconds: number | undefined;
  /** `'blocked'`: refused before the instant an earlier refusal announced; `'limit'`: otherwise. */
  readonly reason: 'limit' | 'blocked' | undefined;
  /** The oracle's handle on the request's place in flight, when the throttle applies. */
  readonly lease: number | undefined;
}

/** A wait of `num / den` ms, exact. */
interface Wait {
  readonly num: number;
  readonly den: number;
}

/** One counter: a limit of the client and account as a whole, or of one of their resources. */
interface Counter {
  readonly id: string;
  readonly limit: SpecLimit;
}

/** `v*` and `{id}` patterns as regular expressions; `{id}` is captured. */
function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) =>
      segment === 'v*'
        ? 'v[^/]*'
        : segment === '{id}'
          ? '([^/]+)'
          : segment.replace(/[-.]/g, '\\$&'),
    )
    .join('/');
  return new RegExp(`^${source}$`);
}

/** `ceil(a / b)` of whole numbers `a >= 0`, `b > 0`, in whole-number arithmetic. */
function ceilDiv(a: number, b: number): number {
  return (a - (a % b)) / b + (a % b > 0 ? 1 : 0);
}

/**
 * The limits of one client and account of one kind, as the specification states them, with the
 * block rule: a refusal outside a block announces `R = max(1, ceil(seconds to the earliest
 * admission))` and blocks the limits that refused until `now + R`; a request before then under a
 * blocked limit is refused, counts nowhere, changes nothing and answers `ceil((B - t) / 1 s)`; from
 * then on it is decided afresh.
 */
export class SpecOracle {
  /** Admission times of each window counter. */
  readonly #admissions = new Map<string, number[]>();
  /** Tokens of each average counter, in thousandths, and when they were counted. */
  readonly #buckets = new Map<string, { milli: number; at: number }>();
  /** Places in flight of each concurrent counter. */
  readonly #inFlight = new Map<string, Array<{ lease: number; expiry: number }>>();
  /** The instant each blocked counter is blocked until. */
  readonly #blocks = new Map<string, number>();
  readonly #exempt: ReadonlyArray<{ method: string; pattern: RegExp }>;
  readonly #resources: ReadonlyArray<{ method: string; pattern: RegExp; row: SpecResourceRow }>;
  #nextLease = 1;
  /** Limits set by {@link limits}, in force from the next decision. */
  #next: SpecAccount | undefined;

  constructor(public account: SpecAccount) {
    for (const limit of [...account.global, ...account.resources.flatMap((r) => r.limits)]) {
      if (limit.kind === 'average' && !Number.isInteger(limit.perSecond)) {
        throw new Error('the oracle counts whole rates per second only');
      }
    }
    this.#exempt = account.exempt.map((route) => {
      const [method, path] = route.split(' ') as [string, string];
      return { method, pattern: patternOf(path) };
    });
    this.#resources = account.resources.map((r) => ({
      method: r.method,
      pattern: patternOf(r.path),
      row: r,
    }));
  }

  /** The counters a request counts towards: global, the throttle unless exempt, its resource's. */
  counters(method: string, path: string): Counter[] {
    const counters: Counter[] = this.account.global.map((limit, i) => ({
      id: `global ${i}`,
      limit,
    }));
    if (!this.#exempt.some((e) => e.method === method && e.pattern.test(path))) {
      counters.push({ id: 'throttle', limit: this.account.throttle });
    }
    for (const { method: m, pattern, row: r } of this.#resources) {
      const match = m === method ? pattern.exec(path) : null;
      if (match === null) continue;
      // Version segments share one counter: the key is the row and the id, never the version.
      const key = `${r.method} ${r.path} ${match[1] ?? ''}`;
      for (const [i, limit] of r.limits.entries()) counters.push({ id: `${key} ${i}`, limit });
    }
    return counters;
  }

  /**
   * Decide a request at `t` (whole ms, never earlier than the last). Each of its limits: blocked,
   * it admits at its block's end, announced earlier, and the block stays; otherwise at its own
   * earliest admission. Refused when any admits later than now: the answer is the latest of those
   * instants in whole seconds, and every limit without room and without a block is blocked until
   * the instant announced (for a request under no block, that is the first sentence of the rule;
   * under one, the second, which also keeps the retry it announces clear of the limits not yet
   * blocked).
   *
   * A request of `cost` n is read as n requests that arrive at once and are decided together:
   * "every request that returns a status other than 429 counts", so all n count or none (a 429
   * counts nowhere), and it waits until the limits have room for all n. The throttle ("the number
   * of active requests at a given time") counts it once: it is one request in flight.
   */
  decide(method: string, path: string, t: number, cost = 1): SpecDecision {
    if (!Number.isInteger(t)) throw new Error('the oracle counts whole milliseconds only');
    this.#settle(t);
    const counters = this.counters(method, path);
    const blocks = counters.map(({ id }) => this.#blocks.get(id) ?? t);
    const waits = counters.map(({ id, limit }) => this.#wait(id, limit, t, cost));
    const blocked = blocks.some((b) => b > t);
    // The wait of each limit, in whole seconds rounded up: `ceil(max) = max(ceil)`. A blocked
    // limit waits for its block's end, or longer for n requests that need more room than the one
    // the block was announced for (the same request must be admitted when told).
    const seconds = counters.map((_, i) => {
      const own = ceilDiv(waits[i]!.num, waits[i]!.den * 1_000);
      return blocks[i]! > t ? Math.max(ceilDiv(blocks[i]! - t, 1_000), own) : own;
    });
    if (!blocked && waits.every((w) => w.num === 0)) return this.#admit(counters, t, cost);
    const announced = Math.max(1, ...seconds);
    for (const [i, { id }] of counters.entries()) {
      if (!(blocks[i]! > t) && waits[i]!.num > 0) this.#blocks.set(id, t + announced * 1_000);
    }
    return {
      allowed: false,
      retryAfterSeconds: announced,
      reason: blocked ? 'blocked' : 'limit',
      lease: undefined,
    };
  }

  /**
   * Forget every counter, lease and block of the client and account, or with a request, those of
   * the resource it names: they start afresh.
   */
  reset(method?: string, path?: string): void {
    const maps = [this.#admissions, this.#buckets, this.#inFlight, this.#blocks];
    if (method === undefined || path === undefined) {
      for (const map of maps) map.clear();
      return;
    }
    for (const { id } of this.counters(method, path)) {
      if (id === 'throttle' || id.startsWith('global ')) continue;
      for (const map of maps) map.delete(id);
    }
  }

  /**
   * From the next decision on, the limits are `account`'s (an override of the client's limits):
   * what each limit has counted stays counted (admissions in a window, tokens taken from the
   * bucket and not yet back, places in flight, blocks), and is decided under the new numbers; the
   * tokens taken carry over at that decision.
   */
  limits(account: SpecAccount): void {
    this.#next = account;
  }

  /** The limits in force at `t`: a change waiting since the last decision takes effect now. */
  #settle(t: number): void {
    const next = this.#next;
    if (next === undefined) return;
    this.#next = undefined;
    const before = this.account;
    for (const id of this.#buckets.keys()) {
      const i = Number(id.slice('global '.length));
      const old = before.global[i];
      const now = next.global[i];
      if (old?.kind !== 'average' || now?.kind !== 'average') continue;
      // Tokens taken and not yet back stay taken: the bucket holds as many fewer as before.
      const taken = old.burst * 1_000 - this.#tokens(id, old, t);
      this.#buckets.set(id, { milli: now.burst * 1_000 - taken, at: t });
    }
    this.account = next;
  }

  /** The request that held `lease` ended. */
  release(lease: number): void {
    for (const held of this.#inFlight.values()) {
      const i = held.findIndex((h) => h.lease === lease);
      if (i !== -1) held.splice(i, 1);
    }
  }

  /** How long until the counter admits `n` more requests at once, if nothing else arrives. */
  #wait(id: string, limit: SpecLimit, t: number, n: number): Wait {
    switch (limit.kind) {
      case 'window': {
        // Admissions at `a` lie in every interval [s, s + W) with s <= a < s + W; at `t` those with
        // a + W > t still share one with the request. Room for n once all but limit - n have left.
        const inside = (this.#admissions.get(id) ?? []).filter((a) => a + limit.windowMs > t);
        if (inside.length + n <= limit.limit) return { num: 0, den: 1 };
        return { num: inside[inside.length - limit.limit + n - 1]! + limit.windowMs - t, den: 1 };
      }
      case 'average': {
        const milli = this.#tokens(id, limit, t);
        // One token is 1000 thousandths; `perSecond` thousandths come back each ms.
        const needed = n * 1_000;
        return milli >= needed ? { num: 0, den: 1 } : { num: needed - milli, den: limit.perSecond };
      }
      case 'concurrent': {
        const live = this.#live(id, t);
        return live.length < limit.max ? { num: 0, den: 1 } : { num: limit.backoffMs, den: 1 };
      }
    }
  }

  #admit(counters: readonly Counter[], t: number, n: number): SpecDecision {
    let lease: number | undefined;
    for (const { id, limit } of counters) {
      if (limit.kind === 'window') {
        const times = Array.from({ length: n }, () => t);
        this.#admissions.set(id, [...(this.#admissions.get(id) ?? []), ...times]);
      } else if (limit.kind === 'average') {
        this.#buckets.set(id, { milli: this.#tokens(id, limit, t) - n * 1_000, at: t });
      } else {
        lease ??= this.#nextLease++;
        this.#inFlight.set(id, [...this.#live(id, t), { lease, expiry: t + limit.leaseTtlMs }]);
      }
    }
    return { allowed: true, retryAfterSeconds: undefined, reason: undefined, lease };
  }

  #tokens(id: string, limit: SpecAverage, t: number): number {
    const bucket = this.#buckets.get(id);
    const full = limit.burst * 1_000;
    if (bucket === undefined) return full;
    return Math.min(full, bucket.milli + (t - bucket.at) * limit.perSecond);
  }

  #live(id: string, t: number): Array<{ lease: number; expiry: number }> {
    return (this.#inFlight.get(id) ?? []).filter((h) => h.expiry > t);
  }
}
