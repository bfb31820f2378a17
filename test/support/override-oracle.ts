/**
 * A reference for one scope whose limits may be overridden from decision to decision, written
 * from the contract of PlanScope.state (src/limits/store.ts) and the decision rules of docs/limits.md, for
 * obviousness rather than speed and sharing no code with the stores: state is kept per position of
 * the list, whichever list decides; windows keep every admission time and count those inside;
 * the rate is GCRA on a theoretical arrival time carried over to each new emission interval;
 * throttles count live leases; a refusal blocks each full policy until the instant it announces.
 */
import type { Policy } from './oracle.js';

const STEPS_PER_MS = 1024;

/** A rate policy's emission interval (ms), rounded up to a step of 1/1024 ms. */
function interval(p: { perSecond: number }): number {
  return Math.max(1, Math.ceil((1000 * STEPS_PER_MS) / p.perSecond)) / STEPS_PER_MS;
}

/** What the oracle answers: the decision and each position's remaining and reset-after (ms). */
export interface OverrideDecision {
  allowed: boolean;
  reason: 'limit' | 'blocked' | undefined;
  retryAfterSeconds: number | undefined;
  policy: string | undefined;
  values: number[];
  leaseId: number | undefined;
}

export class OverrideOracle {
  readonly #admissions: number[][];
  readonly #tat: number[];
  /** The emission interval each rate position last decided under (undefined before any). */
  readonly #intervals: (number | undefined)[];
  readonly #leases: { id: number; expiry: number }[][];
  readonly #blocked: number[];
  #nextLease = 1;

  constructor(size: number) {
    this.#admissions = Array.from({ length: size }, () => []);
    this.#tat = new Array<number>(size).fill(0);
    this.#intervals = new Array<number | undefined>(size).fill(undefined);
    this.#leases = Array.from({ length: size }, () => []);
    this.#blocked = new Array<number>(size).fill(0);
  }

  /** Decide a request of `cost` under `list` at `t`; a peek records nothing. */
  decide(list: readonly Policy[], t: number, peek: boolean, cost = 1): OverrideDecision {
    const tat = this.#carried(list, t, peek);
    const owns = list.map((p, i) => this.#own(p, i, t, tat[i]!, cost));
    let latest = t;
    let latestOwn = t;
    let refusing: number | undefined;
    let blocked = false;
    for (const [i, own] of owns.entries()) {
      const until = this.#blocked[i]!;
      if (until > t) blocked = true;
      // Blocked, a limit admits at its block's end, or later when its own limit needs more room
      // (a cost above one; a window or rate lowered since the block): the Retry-After returned is
      // "the number of seconds the client waits before the next request" (Errors, "Rate limit
      // exceeded"), so a retry at the time it announces is admitted. A throttle's own time is its
      // configured answer, not when a place frees up: its block alone counts for one request.
      const later = own > until && (cost > 1 || list[i]!.kind !== 'concurrency');
      const at = until > t && !later ? until : own;
      if (at > t && (at > latest || (at === latest && own >= latestOwn))) {
        latest = at;
        latestOwn = own;
        refusing = i;
      }
    }
    if (refusing !== undefined) {
      const seconds = announced(latest, t);
      const values = this.#values(list, t, tat);
      if (!peek) {
        for (const [i, own] of owns.entries()) {
          if (own > t && !(this.#blocked[i]! > t)) this.#blocked[i] = t + seconds * 1000;
        }
      }
      return {
        allowed: false,
        reason: blocked ? 'blocked' : 'limit',
        retryAfterSeconds: seconds,
        policy: list[refusing]!.name,
        values,
        leaseId: undefined,
      };
    }
    if (peek) {
      return {
        allowed: true,
        reason: undefined,
        retryAfterSeconds: undefined,
        policy: undefined,
        values: this.#values(list, t, tat),
        leaseId: undefined,
      };
    }
    let leaseId: number | undefined;
    for (const [i, p] of list.entries()) {
      if (p.kind === 'window') for (let c = 0; c < cost; c++) this.#admissions[i]!.push(t);
      else if (p.kind === 'rate') this.#tat[i] = Math.max(this.#tat[i]!, t) + cost * interval(p);
      else {
        leaseId ??= this.#nextLease++;
        this.#leases[i]!.push({ id: leaseId, expiry: t + p.leaseTtlMs });
      }
    }
    return {
      allowed: true,
      reason: undefined,
      retryAfterSeconds: undefined,
      policy: undefined,
      values: this.#values(list, t, this.#tat),
      leaseId,
    };
  }

  /** Give back lease `id` wherever it is held. */
  release(id: number): void {
    for (const held of this.#leases) {
      const i = held.findIndex((l) => l.id === id);
      if (i !== -1) held.splice(i, 1);
    }
  }

  /**
   * Each rate position's theoretical arrival time under `list` at `t`: a backlog left under
   * another emission interval keeps its length in admissions, rounded up to a step. Kept unless
   * `peek`.
   */
  #carried(list: readonly Policy[], t: number, peek: boolean): number[] {
    return list.map((p, i) => {
      let tat = this.#tat[i]!;
      if (p.kind !== 'rate') return tat;
      const previous = this.#intervals[i];
      const next = interval(p);
      if (previous !== undefined && previous !== next && tat > t) {
        tat = t + Math.ceil(((tat - t) / previous) * next * STEPS_PER_MS) / STEPS_PER_MS;
      }
      if (!peek) {
        this.#tat[i] = tat;
        this.#intervals[i] = next;
      }
      return tat;
    });
  }

  #inside(i: number, windowMs: number, t: number): number[] {
    return this.#admissions[i]!.filter((a) => a + windowMs > t);
  }

  #live(i: number, t: number): number {
    return this.#leases[i]!.filter((l) => l.expiry > t).length;
  }

  /** When position `i` could take `cost` more under `p`, blocks aside. */
  #own(p: Policy, i: number, t: number, tat: number, cost: number): number {
    switch (p.kind) {
      case 'window': {
        const inside = this.#inside(i, p.windowMs, t);
        // Enough must leave for `cost` more: the one that keeps it too full, oldest first.
        const leave = inside.length + cost - p.limit;
        return leave <= 0 ? t : inside[leave - 1]! + p.windowMs;
      }
      case 'rate':
        // GCRA: `cost` at once pass when the last of them is within the burst.
        return Math.max(t, tat - (p.burst - cost) * interval(p));
      case 'concurrency':
        return this.#live(i, t) < p.max ? t : t + p.retryAfterMs;
    }
  }

  /** Remaining and reset-after of every position, interleaved. */
  #values(list: readonly Policy[], t: number, tat: readonly number[]): number[] {
    return list.flatMap((p, i) => {
      if (p.kind === 'window') {
        const inside = this.#inside(i, p.windowMs, t);
        const newest = inside[inside.length - 1];
        return [
          Math.max(0, p.limit - inside.length),
          newest === undefined ? 0 : Math.max(0, newest + p.windowMs - t),
        ];
      }
      if (p.kind === 'rate') {
        const backlog = Math.max(0, tat[i]! - t);
        const remaining = Math.min(p.burst, p.burst - Math.ceil(backlog / interval(p)));
        return [Math.max(0, remaining), backlog];
      }
      return [Math.max(0, p.max - this.#live(i, t)), 0];
    });
  }
}

/** The least whole seconds `R >= 1` whose instant `t + R * 1000` is not before `at`. */
function announced(at: number, t: number): number {
  let r = 1;
  while (t + r * 1000 < at) r++;
  return r;
}
