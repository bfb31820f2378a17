/**
 * The in-memory store: one record per scope key, holding the state of each of the scope's
 * policies. Decides synchronously, with no promise and no timer. Records are reclaimed by an
 * incremental sweep once every policy of theirs is back to a fresh state, and the number of keys
 * can be capped, so rotating client ids cannot grow memory without bound.
 * @module
 */
import { ConfigurationError } from '../errors.js';
import { describe } from './duration.js';
import {
  Gcra,
  gcraAdmit,
  gcraEarliest,
  gcraQuietAt,
  gcraRemaining,
  gcraResetAfter,
} from './gcra.js';
import {
  LeaseSet,
  leaseAcquire,
  leaseEarliest,
  leaseQuietAt,
  leaseRelease,
  leaseRemaining,
  pruneLeases,
} from './lease-set.js';
import type { Policy } from './policy.js';
import {
  logAdmit,
  logEarliest,
  logQuietAt,
  logRemaining,
  logResetAfter,
  pruneLog,
  SlidingLog,
} from './sliding-log.js';
import {
  type LeaseToken,
  type Plan,
  type PolicyStatus,
  retryAfterSeconds,
  type StoreOutcome,
  type SyncLimitStore,
} from './store.js';

type PolicyState = SlidingLog | Gcra | LeaseSet;

class ScopeRecord {
  readonly states: PolicyState[];
  /** From this instant every state is fresh again and the record may be dropped. */
  quietAt = 0;

  constructor(readonly policies: readonly Policy[]) {
    this.states = policies.map(newState);
  }
}

function newState(policy: Policy): PolicyState {
  switch (policy.kind) {
    case 'window':
      return new SlidingLog();
    case 'rate':
      return new Gcra();
    case 'concurrency':
      return new LeaseSet();
  }
}

/** The active policies of one decision, flattened; reused from decision to decision. */
interface Work {
  readonly policies: Policy[];
  readonly states: PolicyState[];
  readonly records: ScopeRecord[];
  readonly keys: string[];
  /** Each policy's own earliest admission time, blocks aside. */
  readonly own: number[];
}

interface MemoryLease extends LeaseToken {
  readonly store: MemoryStore;
  readonly holds: Array<{ key: string; record: ScopeRecord; index: number }>;
  readonly id: number;
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The most scope keys held at once (a client and account is one key; each resource it touches is
   * one more). At the cap, a request that needs a new key is refused with reason `capacity` after
   * reclaiming what it can: existing keys keep exact limits, none is evicted.
   * @defaultValue 1_000_000
   */
  maxKeys?: number;
  /**
   * Records examined for reclamation per decision. Higher reclaims idle keys sooner at a small
   * cost per decision.
   * @defaultValue 2
   */
  sweepPerDecision?: number;
}

// The records to examine when a new key is needed at the cap before refusing it.
const SWEEP_AT_CAP = 64;

/**
 * Keeps limit state in this process. Exact: sliding windows hold the admission times inside the
 * window, so decisions equal those of an exact sliding log.
 * @example
 * ```ts
 * const limiter = createLimiter({ preset: presets.live, store: new MemoryStore({ maxKeys: 100_000 }) });
 * ```
 */
export class MemoryStore implements SyncLimitStore {
  /** Always true: the memory store decides synchronously. */
  readonly synchronous = true as const;
  readonly #records = new Map<string, ScopeRecord>();
  readonly #maxKeys: number;
  readonly #sweepPerDecision: number;
  #cursor: MapIterator<[string, ScopeRecord]>;
  #latest = Number.NEGATIVE_INFINITY;
  #nextLeaseId = 1;
  readonly #work: Work = { policies: [], states: [], records: [], keys: [], own: [] };

  /** @param options - key cap and sweep rate */
  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? 1_000_000;
    const sweep = options.sweepPerDecision ?? 2;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new ConfigurationError(
        'invalid_option',
        `maxKeys must be a whole number >= 1, got ${describe(maxKeys)}.`,
      );
    }
    if (!Number.isSafeInteger(sweep) || sweep < 0) {
      throw new ConfigurationError(
        'invalid_option',
        `sweepPerDecision must be a whole number >= 0, got ${describe(sweep)}.`,
      );
    }
    this.#maxKeys = maxKeys;
    this.#sweepPerDecision = sweep;
    this.#cursor = this.#records.entries();
  }

  /** Scope keys currently held. */
  get size(): number {
    return this.#records.size;
  }

  /**
   * Apply a plan atomically: refuse if any active policy is blocked or full, otherwise record the
   * request in every active policy and take its leases.
   * @param plan - the scopes and policies of one request
   * @param now - the time in ms; a time earlier than one already seen is treated as that one
   */
  apply(plan: Plan, now: number): StoreOutcome {
    // Time never goes backwards inside the store: a clock stepped back counts as standing still.
    // A non-finite time (a broken clock) also counts as standing still.
    const t = Number.isFinite(now) ? Math.max(now, this.#latest) : Math.max(this.#latest, 0);
    this.#latest = t;
    if (this.#sweepPerDecision > 0) this.#sweep(t, this.#sweepPerDecision);

    const { scopes } = plan;
    // Flatten the plan into the reusable work arrays: one entry per active policy.
    const w = this.#work;
    w.policies.length = 0;
    w.states.length = 0;
    w.records.length = 0;
    w.keys.length = 0;
    w.own.length = 0;
    for (const scope of scopes) {
      let record = this.#records.get(scope.key);
      if (record === undefined || record.policies !== scope.policies) {
        if (record === undefined && this.#records.size >= this.#maxKeys) {
          this.#sweep(t, SWEEP_AT_CAP);
          if (this.#records.size >= this.#maxKeys) return capacityRefusal(t);
        }
        // A scope key whose policies were replaced starts afresh with the new ones.
        record = new ScopeRecord(scope.policies);
        this.#records.set(scope.key, record);
      }
      for (const i of scope.active) {
        w.policies.push(scope.policies[i]!);
        w.states.push(record.states[i]!);
        w.records.push(record);
        w.keys.push(scope.key);
      }
    }
    const n = w.policies.length;

    // When could each active policy admit one more request?
    let earliest = t;
    let refusing = -1;
    let blockedOnly = true;
    for (let k = 0; k < n; k++) {
      const state = w.states[k]!;
      const own = earliestFor(w.policies[k]!, state, t);
      w.own.push(own);
      const at = Math.max(own, state.blockedUntil);
      // Ties go to the later policy: the more specific limit names the refusal.
      if (at > t && at >= earliest) {
        earliest = at;
        refusing = k;
        blockedOnly = own <= t;
      }
    }

    if (refusing === -1) return this.#admit(w, n, t);

    // Refused: record nothing; block every policy that has no room until the instant it announces.
    for (let k = 0; k < n; k++) {
      const own = w.own[k]!;
      if (own > t) {
        const until = t + retryAfterSeconds(own - t) * 1000;
        const state = w.states[k]!;
        const record = w.records[k]!;
        if (until > state.blockedUntil) state.blockedUntil = until;
        if (until > record.quietAt) record.quietAt = until;
      }
    }
    return {
      allowed: false,
      now: t,
      reason: blockedOnly ? 'blocked' : 'limit',
      retryAfterSeconds: retryAfterSeconds(earliest - t),
      policy: w.policies[refusing],
      scope: w.keys[refusing],
      statuses: statusesOf(w, n, t),
    };
  }

  /**
   * Give back the leases of an admitted request. Idempotent; a lease that already expired is
   * ignored.
   * @param lease - the token from an admitted outcome
   */
  release(lease: LeaseToken, _now: number): void {
    const own = lease as MemoryLease;
    if (own.store !== this) return;
    for (const hold of own.holds) {
      if (this.#records.get(hold.key) === hold.record) {
        leaseRelease(hold.record.states[hold.index] as LeaseSet, own.id);
      }
    }
  }

  #admit(w: Work, n: number, t: number): StoreOutcome {
    let lease: MemoryLease | undefined;
    for (let k = 0; k < n; k++) {
      const policy = w.policies[k]!;
      const state = w.states[k]!;
      const record = w.records[k]!;
      let until: number;
      switch (policy.kind) {
        case 'window':
          logAdmit(state as SlidingLog, t);
          until = t + policy.windowMs;
          break;
        case 'rate':
          gcraAdmit(state as Gcra, policy, t);
          until = (state as Gcra).tat;
          break;
        case 'concurrency':
          lease ??= { store: this, holds: [], id: this.#nextLeaseId++ };
          leaseAcquire(state as LeaseSet, policy, t, lease.id);
          lease.holds.push({ key: w.keys[k]!, record, index: record.states.indexOf(state) });
          until = t + policy.leaseTtlMs;
          break;
      }
      if (until > record.quietAt) record.quietAt = until;
    }
    return { allowed: true, now: t, statuses: statusesOf(w, n, t), lease };
  }

  // Examine up to `count` records from a cursor that cycles through the map; drop the quiet ones.
  #sweep(t: number, count: number): void {
    for (let n = 0; n < count; n++) {
      const next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = this.#records.entries();
        return;
      }
      const [key, record] = next.value;
      if (record.quietAt <= t && isQuiet(record, t)) this.#records.delete(key);
    }
  }
}

function earliestFor(policy: Policy, state: PolicyState, t: number): number {
  switch (policy.kind) {
    case 'window':
      pruneLog(state as SlidingLog, policy, t);
      return logEarliest(state as SlidingLog, policy, t);
    case 'rate':
      return gcraEarliest(state as Gcra, policy, t);
    case 'concurrency':
      pruneLeases(state as LeaseSet, t);
      return leaseEarliest(state as LeaseSet, policy, t);
  }
}

// The precise check behind `quietAt` (an upper bound): every state is fresh at `t`.
function isQuiet(record: ScopeRecord, t: number): boolean {
  for (let i = 0; i < record.policies.length; i++) {
    const policy = record.policies[i]!;
    const state = record.states[i]!;
    let quietAt: number;
    switch (policy.kind) {
      case 'window':
        quietAt = logQuietAt(state as SlidingLog, policy);
        break;
      case 'rate':
        quietAt = gcraQuietAt(state as Gcra);
        break;
      case 'concurrency':
        pruneLeases(state as LeaseSet, t);
        if ((state as LeaseSet).ids.length > 0) return false;
        quietAt = leaseQuietAt(state as LeaseSet);
        break;
    }
    if (quietAt > t) return false;
  }
  return true;
}

function statusesOf(w: Work, n: number, t: number): PolicyStatus[] {
  const statuses: PolicyStatus[] = [];
  for (let k = 0; k < n; k++) {
    const policy = w.policies[k]!;
    const state = w.states[k]!;
    let remaining: number;
    let resetAfterMs: number;
    switch (policy.kind) {
      case 'window':
        remaining = logRemaining(state as SlidingLog, policy);
        resetAfterMs = logResetAfter(state as SlidingLog, policy, t);
        break;
      case 'rate':
        remaining = gcraRemaining(state as Gcra, policy, t);
        resetAfterMs = gcraResetAfter(state as Gcra, t);
        break;
      case 'concurrency':
        remaining = leaseRemaining(state as LeaseSet, policy);
        resetAfterMs = 0;
        break;
    }
    statuses.push({ policy, scope: w.keys[k]!, remaining, resetAfterMs });
  }
  return statuses;
}

function capacityRefusal(t: number): StoreOutcome {
  return {
    allowed: false,
    now: t,
    reason: 'capacity',
    retryAfterSeconds: 1,
    policy: undefined,
    scope: undefined,
    statuses: [],
  };
}
