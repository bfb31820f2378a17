/**
 * The in-memory store: synchronous, no timer; records in arenas, reclaimed by a sweep.
 * docs/memory-store.md describes the whole.
 * @module
 */
import { readOptions, wholeNumber } from '../../internal/options.js';
import type { Policy } from '../policy.js';
import {
  announcedSeconds,
  type LeaseToken,
  type Plan,
  type PlanScope,
  type ResetOutcome,
  type ResetScope,
  resolveTime,
  type ShadowOutcome,
  type StoreOutcome,
  type SyncLimitStore,
} from '../store.js';
import { Arena, copySlots } from './arena.js';
import {
  activePolicies,
  capacityRefusal,
  newWork,
  refuse,
  refusingPolicy,
  startBlocks,
  statusValues,
  type Work,
} from './decision.js';
import { gcraCarry, RATE_SLOTS } from './gcra.js';
import { MemoryAdmission } from './lease-token.js';
import { admitCost, admitOne, earliestFor, writeStatus } from './policy-kinds.js';
import {
  addAccountRecord,
  addResourceRecord,
  ClientEntry,
  dropAccountRecords,
  dropResourceRecords,
  findAccountRecord,
  findResourceRecord,
  layoutOf,
  QUIET,
  ScopeRecord,
} from './records.js';
import { enforcedRefusing, shadowMask, shadowOutcome } from './shadow.js';
import { Sweep, shrink, shrinkDue } from './sweep.js';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The most scope records held at once (a client and account, and each resource under a resource
   * limit). At the cap a request that needs a new one is refused (`capacity`); none is evicted.
   * @defaultValue 1_000_000
   */
  maxKeys?: number;
  /**
   * Decisions between two reclamation steps, each on one client: lower reclaims idle keys sooner
   * at a small cost per decision. 0 turns the steady sweep off (the cap still sweeps).
   * @defaultValue 8
   */
  sweepInterval?: number;
}

const OPTION_RULES = { maxKeys: wholeNumber(1), sweepInterval: wholeNumber(0) };
const OPTION_DEFAULTS = {
  maxKeys: 1_000_000,
  sweepInterval: 8,
} satisfies Required<MemoryStoreOptions>;

const SWEEP_AT_CAP = 64;
const SHRINK_CHECK_EVERY = 64;
const ARENAS = 64;
const CLIENTS_PER_RUN = 1_024;
const INITIAL_SLOTS = 256;

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
  readonly #sweep = new Sweep(this.#clients);
  /** Where a peek holds the fresh state of a scope the store holds no record of. */
  readonly #scratch = new Arena(64);
  /** What a peek reads carried copies of rate states through (see #carryCopies). */
  readonly #scratchCopies = new ScopeRecord(this.#scratch);
  #untilSweep = 0;
  #untilShrinkCheck = SHRINK_CHECK_EVERY;
  readonly #work = newWork();
  /** Which of the work arrays' policies are in shadow mode, for a plan that names any. */
  readonly #shadow: boolean[] = [];
  /** Each client's records lie in one arena: a growth copies a sixty-fourth of the state. */
  readonly #arenas: Arena[] = [];
  #newClients = 0;
  #size = 0;
  #latest = Number.NEGATIVE_INFINITY;
  #nextLeaseId = 1;
  #decision = 0;

  /**
   * @param options - key cap and sweep interval
   * @throws ConfigurationError `invalid_option` when `options` is not an object, has a key other
   * than `maxKeys` and `sweepInterval`, or one of them is out of range
   */
  constructor(options: MemoryStoreOptions = {}) {
    const read = readOptions(options, 'MemoryStore', OPTION_RULES, {
      defaults: OPTION_DEFAULTS,
      example: '{ maxKeys: 100_000 }',
    });
    this.#maxKeys = read.maxKeys;
    this.#sweepInterval = read.sweepInterval;
  }

  /** Scope records currently held. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the arrays holding every number of every key (objects and the client map aside). */
  get bytes(): number {
    let bytes = 0;
    for (const arena of this.#arenas) bytes += arena.mem.byteLength;
    return bytes;
  }

  /**
   * Apply a plan atomically: refuse if any active policy is blocked or full, otherwise record the
   * request (`cost` admissions) in every active policy and take its leases. A `peek` plan records
   * nothing.
   * @param plan - the scopes and policies of one request
   * @param now - the time in ms; a time earlier than one already seen is treated as that one
   */
  apply(plan: Plan, now: number): StoreOutcome {
    // Monotonic, on the stores' grid; a time on it already is kept, not boxed anew.
    let t: number;
    if (Number.isFinite(now)) {
      const resolved = resolveTime(now);
      t = Math.max(resolved === now ? now : resolved, this.#latest);
    } else t = Math.max(this.#latest, 0);
    this.#latest = t;
    if (plan.peek === true) return this.#peek(plan, t);
    const cost = plan.cost ?? 1;
    this.#decision++;
    if (this.#sweepInterval > 0 && --this.#untilSweep <= 0) this.#maintain(t);

    // Without statuses, an admission reads no window's oldest times unless the window may be full.
    const lazy = plan.statuses === false;
    const { scopes } = plan;
    let first: ScopeRecord | undefined;
    if (scopes.length === 1) {
      const only = scopes[0]!;
      first = this.#find(only, t);
      if (first === undefined) return capacityRefusal(t);
      if (only.active.length === only.policies.length && cost === 1) {
        // Overridden limits (`state`) decide with the scope's list, read through a copy of it.
        const outcome =
          only.state === undefined
            ? this.#admitWhole(first, t, lazy, first.layout.policies, first.policies)
            : this.#admitWhole(first, t, lazy, layoutOf(only.policies).policies, only.policies);
        if (outcome !== undefined) return outcome;
      }
    }
    const w = this.#work;
    const n = this.#flatten(scopes, first, t);
    if (n === -1) return capacityRefusal(t);
    const refusing = refusingPolicy(w, n, t, lazy, cost);
    if (refusing === -1) return this.#admit(plan, w, n, t, lazy, cost);
    if (plan.shadow === true) return this.#shadowDecision(plan, n, t, lazy, cost, refusing);
    return refuse(plan, w, n, t, lazy, refusing, false);
  }

  /**
   * Some policy refuses `refusing` a plan that names shadow policies: an enforcing one refuses as
   * it would without them (its blocks started, none on a shadow policy); otherwise the request is
   * admitted and recorded in every active policy, with the refusal it escaped.
   */
  #shadowDecision(
    plan: Plan,
    n: number,
    t: number,
    lazy: boolean,
    cost: number,
    refusing: number,
  ): StoreOutcome {
    const w = this.#work;
    const mask = shadowMask(plan, this.#shadow);
    const enforced = enforcedRefusing(w, n, t, cost, mask);
    if (enforced !== -1) {
      const outcome = refuse(plan, w, n, t, lazy, enforced, true);
      startBlocks(w, n, t, announcedSeconds(w.earliest, t), mask);
      return outcome;
    }
    const shadow = shadowOutcome(w, t, refusing);
    const admission = this.#admit(plan, w, n, t, lazy, cost);
    admission.shadow = shadow;
    return admission;
  }

  /**
   * Clear the counters, leases and blocks of a client and account, or of one resource of theirs,
   * under whichever policy lists: the next request is decided afresh, and a lease taken before is
   * void.
   * @param scope - the client id and account code, and optionally a resource key
   * @returns how many scope records were removed
   */
  reset(scope: ResetScope): ResetOutcome {
    const { clientId, accountCode, resource } = scope;
    const entry = this.#clients.get(clientId);
    if (entry === undefined) return { cleared: 0 };
    const cleared =
      resource === undefined
        ? dropAccountRecords(entry, accountCode)
        : dropResourceRecords(entry, accountCode, resource);
    this.#size -= cleared;
    if (entry.empty) this.#clients.delete(clientId);
    return { cleared };
  }

  /**
   * Decide as apply would and report the statuses as they are, recording nothing: no record made
   * (a scope not held is fresh), no block, no lease, no sweep.
   */
  #peek(plan: Plan, t: number): StoreOutcome {
    const w = this.#work;
    this.#scratch.replace(this.#scratch.mem, 0);
    let n = 0;
    for (const scope of plan.scopes) {
      let record = this.#found(scope);
      if (record === undefined) {
        // At the cap a check would need room it may not find: refused, as it may be.
        if (this.#size >= this.#maxKeys) return capacityRefusal(t);
        record = new ScopeRecord(this.#scratch);
        record.hold(scope.accountCode, scope.state ?? scope.policies, scope.policies);
      }
      const from = n;
      n = this.#flattenScope(scope, record, n);
      if (record.decidedWith !== scope.policies) this.#carryCopies(scope, record, from, t);
    }
    const cost = plan.cost ?? 1;
    const refusing = refusingPolicy(w, n, t, false, cost);
    let shadow: ShadowOutcome | undefined;
    if (refusing !== -1) {
      if (plan.shadow !== true) return refuse(plan, w, n, t, false, refusing, true);
      const enforced = enforcedRefusing(w, n, t, cost, shadowMask(plan, this.#shadow));
      if (enforced !== -1) return refuse(plan, w, n, t, false, enforced, true);
      shadow = shadowOutcome(w, t, refusing);
    }
    return {
      allowed: true,
      now: t,
      lease: undefined,
      policies: activePolicies(plan, w, n),
      values: statusValues(w, n, t, false, false),
      shadow,
    };
  }

  /**
   * A peek under another list than the record's latest decision: each rate policy whose backlog
   * would be carried over is read from a carried copy in the scratch arena, the record untouched.
   */
  #carryCopies(scope: PlanScope, record: ScopeRecord, from: number, t: number): void {
    const w = this.#work;
    const scratch = this.#scratch;
    const { active, policies } = scope;
    for (let k = 0; k < active.length; k++) {
      const i = active[k]!;
      const before = record.decidedWith[i];
      const after = policies[i];
      if (before?.kind !== 'rate' || after?.kind !== 'rate') continue;
      const at = scratch.alloc(RATE_SLOTS);
      copySlots(record.arena.mem, w.slots[from + k]!, RATE_SLOTS, scratch.mem, at);
      gcraCarry(scratch.mem, at, before, after, t);
      w.slots[from + k] = at;
      w.records[from + k] = this.#scratchCopies;
    }
  }

  /**
   * Give back the leases of an admitted request, once; a token of another store, or anything not a
   * token, is ignored.
   * @param lease - the token from an admitted outcome
   */
  release(lease: LeaseToken): void {
    if (MemoryAdmission.isLeaseOf(lease, this)) lease.giveBack();
  }

  // One sweep step; no offset is held anywhere but in the records here: the moment to move blocks.
  #maintain(t: number): void {
    this.#untilSweep = this.#sweepInterval;
    this.#size -= this.#sweep.run(t, 1, this.#decision);
    if (--this.#untilShrinkCheck <= 0) {
      this.#untilShrinkCheck = SHRINK_CHECK_EVERY;
      if (shrinkDue(this.#arenas)) shrink(this.#arenas, this.#clients.values(), INITIAL_SLOTS);
    }
  }

  #find(scope: PlanScope, t: number): ScopeRecord | undefined {
    const found = this.#found(scope);
    if (found !== undefined) {
      found.decision = this.#decision;
      // Limits overridden, or back: one comparison while the list stays the same.
      if (found.decidedWith !== scope.policies) found.decideWith(scope.policies, t);
      return found;
    }
    return this.#create(scope, t);
  }

  /** The scope's record, if held. */
  #found(scope: PlanScope): ScopeRecord | undefined {
    const entry = this.#clients.get(scope.clientId);
    if (entry === undefined) return undefined;
    const { accountCode, resource } = scope;
    // Overridden limits count in the state of the list they override.
    const policies = scope.state ?? scope.policies;
    const found =
      resource === ''
        ? findAccountRecord(entry, accountCode, policies)
        : findResourceRecord(entry, accountCode, resource, policies);
    return found ?? undefined;
  }

  #create(scope: PlanScope, t: number): ScopeRecord | undefined {
    if (this.#size >= this.#maxKeys) {
      this.#size -= this.#sweep.run(t, SWEEP_AT_CAP, this.#decision);
      if (this.#size >= this.#maxKeys) return undefined;
    }
    const { clientId, accountCode, resource, policies } = scope;
    let entry = this.#clients.get(clientId);
    if (entry === undefined) {
      entry = new ClientEntry(clientId, this.#arenaForNewClient());
      this.#clients.set(clientId, entry);
    }
    let record: ScopeRecord = entry;
    if (resource !== '') {
      record = new ScopeRecord(entry.arena);
      addResourceRecord(entry, accountCode, resource, record);
    } else if (entry.base !== -1) {
      record = new ScopeRecord(entry.arena);
      addAccountRecord(entry, accountCode, record);
    }
    record.hold(accountCode, scope.state ?? policies, policies);
    record.decision = this.#decision;
    this.#size++;
    return record;
  }

  // Clients arriving in a row share an arena, runs taking the arenas in turn so they grow alike.
  #arenaForNewClient(): Arena {
    const i = Math.floor(this.#newClients++ / CLIENTS_PER_RUN) % ARENAS;
    let arena = this.#arenas[i];
    if (arena === undefined) {
      arena = new Arena(INITIAL_SLOTS);
      this.#arenas[i] = arena;
    }
    return arena;
  }

  /**
   * One scope, every policy active, without the work arrays; `undefined` leaves a refusal to the
   * general path (only pruning was done, which it would do too).
   */
  #admitWhole(
    record: ScopeRecord,
    t: number,
    lazy: boolean,
    policies: readonly Policy[],
    reported: readonly Policy[],
  ): StoreOutcome | undefined {
    const { base, arena } = record;
    const { offsets } = record.layout;
    const n = policies.length;
    const m = arena.mem;
    for (let k = 0; k < n; k++) {
      const s = base + offsets[k]!;
      if (earliestFor(policies[k]!, m, s, t, lazy, 1) > t || (m[s] as number) > t) return undefined;
    }
    const admission = new MemoryAdmission(this, t);
    const values = lazy ? undefined : new Array<number>(2 * n);
    for (let k = 0; k < n; k++) {
      const policy = policies[k]!;
      const s = base + offsets[k]!;
      if (policy.kind === 'concurrency') this.#hold(admission, record, offsets[k]!);
      admitOne(policy, arena, s, base + QUIET, t, admission.leaseId);
      if (values !== undefined) writeStatus(values, k, policy, arena.mem, s, t, true);
    }
    if (values !== undefined) {
      admission.policies = reported;
      admission.values = values;
    }
    return admission;
  }

  /** The number of active policies flattened into the work arrays; -1 when a record won't fit. */
  #flatten(scopes: readonly PlanScope[], first: ScopeRecord | undefined, t: number): number {
    let n = 0;
    for (const scope of scopes) {
      const record = first ?? this.#find(scope, t);
      if (record === undefined) return -1;
      n = this.#flattenScope(scope, record, n);
    }
    return n;
  }

  /** Flatten one scope's active policies from position `n`; the position after them. */
  #flattenScope(scope: PlanScope, record: ScopeRecord, n: number): number {
    const w = this.#work;
    const { offsets } = record.layout;
    // The record's own copy of its list, unless the scope's limits override it.
    const policies = scope.state === undefined ? record.layout.policies : scope.policies;
    for (const i of scope.active) {
      w.policies[n] = policies[i]!;
      w.offsets[n] = offsets[i]!;
      w.slots[n] = record.base + offsets[i]!;
      w.records[n] = record;
      w.resources[n] = scope.resource;
      n++;
    }
    return n;
  }

  #admit(plan: Plan, w: Work, n: number, t: number, lazy: boolean, cost: number): MemoryAdmission {
    const admission = new MemoryAdmission(this, t);
    for (let k = 0; k < n; k++) {
      const policy = w.policies[k]!;
      const record = w.records[k]!;
      if (policy.kind === 'concurrency') this.#hold(admission, record, w.offsets[k]!);
      const s = w.slots[k]!;
      if (cost === 1) admitOne(policy, record.arena, s, record.base + QUIET, t, admission.leaseId);
      else admitCost(policy, record.arena, s, record.base + QUIET, t, admission.leaseId, cost);
    }
    if (!lazy) {
      admission.policies = activePolicies(plan, w, n);
      admission.values = statusValues(w, n, t, false, true);
    }
    return admission;
  }

  // Hold the admission's lease in a concurrency policy: under a new id in its first.
  #hold(admission: MemoryAdmission, record: ScopeRecord, offset: number): void {
    if (admission.hold(this.#nextLeaseId, record, offset)) this.#nextLeaseId++;
  }
}
