/**
 * The in-memory store: one record per scope (a client and account, or one of their resources),
 * holding the state of each of the scope's policies. Decides synchronously, with no promise and no
 * timer. Records are found without building a key string (client id, then account code), reclaimed
 * by an incremental sweep once every policy of theirs is back to a fresh state, and capped in
 * number, so rotating client ids cannot grow memory without bound.
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
  leaseCount,
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
  type PlanScope,
  retryAfterSeconds,
  type StoreOutcome,
  type SyncLimitStore,
} from './store.js';

type PolicyState = SlidingLog | Gcra | LeaseSet;

/** The state of one scope. */
class ScopeRecord {
  /**
   * The states of the first four policies, in fields: an array would put two more objects (the
   * array and its elements) between the record and its states, each a cache miss on a large store.
   */
  readonly s0: PolicyState | null;
  readonly s1: PolicyState | null;
  readonly s2: PolicyState | null;
  readonly s3: PolicyState | null;
  /** The states of further policies, from the fifth on; null when there are none. */
  readonly rest: PolicyState[] | null;
  /** From this instant every state is fresh again and the record may be dropped (an upper bound). */
  quietAt = 0;
  /** False once dropped: a lease on a dropped record is not given back to its successor. */
  live = true;
  /** The next account-level record of the same client. */
  next: ScopeRecord | null = null;

  constructor(
    readonly accountCode: string,
    readonly policies: readonly Policy[],
  ) {
    const n = policies.length;
    this.s0 = n > 0 ? newState(policies[0]!) : null;
    this.s1 = n > 1 ? newState(policies[1]!) : null;
    this.s2 = n > 2 ? newState(policies[2]!) : null;
    this.s3 = n > 3 ? newState(policies[3]!) : null;
    this.rest = n > 4 ? policies.slice(4).map(newState) : null;
  }
}

/** The state of the policy at `position` of the record's policies. */
function stateAt(record: ScopeRecord, position: number): PolicyState {
  switch (position) {
    case 0:
      return record.s0!;
    case 1:
      return record.s1!;
    case 2:
      return record.s2!;
    case 3:
      return record.s3!;
    default:
      return record.rest![position - 4]!;
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

/** The resource records of one client and account, keyed by resource. */
class ResourceRecords {
  readonly records = new Map<string, ScopeRecord>();
  /** Where the sweep goes on. */
  cursor: MapIterator<[string, ScopeRecord]> | null = null;
}

/** Everything held for one client id. */
class ClientEntry {
  constructor(readonly clientId: string) {}
  /** Account-level records, a short list: a client rarely acts for many accounts. */
  accounts: ScopeRecord | null = null;
  /**
   * Resource records by account code, then resource: two lookups with the strings the request
   * brings, rather than one with a key concatenated (and hashed) afresh on every decision.
   */
  resources: Map<string, ResourceRecords> | null = null;
}

/** The leases of one admitted request: usually one policy, sometimes more. */
interface MemoryLease extends LeaseToken {
  readonly store: MemoryStore;
  readonly id: number;
  readonly record: ScopeRecord;
  readonly state: LeaseSet;
  more: Array<{ record: ScopeRecord; state: LeaseSet }> | null;
}

/** The active policies of one decision, flattened; reused from decision to decision. */
interface Work {
  readonly policies: Policy[];
  readonly states: PolicyState[];
  readonly records: ScopeRecord[];
  readonly resources: string[];
  /** Each policy's own earliest admission time, blocks aside. */
  readonly own: number[];
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The most scope records held at once (a client and account is one; each resource they touch
   * under a resource limit is one more). At the cap, a request that needs a new record is refused
   * with reason `capacity` after reclaiming what it can: existing records keep exact limits and
   * none is evicted.
   * @defaultValue 1_000_000
   */
  maxKeys?: number;
  /**
   * Decisions between two reclamation steps; each step examines one client. Lower reclaims idle
   * keys sooner at a small cost per decision: every client is examined once per
   * `sweepInterval * size` decisions. 0 turns the steady sweep off (the cap still sweeps).
   * @defaultValue 8
   */
  sweepInterval?: number;
}

// Clients to examine when a new record is needed at the cap, before refusing it.
const SWEEP_AT_CAP = 64;
// Resource records of one client examined per sweep step.
const RESOURCES_PER_STEP = 8;

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
  readonly #clients = new Map<string, ClientEntry>();
  readonly #maxKeys: number;
  readonly #sweepInterval: number;
  #untilSweep = 0;
  readonly #work: Work = { policies: [], states: [], records: [], resources: [], own: [] };
  #cursor: MapIterator<ClientEntry>;
  #size = 0;
  #latest = Number.NEGATIVE_INFINITY;
  #nextLeaseId = 1;

  /** @param options - key cap and sweep interval */
  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? 1_000_000;
    const sweep = options.sweepInterval ?? 8;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new ConfigurationError(
        'invalid_option',
        `maxKeys must be a whole number >= 1, got ${describe(maxKeys)}.`,
      );
    }
    if (!Number.isSafeInteger(sweep) || sweep < 0) {
      throw new ConfigurationError(
        'invalid_option',
        `sweepInterval must be a whole number >= 0, got ${describe(sweep)}.`,
      );
    }
    this.#maxKeys = maxKeys;
    this.#sweepInterval = sweep;
    this.#cursor = this.#clients.values();
  }

  /** Scope records currently held. */
  get size(): number {
    return this.#size;
  }

  /**
   * Apply a plan atomically: refuse if any active policy is blocked or full, otherwise record the
   * request in every active policy and take its leases.
   * @param plan - the scopes and policies of one request
   * @param now - the time in ms; a time earlier than one already seen is treated as that one
   */
  apply(plan: Plan, now: number): StoreOutcome {
    // Time never goes backwards inside the store: a clock stepped back (or a non-finite time)
    // counts as standing still.
    const t = Number.isFinite(now) ? Math.max(now, this.#latest) : Math.max(this.#latest, 0);
    this.#latest = t;
    if (this.#sweepInterval > 0 && --this.#untilSweep <= 0) {
      this.#untilSweep = this.#sweepInterval;
      this.#sweep(t, 1);
    }

    // The common plan, one scope with every policy active, needs no flattening.
    const { scopes } = plan;
    if (scopes.length === 1) {
      const only = scopes[0]!;
      if (only.active.length === only.policies.length) {
        const outcome = this.#admitWhole(only, t);
        if (outcome !== undefined) return outcome;
      }
    }

    // Flatten the plan into the reusable work arrays: one entry per active policy.
    const w = this.#work;
    let n = 0;
    for (const scope of plan.scopes) {
      const record = this.#find(scope, t);
      if (record === undefined) return capacityRefusal(t);
      for (const i of scope.active) {
        w.policies[n] = scope.policies[i]!;
        w.states[n] = stateAt(record, i);
        w.records[n] = record;
        w.resources[n] = scope.resource;
        n++;
      }
    }

    // When could each active policy admit one more request?
    let earliest = t;
    let refusingOwn = t;
    let refusing = -1;
    for (let k = 0; k < n; k++) {
      const state = w.states[k]!;
      const own = earliestFor(w.policies[k]!, state, t);
      w.own[k] = own;
      const at = Math.max(own, state.blockedUntil);
      // The refusal names the policy that frees up last; on a tie, the one whose own limit frees
      // up last (not a block), then the later one in plan order (the more specific limit).
      if (at > t && (at > earliest || (at === earliest && own >= refusingOwn))) {
        earliest = at;
        refusingOwn = own;
        refusing = k;
      }
    }
    const blockedOnly = refusingOwn <= t;

    const outcome =
      refusing === -1
        ? this.#admit(plan, w, n, t)
        : {
            allowed: false as const,
            now: t,
            reason: blockedOnly ? ('blocked' as const) : ('limit' as const),
            retryAfterSeconds: retryAfterSeconds(earliest - t),
            policy: w.policies[refusing],
            resource: w.resources[refusing],
            policies: activePolicies(plan, w, n),
            values: statusValues(w, n, t),
          };
    if (refusing !== -1) {
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
    }
    return outcome;
  }

  /**
   * Give back the leases of an admitted request. Idempotent; a lease that already expired, or
   * whose record was reclaimed, is ignored.
   * @param lease - the token from an admitted outcome
   */
  release(lease: LeaseToken, _now: number): void {
    const own = lease as MemoryLease;
    if (own.store !== this) return;
    if (own.record.live) leaseRelease(own.state, own.id);
    if (own.more !== null) {
      for (const hold of own.more) if (hold.record.live) leaseRelease(hold.state, own.id);
    }
  }

  /** The record of a scope, created if needed; undefined when the store is full. */
  #find(scope: PlanScope, t: number): ScopeRecord | undefined {
    let entry = this.#clients.get(scope.clientId);
    if (scope.resource === '') {
      for (let r = entry?.accounts ?? null; r !== null; r = r.next) {
        if (r.accountCode === scope.accountCode && r.policies === scope.policies) return r;
      }
    } else {
      const found = entry?.resources?.get(scope.accountCode)?.records.get(scope.resource);
      // Policies replaced for a resource start afresh with the new ones.
      if (found !== undefined && found.policies === scope.policies) return found;
    }
    if (this.#size >= this.#maxKeys) {
      this.#sweep(t, SWEEP_AT_CAP);
      if (this.#size >= this.#maxKeys) return undefined;
      entry = this.#clients.get(scope.clientId);
    }
    if (entry === undefined) {
      entry = new ClientEntry(scope.clientId);
      this.#clients.set(scope.clientId, entry);
    }
    const record = new ScopeRecord(scope.accountCode, scope.policies);
    if (scope.resource === '') {
      record.next = entry.accounts;
      entry.accounts = record;
    } else {
      entry.resources ??= new Map();
      let account = entry.resources.get(scope.accountCode);
      if (account === undefined) {
        account = new ResourceRecords();
        entry.resources.set(scope.accountCode, account);
      }
      const replaced = account.records.get(scope.resource);
      if (replaced !== undefined) {
        replaced.live = false;
        this.#size--;
      }
      account.records.set(scope.resource, record);
    }
    this.#size++;
    return record;
  }

  /**
   * The plan of one scope with every policy active, without the work arrays: admits, or answers
   * `undefined` when a policy has no room, for the general path to refuse. Up to then it has only
   * pruned what left its window, which the general path would do all the same.
   */
  #admitWhole(scope: PlanScope, t: number): StoreOutcome | undefined {
    const record = this.#find(scope, t);
    if (record === undefined) return capacityRefusal(t);
    const { policies } = record;
    const n = policies.length;
    for (let k = 0; k < n; k++) {
      const state = stateAt(record, k);
      if (earliestFor(policies[k]!, state, t) > t || state.blockedUntil > t) return undefined;
    }
    let lease: MemoryLease | undefined;
    let quietAt = record.quietAt;
    const values: number[] = new Array(2 * n);
    for (let k = 0; k < n; k++) {
      const policy = policies[k]!;
      const state = stateAt(record, k);
      if (policy.kind === 'concurrency') lease = this.#hold(lease, record, state as LeaseSet);
      const until = admitOne(policy, state, t, lease);
      if (until > quietAt) quietAt = until;
      writeStatus(values, k, policy, state, t);
    }
    record.quietAt = quietAt;
    return { allowed: true, now: t, policies, values, lease };
  }

  #admit(plan: Plan, w: Work, n: number, t: number): StoreOutcome {
    let lease: MemoryLease | undefined;
    for (let k = 0; k < n; k++) {
      const policy = w.policies[k]!;
      const state = w.states[k]!;
      const record = w.records[k]!;
      if (policy.kind === 'concurrency') lease = this.#hold(lease, record, state as LeaseSet);
      const until = admitOne(policy, state, t, lease);
      if (until > record.quietAt) record.quietAt = until;
    }
    return {
      allowed: true,
      now: t,
      policies: activePolicies(plan, w, n),
      values: statusValues(w, n, t),
      lease,
    };
  }

  // The request's lease, made on its first concurrency policy and extended to the next ones.
  #hold(lease: MemoryLease | undefined, record: ScopeRecord, state: LeaseSet): MemoryLease {
    if (lease === undefined)
      return { store: this, id: this.#nextLeaseId++, record, state, more: null };
    lease.more ??= [];
    lease.more.push({ record, state });
    return lease;
  }

  // Examine up to `count` clients from a cursor that cycles through them; drop quiet records.
  #sweep(t: number, count: number): void {
    for (let n = 0; n < count; n++) {
      const next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = this.#clients.values();
        return;
      }
      const entry = next.value;
      this.#sweepClient(entry, t);
      if (entry.accounts === null && (entry.resources === null || entry.resources.size === 0)) {
        this.#clients.delete(entry.clientId);
      }
    }
  }

  #sweepClient(entry: ClientEntry, t: number): void {
    let previous: ScopeRecord | null = null;
    for (let r = entry.accounts; r !== null; r = r.next) {
      if (isQuiet(r, t)) {
        r.live = false;
        this.#size--;
        if (previous === null) entry.accounts = r.next;
        else previous.next = r.next;
      } else previous = r;
    }
    const { resources } = entry;
    if (resources === null) return;
    for (const [accountCode, account] of resources) {
      this.#sweepResources(account, t);
      if (account.records.size === 0) resources.delete(accountCode);
    }
  }

  #sweepResources(account: ResourceRecords, t: number): void {
    const { records } = account;
    for (let n = 0; n < RESOURCES_PER_STEP; n++) {
      account.cursor ??= records.entries();
      const next = account.cursor.next();
      if (next.done === true) {
        account.cursor = null;
        return;
      }
      const [key, record] = next.value;
      if (isQuiet(record, t)) {
        record.live = false;
        this.#size--;
        records.delete(key);
      }
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

// Every state of the record is fresh at `t`. `quietAt` is an upper bound checked first.
function isQuiet(record: ScopeRecord, t: number): boolean {
  if (record.quietAt <= t) return true;
  for (let i = 0; i < record.policies.length; i++) {
    const policy = record.policies[i]!;
    const state = stateAt(record, i);
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
        if (leaseCount(state as LeaseSet) > 0) return false;
        quietAt = leaseQuietAt(state as LeaseSet);
        break;
    }
    if (quietAt > t) return false;
  }
  return true;
}

// The active policies in plan order; the scope's own list when it is all of them (no copy).
function activePolicies(plan: Plan, w: Work, n: number): readonly Policy[] {
  const only = plan.scopes.length === 1 ? plan.scopes[0]! : undefined;
  if (only !== undefined && only.active.length === only.policies.length) return only.policies;
  return w.policies.slice(0, n);
}

// Record an admission at `t` in one policy's state; the instant until which it is not fresh.
// A concurrency policy takes the request's lease, which the caller has made.
function admitOne(
  policy: Policy,
  state: PolicyState,
  t: number,
  lease: MemoryLease | undefined,
): number {
  switch (policy.kind) {
    case 'window':
      logAdmit(state as SlidingLog, t);
      return t + policy.windowMs;
    case 'rate':
      gcraAdmit(state as Gcra, policy, t);
      return (state as Gcra).tat;
    case 'concurrency':
      leaseAcquire(state as LeaseSet, policy, t, lease!.id);
      return t + policy.leaseTtlMs;
  }
}

// Write what remains of one policy and when its quota is back at `values[2k]` and `values[2k+1]`.
function writeStatus(
  values: number[],
  k: number,
  policy: Policy,
  state: PolicyState,
  t: number,
): void {
  switch (policy.kind) {
    case 'window':
      values[2 * k] = logRemaining(state as SlidingLog, policy);
      values[2 * k + 1] = logResetAfter(state as SlidingLog, policy, t);
      break;
    case 'rate':
      values[2 * k] = gcraRemaining(state as Gcra, policy, t);
      values[2 * k + 1] = gcraResetAfter(state as Gcra, t);
      break;
    case 'concurrency':
      values[2 * k] = leaseRemaining(state as LeaseSet, policy);
      values[2 * k + 1] = 0;
      break;
  }
}

function statusValues(w: Work, n: number, t: number): number[] {
  const values: number[] = new Array(2 * n);
  for (let k = 0; k < n; k++) writeStatus(values, k, w.policies[k]!, w.states[k]!, t);
  return values;
}

function capacityRefusal(t: number): StoreOutcome {
  return {
    allowed: false,
    now: t,
    reason: 'capacity',
    retryAfterSeconds: 1,
    policy: undefined,
    resource: undefined,
    policies: [],
    values: [],
  };
}
