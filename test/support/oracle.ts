/**
 * The exact reference for the limit engine, written for obviousness rather than speed: every
 * admission time is kept for ever, windows are counted by filtering, the rate policy is a token
 * bucket with continuous refill (an independent formulation of GCRA), and the decision rules of
 * docs/limits.md (all or nothing, truthful Retry-After, a block that stays at the instant it announced)
 * are spelled out once more. (test/support/spec-oracle.ts is the specification's oracle, apart from
 * src/ altogether.)
 */
/**
 * A policy as the oracle reads it: the fields docs/limits.md gives each kind, declared here so that the
 * oracle shares no code with the library (its policies fit this shape).
 */
export type Policy =
  | {
      readonly kind: 'window';
      readonly name: string;
      readonly limit: number;
      readonly windowMs: number;
    }
  | {
      readonly kind: 'rate';
      readonly name: string;
      readonly perSecond: number;
      readonly burst: number;
    }
  | {
      readonly kind: 'concurrency';
      readonly name: string;
      readonly max: number;
      readonly leaseTtlMs: number;
      readonly retryAfterMs: number;
    };

export interface OracleDecision {
  allowed: boolean;
  retryAfterSeconds: number | undefined;
  policy: string | undefined;
  leaseId: number | undefined;
}

/**
 * Whole seconds to announce at `t` for an admission at `at`: the least `R >= 1` whose instant
 * `t + R * 1000` is not before `at`.
 */
const seconds = (at: number, t: number): number => {
  let r = 1;
  while (t + r * 1000 < at) r++;
  return r;
};

/**
 * The stores' documented time resolution (docs/limits.md): times and a rate's emission interval
 * (`1000 / perSecond` ms) are taken in steps of 1/1024 ms, the interval rounded up to a step.
 */
const STEPS_PER_MS = 1024;
const stepsPerToken = (p: { perSecond: number }): number =>
  Math.max(1, Math.ceil((1000 * STEPS_PER_MS) / p.perSecond));

/** A refusal the oracle would make: its policy, Retry-After and reason. */
export interface OracleRefusal {
  policy: string;
  retryAfterSeconds: number;
  reason: 'limit' | 'blocked';
}

/** One policy as the oracle counts it: `id` names its counter (a policy in a scope). */
export interface OracleEntry {
  id: string;
  policy: Policy;
}

export class ExactOracle {
  readonly admissions = new Map<string, number[]>();
  readonly tokens = new Map<string, { tokens: number; at: number }>();
  readonly leases = new Map<string, Array<{ id: number; expiry: number }>>();
  readonly blockedUntil = new Map<string, number>();
  #nextLease = 1;

  constructor(readonly policies: readonly Policy[] = []) {}

  /** When could policy `p`, counted as `id`, admit one more request, if nothing else happened? */
  ownEarliest(id: string, p: Policy, t: number): number {
    switch (p.kind) {
      case 'window': {
        const inside = (this.admissions.get(id) ?? []).filter((a) => a + p.windowMs > t && a <= t);
        if (inside.length < p.limit) return t;
        return inside[inside.length - p.limit]! + p.windowMs;
      }
      case 'rate': {
        // In steps of 1/1024 ms: a token is `interval` steps, and a step comes back each step.
        const steps = this.#tokensAt(id, p, t);
        const interval = stepsPerToken(p);
        if (steps >= interval) return t;
        return t + (interval - steps) / STEPS_PER_MS;
      }
      case 'concurrency': {
        const live = (this.leases.get(id) ?? []).filter((l) => l.expiry > t);
        return live.length < p.max ? t : t + p.retryAfterMs;
      }
    }
  }

  /**
   * What policy `p`, counted as `id`, would still admit at once at `t`, and the ms until its full
   * quota is back (a decision's statuses). Reads the state only; decides nothing.
   */
  status(id: string, p: Policy, t: number): { remaining: number; resetAfterMs: number } {
    switch (p.kind) {
      case 'window': {
        const inside = (this.admissions.get(id) ?? []).filter((a) => a + p.windowMs > t && a <= t);
        const newest = inside[inside.length - 1];
        return {
          remaining: Math.max(0, p.limit - inside.length),
          resetAfterMs: newest === undefined ? 0 : Math.max(0, newest + p.windowMs - t),
        };
      }
      case 'rate': {
        const steps = this.#tokensAt(id, p, t);
        const interval = stepsPerToken(p);
        return {
          remaining: Math.max(0, Math.min(p.burst, Math.floor(steps / interval))),
          resetAfterMs: (p.burst * interval - steps) / STEPS_PER_MS,
        };
      }
      case 'concurrency': {
        const live = (this.leases.get(id) ?? []).filter((l) => l.expiry > t);
        return { remaining: Math.max(0, p.max - live.length), resetAfterMs: 0 };
      }
    }
  }

  /** The bucket's content at `t`, in steps (whole numbers for times on the grid). */
  #tokensAt(id: string, p: Extract<Policy, { kind: 'rate' }>, t: number): number {
    const bucket = this.tokens.get(id);
    const full = p.burst * stepsPerToken(p);
    if (bucket === undefined) return full;
    return Math.min(full, bucket.tokens + (t - bucket.at) * STEPS_PER_MS);
  }

  /** Decide with the oracle's own policies, each counted under its name. */
  decide(t: number, active: readonly Policy[] = this.policies): OracleDecision {
    return this.decideEntries(
      t,
      active.map((policy) => ({ id: policy.name, policy })),
    );
  }

  /**
   * Decide a request that several counters apply to (global and resource scopes). A blocked
   * counter frees up when its block ends, and the block stays; a counter without room and without
   * a block is blocked until the instant the refusal announces.
   */
  decideEntries(t: number, entries: readonly OracleEntry[]): OracleDecision {
    return this.decideShadow(t, entries, () => false);
  }

  /**
   * Shadow mode: only the entries `shadow` does not pick may refuse (their blocks as
   * decideEntries sets them; a shadow entry is never blocked). Admitted, every entry records the
   * request, and `shadow` says what decideEntries would have answered with every entry enforcing
   * (nothing changed but the admission).
   */
  decideShadow(
    t: number,
    entries: readonly OracleEntry[],
    shadow: (entry: OracleEntry) => boolean,
  ): OracleDecision & { shadow?: OracleRefusal } {
    const owns = entries.map(({ id, policy }) => this.ownEarliest(id, policy, t));
    const enforcing = this.#refusal(t, entries, owns, (e) => !shadow(e));
    if (enforcing !== undefined) {
      const r = enforcing.retryAfterSeconds;
      for (const [i, entry] of entries.entries()) {
        if (shadow(entry)) continue;
        if (owns[i]! > t && !((this.blockedUntil.get(entry.id) ?? 0) > t)) {
          this.blockedUntil.set(entry.id, t + r * 1000);
        }
      }
      return { allowed: false, retryAfterSeconds: r, policy: enforcing.policy, leaseId: undefined };
    }
    const escaped = this.#refusal(t, entries, owns, () => true);
    const leaseId = this.#record(t, entries);
    const decision = { allowed: true, retryAfterSeconds: undefined, policy: undefined, leaseId };
    return escaped === undefined ? decision : { ...decision, shadow: escaped };
  }

  /** The refusal by the entries `counts` picks: latest release wins, ties to the latest own limit, then the later policy. */
  #refusal(
    t: number,
    entries: readonly OracleEntry[],
    owns: readonly number[],
    counts: (entry: OracleEntry) => boolean,
  ): OracleRefusal | undefined {
    let latest = t;
    let latestOwn = t;
    let refusing: string | undefined;
    let blocked = false;
    for (const [i, entry] of entries.entries()) {
      if (!counts(entry)) continue;
      const own = owns[i]!;
      const until = this.blockedUntil.get(entry.id) ?? 0;
      if (until > t) blocked = true;
      const at = until > t ? until : own;
      if (at > t && (at > latest || (at === latest && own >= latestOwn))) {
        latest = at;
        latestOwn = own;
        refusing = entry.policy.name;
      }
    }
    if (refusing === undefined) return undefined;
    return {
      policy: refusing,
      retryAfterSeconds: seconds(latest, t),
      reason: blocked ? 'blocked' : 'limit',
    };
  }

  /** Record an admission in every entry; the lease id when one took a lease. */
  #record(t: number, entries: readonly OracleEntry[]): number | undefined {
    let leaseId: number | undefined;
    for (const { id, policy } of entries) {
      this.admissions.set(id, [...(this.admissions.get(id) ?? []), t]);
      if (policy.kind === 'rate') {
        this.tokens.set(id, {
          tokens: this.#tokensAt(id, policy, t) - stepsPerToken(policy),
          at: t,
        });
      }
      if (policy.kind === 'concurrency') {
        leaseId ??= this.#nextLease++;
        this.leases.set(id, [
          ...(this.leases.get(id) ?? []),
          { id: leaseId, expiry: t + policy.leaseTtlMs },
        ]);
      }
    }
    return leaseId;
  }

  release(leaseId: number): void {
    for (const list of this.leases.values()) {
      const i = list.findIndex((l) => l.id === leaseId);
      if (i !== -1) list.splice(i, 1);
    }
  }
}

/** The largest number of `times` inside any half-open interval `[s, s + windowMs)`. */
export function maxInAnyWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}
