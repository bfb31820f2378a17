/**
 * The in-memory store: one record per scope (a client and account, or one of their resources),
 * holding the state of each of the scope's policies. Decides synchronously, with no promise and no
 * timer. Records are found without building a key string (client id, then account code), in time
 * independent of how many accounts and resources a client has; reclaimed by an incremental sweep
 * once every policy of theirs is back to a fresh state, and capped in number, so rotating client
 * ids (or account codes) cannot grow memory without bound. Their numbers live in arenas of slots
 * (see arena.ts): each client's in one of 64, so that no growth copies them all at once.
 * @module
 */

import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import { nearestName } from '../internal/nearest-name.js';
import { Arena, copySlots } from './memory/arena.js';
import {
  gcraAdmit,
  gcraEarliest,
  gcraFreshAt,
  gcraRemaining,
  gcraResetAfter,
  RATE_SLOTS,
} from './memory/gcra.js';
import {
  CONCURRENCY_SLOTS,
  freeLeases,
  leaseAcquire,
  leaseCount,
  leaseEarliest,
  leaseRelease,
  leaseRemaining,
  moveLeases,
  pruneLeases,
} from './memory/lease-set.js';
import {
  freeLog,
  logAdmit,
  logEarliest,
  logHasRoom,
  logRemaining,
  logResetAfter,
  moveLog,
  pruneLog,
  WINDOW_SLOTS,
} from './memory/sliding-log.js';
import type { Policy } from './policy.js';
import {
  type AdmittedOutcome,
  announcedSeconds,
  type LeaseToken,
  NO_STATUSES,
  type Plan,
  type PlanScope,
  resolveTime,
  type StoreOutcome,
  type SyncLimitStore,
} from './store.js';

/**
 * Where each policy's state lies in a record block: slot 0 is the record's quiet time (the instant
 * from which every state but the leases is fresh), then the policies' slots in order, each
 * starting with its block time.
 */
interface Layout {
  /**
   * The policies, in an array of the layout's own: lists from presets are frozen, and V8 reads
   * a frozen array's elements in optimized code through a generic path, a call per read.
   */
  readonly policies: readonly Policy[];
  /** Offset of each policy's first slot from the block's start. */
  readonly offsets: readonly number[];
  /** Slots of the block. */
  readonly size: number;
}

const QUIET = 0;

const layouts = new WeakMap<readonly Policy[], Layout>();

/** The layout of a record of these policies, computed once per list. */
function layoutOf(policies: readonly Policy[]): Layout {
  let layout = layouts.get(policies);
  if (layout === undefined) {
    const offsets: number[] = [];
    let size = 1;
    for (const policy of policies) {
      offsets.push(size);
      size += slotsOf(policy);
    }
    layout = { policies: [...policies], offsets, size };
    layouts.set(policies, layout);
  }
  return layout;
}

const signatures = new WeakMap<readonly Policy[], string>();

/**
 * Two policy lists hold one state when they hold the same policies, as the Redis store keys state
 * by a list's content: two limiters made from one preset (whose route rules each compiles into
 * lists of its own) count a client together on one store. The same list is the common case and
 * costs one comparison.
 */
function samePolicies(a: readonly Policy[], b: readonly Policy[]): boolean {
  return a === b || signatureOf(a) === signatureOf(b);
}

function signatureOf(list: readonly Policy[]): string {
  let signature = signatures.get(list);
  if (signature === undefined) {
    signature = JSON.stringify(list);
    signatures.set(list, signature);
  }
  return signature;
}

function slotsOf(policy: Policy): number {
  switch (policy.kind) {
    case 'window':
      return WINDOW_SLOTS;
    case 'rate':
      return RATE_SLOTS;
    case 'concurrency':
      return CONCURRENCY_SLOTS;
  }
}

/**
 * One scope (a client and account, or one of their resources): its block in its client's arena,
 * or none (`base` -1) while the object waits to be given a scope again (see {@link ClientEntry}).
 */
class ScopeRecord {
  /** Offset of the record block in the arena; -1 when the record holds none. */
  base = -1;
  /** Bumped whenever the record is dropped: a lease of an earlier life is not given to this one. */
  generation = 0;
  /**
   * The next record of its chain: the next account-level record of a client that holds few, or
   * the next record of the same account code or resource under another policy list.
   */
  next: ScopeRecord | null = null;
  /** The last decision that used the record: the sweep at the cap must not drop it under that one. */
  decision = 0;
  accountCode = '';
  policies: readonly Policy[] = [];
  layout: Layout = EMPTY_LAYOUT;

  /** @param arena - the arena of the record's client: every block of the record lies there */
  constructor(readonly arena: Arena) {}

  /** Take a scope and a block of the arena. */
  hold(accountCode: string, policies: readonly Policy[]): void {
    this.accountCode = accountCode;
    this.policies = policies;
    this.layout = layoutOf(policies);
    this.base = this.arena.alloc(this.layout.size);
  }
}

const EMPTY_LAYOUT: Layout = { policies: [], offsets: [], size: 0 };

/**
 * Records by key (an account code, or a resource), with where the sweep goes on among them. A
 * key's records form a chain, one per policy list: the first here and the others in its `next`
 * (another account type's preset, or rules replaced), each with its own counts.
 */
class KeyedRecords<T = ScopeRecord> {
  readonly map = new Map<string, T>();
  /** The sweep's place in `map`; null when its next pass starts from the first key. */
  cursor: MapIterator<[string, T]> | null = null;
}

/**
 * Everything held for one client id. The entry is itself the record of the client's first account
 * (most clients act for one), so that the map leads straight to it. A few more account-level
 * records follow in `next`; beyond `ACCOUNTS_IN_CHAIN`, they move to `accounts`, keyed by
 * account code, so that a client of many accounts costs a decision no more than one of a single
 * account. When the entry's own record is dropped while the client still holds others, the entry
 * stays, with no block, until a request needs an account-level record again.
 */
class ClientEntry extends ScopeRecord {
  /** The account-level records other than the entry's own, by account code; null while few. */
  accounts: KeyedRecords | null = null;
  /**
   * Resource records by account code, then resource: two lookups with the strings the request
   * brings, rather than one with a key concatenated (and hashed) afresh on every decision.
   */
  resources: KeyedRecords<KeyedRecords> | null = null;

  constructor(
    readonly clientId: string,
    arena: Arena,
  ) {
    super(arena);
  }
}

/**
 * An admitted plan's outcome, which is also the token of its leases when it took any: one object
 * per admission, not two. Its fields are the outcome's; where the lease is held is private, so
 * that the outcome shows (and copies, and compares) as plain outcome data. A copy made by
 * spreading it still carries the lease. The lease is held in one policy, usually, sometimes more.
 */
class MemoryAdmission implements AdmittedOutcome, LeaseToken {
  readonly allowed = true as const;
  policies: readonly Policy[] = NO_STATUSES.policies;
  values: readonly number[] = NO_STATUSES.values;
  /** Itself once it holds a lease: the token to give back. */
  lease: MemoryAdmission | undefined = undefined;
  /** The lease id, >= 1; 0 while the admission holds no lease. */
  #id = 0;
  /** The record of the first policy holding the lease; null while none is held. */
  #record: ScopeRecord | null = null;
  /** The record's generation when the lease was taken. */
  #generation = 0;
  /** Offset of the concurrency policy's slots from the record's base. */
  #offset = 0;
  #more: Array<{ record: ScopeRecord; generation: number; offset: number }> | null = null;

  readonly #store: MemoryStore;

  /**
   * @param store - the store that admitted it
   * @param now - the time of the decision
   */
  constructor(
    store: MemoryStore,
    readonly now: number,
  ) {
    this.#store = store;
  }

  /** The store that admitted it: the lease token's brand, not a field of the outcome. */
  get store(): MemoryStore {
    return this.#store;
  }

  /**
   * Whether `token` is a lease of `store`: a check of the private brand, which reads nothing of
   * the value (a revoked proxy, or one whose traps throw, is simply not a lease).
   */
  static isLeaseOf(token: unknown, store: MemoryStore): token is MemoryAdmission {
    return typeof token === 'object' && token !== null && #store in token && token.#store === store;
  }

  /** The lease id, >= 1; 0 while the admission holds no lease. */
  get leaseId(): number {
    return this.#id;
  }

  /**
   * Take lease `id` in a concurrency policy's slots: the admission's first.
   * @param id - a lease id no other lease of the store has
   * @param record - the policy's record
   * @param offset - offset of the policy's slots from the record's base
   */
  takeLease(id: number, record: ScopeRecord, offset: number): void {
    this.#id = id;
    this.#record = record;
    this.#generation = record.generation;
    this.#offset = offset;
    this.lease = this;
  }

  /**
   * Hold the lease taken already in one more concurrency policy's slots.
   * @param record - the policy's record
   * @param offset - offset of the policy's slots from the record's base
   */
  extendLease(record: ScopeRecord, offset: number): void {
    this.#more ??= [];
    this.#more.push({ record, generation: record.generation, offset });
  }

  /**
   * Give the leases back. Idempotent; a lease that already expired, or whose record was
   * reclaimed (its generation moved on), is ignored.
   */
  giveBack(): void {
    const record = this.#record;
    if (record === null) return;
    const id = this.#id;
    if (record.generation === this.#generation) {
      leaseRelease(record.arena.mem, record.base + this.#offset, id);
    }
    if (this.#more !== null) {
      for (const hold of this.#more) {
        if (hold.record.generation === hold.generation) {
          leaseRelease(hold.record.arena.mem, hold.record.base + hold.offset, id);
        }
      }
    }
    // Given back: a second release finds nothing to do.
    this.#record = null;
    this.#more = null;
  }
}

/** The active policies of one decision, flattened; reused from decision to decision. */
interface Work {
  readonly policies: Policy[];
  /** Offset of each policy's slots in the arena. */
  readonly slots: number[];
  /** Offset of each policy's slots from its record's base. */
  readonly offsets: number[];
  readonly records: ScopeRecord[];
  readonly resources: string[];
  /** Each policy's own earliest admission time, blocks aside. */
  readonly own: number[];
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The most scope records held at once (a client and account is one; each resource they touch
   * under a resource limit is one more, per preset that limits it). At the cap, a request that
   * needs a new record is refused with reason `capacity` after reclaiming what it can: existing
   * records keep exact limits and none is evicted.
   * @defaultValue 1_000_000
   */
  maxKeys?: number;
  /**
   * Decisions between two reclamation steps; each step examines one client (of a client with
   * many accounts or resources, a few dozen of its records: the next step on that client goes on
   * from there). Lower reclaims idle keys sooner at a small cost per decision: every client is
   * examined once per `sweepInterval * size` decisions. 0 turns the steady sweep off (the cap
   * still sweeps).
   * @defaultValue 8
   */
  sweepInterval?: number;
}

// The options MemoryStore knows: any other key is refused, naming the nearest of these.
const OPTION_NAMES = ['maxKeys', 'sweepInterval'] as const satisfies ReadonlyArray<
  keyof MemoryStoreOptions
>;

// Sweep steps to take when a new record is needed at the cap, before refusing it.
const SWEEP_AT_CAP = 64;
// Account-level records a client holds in its entry's chain besides the entry's own; one more
// moves them all to a map by account code.
const ACCOUNTS_IN_CHAIN = 4;
// Keys of one map of a client (its accounts, its resources' account codes, the resources of one
// account code) examined per sweep step.
const KEYS_PER_STEP = 8;
// Arenas a store spreads its clients over, and the slots each starts with.
const ARENAS = 64;
const CLIENTS_PER_RUN = 1_024;
const INITIAL_SLOTS = 256;
// The arenas shrink only from this many slots in all (256 KB) ...
const SHRINK_FROM = 32_768;
// ... and only while at most this many slots are in use (2 MB, a few thousand keys): copying
// them takes a few milliseconds.
const SHRINK_AT_MOST = 1 << 18;
// Sweep steps between two looks at whether the arenas should shrink.
const SHRINK_CHECK_EVERY = 64;

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
  readonly #work: Work = {
    policies: [],
    slots: [],
    offsets: [],
    records: [],
    resources: [],
    own: [],
  };
  /**
   * The arenas, made as clients come: each client is given one in turn, and all its records live
   * there. An arena grows by copying itself, so splitting the numbers over many keeps every copy
   * small: a store of 1,000,000 keys grows 64 arenas of some 10 MB, never one of 600 MB.
   */
  readonly #arenas: Arena[] = [];
  #newClients = 0;
  #untilShrinkCheck = SHRINK_CHECK_EVERY;
  #cursor: MapIterator<ClientEntry>;
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
    const fields = readStoreOptions(options);
    const maxKeys = fields.maxKeys ?? 1_000_000;
    const sweep = fields.sweepInterval ?? 8;
    if (typeof maxKeys !== 'number' || !Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new ConfigurationError(
        'invalid_option',
        `maxKeys must be a whole number >= 1, got ${describe(maxKeys)}.`,
      );
    }
    if (typeof sweep !== 'number' || !Number.isSafeInteger(sweep) || sweep < 0) {
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
   * Bytes of the array that holds every number of every key (the records' small JavaScript
   * objects and the client map aside). It grows with the keys and shrinks once most of them have
   * gone.
   */
  get bytes(): number {
    let bytes = 0;
    for (const arena of this.#arenas) bytes += arena.mem.byteLength;
    return bytes;
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
    // Times are taken on the stores' grid (store.ts resolveTime), as the Redis store takes them;
    // a time on it already (whole ms, the usual case) is kept as it came, not copied into a new
    // heap number that the decision would carry.
    let t: number;
    if (Number.isFinite(now)) {
      const resolved = resolveTime(now);
      t = Math.max(resolved === now ? now : resolved, this.#latest);
    } else t = Math.max(this.#latest, 0);
    this.#latest = t;
    this.#decision++;
    if (this.#sweepInterval > 0 && --this.#untilSweep <= 0) {
      this.#untilSweep = this.#sweepInterval;
      this.#sweep(t, 1);
      // No offset is held anywhere but in the records here: the moment to move blocks.
      if (--this.#untilShrinkCheck <= 0) {
        this.#untilShrinkCheck = SHRINK_CHECK_EVERY;
        if (this.#shrinkDue()) this.#shrink();
      }
    }

    // Without statuses, an admission reads no window's oldest times unless the window may be full.
    const lazy = plan.statuses === false;
    // The common plan, one scope with every policy active, needs no flattening. Its record is
    // found once, also when a policy has no room and the general path below refuses.
    const { scopes } = plan;
    let first: ScopeRecord | undefined;
    if (scopes.length === 1) {
      const only = scopes[0]!;
      first = this.#find(only, t);
      if (first === undefined) return capacityRefusal(t);
      if (only.active.length === only.policies.length) {
        const outcome = this.#admitWhole(first, t, lazy);
        if (outcome !== undefined) return outcome;
      }
    }

    // Flatten the plan into the reusable work arrays: one entry per active policy.
    const w = this.#work;
    let n = 0;
    for (const scope of scopes) {
      const record = first ?? this.#find(scope, t);
      if (record === undefined) return capacityRefusal(t);
      const { policies, offsets } = record.layout;
      for (const i of scope.active) {
        w.policies[n] = policies[i]!;
        w.offsets[n] = offsets[i]!;
        w.slots[n] = record.base + offsets[i]!;
        w.records[n] = record;
        w.resources[n] = scope.resource;
        n++;
      }
    }

    // When could each active policy admit one more request? A blocked one: at its block's end,
    // announced when the block began.
    let blocked = false;
    let earliest = t;
    let refusingOwn = t;
    let refusing = -1;
    for (let k = 0; k < n; k++) {
      const s = w.slots[k]!;
      const m = w.records[k]!.arena.mem;
      const own = earliestFor(w.policies[k]!, m, s, t, lazy);
      w.own[k] = own;
      const until = m[s] as number;
      if (until > t) blocked = true;
      const at = until > t ? until : own;
      // The refusal names the policy that frees up last; on a tie (one refusal blocks its
      // policies until one instant), the one whose own limit frees up last, then the later one in
      // plan order (the more specific limit).
      if (at > t && (at > earliest || (at === earliest && own >= refusingOwn))) {
        earliest = at;
        refusingOwn = own;
        refusing = k;
      }
    }
    if (refusing === -1) return this.#admit(plan, w, n, t, lazy);

    // Refused: record nothing. Announce the earliest admission in whole seconds; a block already
    // announced stays as it is, and every policy without room and without a block is blocked
    // until the announced instant, so that a retry then finds none of them in the way.
    const seconds = announcedSeconds(earliest, t);
    const outcome: StoreOutcome = {
      allowed: false,
      now: t,
      reason: blocked ? 'blocked' : 'limit',
      retryAfterSeconds: seconds,
      policy: w.policies[refusing],
      resource: w.resources[refusing],
      policies: activePolicies(plan, w, n),
      values: statusValues(w, n, t, lazy, false),
    };
    const until = t + seconds * 1000;
    for (let k = 0; k < n; k++) {
      const s = w.slots[k]!;
      const { base, arena } = w.records[k]!;
      const m = arena.mem;
      if (w.own[k]! <= t || (m[s] as number) > t) continue;
      m[s] = until;
      if (until > (m[base + QUIET] as number)) m[base + QUIET] = until;
    }
    return outcome;
  }

  /**
   * Give back the leases of an admitted request. Idempotent; a lease that already expired, or
   * whose record was reclaimed, is ignored.
   * @param lease - the token from an admitted outcome
   */
  release(lease: LeaseToken): void {
    if (MemoryAdmission.isLeaseOf(lease, this)) lease.giveBack();
  }

  /** The record of a scope, created if needed; undefined when the store is full. */
  #find(scope: PlanScope, t: number): ScopeRecord | undefined {
    let entry = this.#clients.get(scope.clientId);
    const { accountCode, policies } = scope;
    if (scope.resource === '') {
      if (entry !== undefined) {
        // The entry's own record first: the one account of most clients.
        if (
          entry.accountCode === accountCode &&
          samePolicies(entry.policies, policies) &&
          entry.base !== -1
        ) {
          entry.decision = this.#decision;
          return entry;
        }
        // Then the few in its chain, or those of the account code in the map of many. Every
        // record there holds a block: the sweep unlinks those it drops.
        const { accounts } = entry;
        let r = accounts === null ? entry.next : (accounts.map.get(accountCode) ?? null);
        for (; r !== null; r = r.next) {
          if (r.accountCode === accountCode && samePolicies(r.policies, policies)) {
            r.decision = this.#decision;
            return r;
          }
        }
      }
    } else {
      // Another policy list for the resource has a record of its own: neither resets the other.
      let r = entry?.resources?.map.get(accountCode)?.map.get(scope.resource) ?? null;
      for (; r !== null; r = r.next) {
        if (samePolicies(r.policies, policies)) {
          r.decision = this.#decision;
          return r;
        }
      }
    }
    if (this.#size >= this.#maxKeys) {
      this.#sweep(t, SWEEP_AT_CAP);
      if (this.#size >= this.#maxKeys) return undefined;
      entry = this.#clients.get(scope.clientId);
    }
    if (entry === undefined) {
      entry = new ClientEntry(scope.clientId, this.#arenaForNewClient());
      this.#clients.set(scope.clientId, entry);
    }
    let record: ScopeRecord;
    if (scope.resource === '') {
      if (entry.base === -1) record = entry;
      else {
        record = new ScopeRecord(entry.arena);
        addAccountRecord(entry, accountCode, record);
      }
    } else {
      record = new ScopeRecord(entry.arena);
      entry.resources ??= new KeyedRecords();
      let account = entry.resources.map.get(accountCode);
      if (account === undefined) {
        account = new KeyedRecords();
        entry.resources.map.set(accountCode, account);
      }
      record.next = account.map.get(scope.resource) ?? null;
      account.map.set(scope.resource, record);
    }
    record.hold(accountCode, policies);
    record.decision = this.#decision;
    this.#size++;
    return record;
  }

  // Quiet, and not found by the decision under way: the sweep at the cap runs while a plan's
  // records are being found, and must not drop (and hand out again) one found a moment before.
  #droppable(m: Float64Array, record: ScopeRecord, t: number): boolean {
    return record.decision !== this.#decision && isQuiet(m, record, t);
  }

  // The arena the next new client is given, made when first needed.
  #arenaForNewClient(): Arena {
    // Runs of clients that arrive one after the other share an arena, so that their records lie
    // together; the runs take the arenas in turn, so that the arenas grow alike.
    const i = Math.floor(this.#newClients++ / CLIENTS_PER_RUN) % ARENAS;
    let arena = this.#arenas[i];
    if (arena === undefined) {
      arena = new Arena(INITIAL_SLOTS);
      this.#arenas[i] = arena;
    }
    return arena;
  }

  // Most of the arenas' room is free again (a burst of keys has gone), and what is used is small
  // enough to copy at once (a few milliseconds: see SHRINK_AT_MOST).
  #shrinkDue(): boolean {
    let used = 0;
    let length = 0;
    for (const arena of this.#arenas) {
      used += arena.usedSlots;
      length += arena.mem.length;
    }
    return length >= SHRINK_FROM && used * 4 <= length && used <= SHRINK_AT_MOST;
  }

  /**
   * Copy every live record, each followed by its rings and lease blocks, into a smaller array of
   * its arena: only when few records live in a mostly free arena (see `#shrinkDue`).
   */
  #shrink(): void {
    const arenas = this.#arenas;
    const from = arenas.map((arena) => arena.mem);
    const to = arenas.map(
      (arena) => new Float64Array(Math.max(INITIAL_SLOTS, 2 * arena.usedSlots)),
    );
    const tops = arenas.map(() => 0);
    const indexOf = new Map(arenas.map((arena, i) => [arena, i]));
    const move = (record: ScopeRecord): void => {
      const i = indexOf.get(record.arena)!;
      const source = from[i]!;
      const target = to[i]!;
      let top = tops[i]!;
      const { base, layout } = record;
      const { policies } = layout;
      copySlots(source, base, layout.size, target, top);
      record.base = top;
      top += layout.size;
      for (let k = 0; k < policies.length; k++) {
        const kind = policies[k]!.kind;
        const s = record.base + layout.offsets[k]!;
        if (kind === 'window') top = moveLog(source, target, s, top);
        else if (kind === 'concurrency') top = moveLeases(source, target, s, top);
      }
      tops[i] = top;
    };
    const moveChains = (records: KeyedRecords): void => {
      for (const first of records.map.values()) {
        for (let r: ScopeRecord | null = first; r !== null; r = r.next) move(r);
      }
    };
    for (const entry of this.#clients.values()) {
      for (let r: ScopeRecord | null = entry; r !== null; r = r.next) if (r.base !== -1) move(r);
      if (entry.accounts !== null) moveChains(entry.accounts);
      if (entry.resources !== null) {
        for (const account of entry.resources.map.values()) moveChains(account);
      }
    }
    for (const [i, arena] of arenas.entries()) arena.replace(to[i]!, tops[i]!);
  }

  /** Forget a record and give its blocks back. */
  #drop(record: ScopeRecord): void {
    this.#size--;
    const { arena } = record;
    const { layout, base } = record;
    const { policies } = layout;
    for (let k = 0; k < policies.length; k++) {
      const kind = policies[k]!.kind;
      if (kind === 'window') freeLog(arena, base + layout.offsets[k]!);
      else if (kind === 'concurrency') freeLeases(arena, base + layout.offsets[k]!);
    }
    arena.free(base, layout.size);
    record.base = -1;
    record.generation++;
  }

  /**
   * The plan of one scope with every policy active, without the work arrays: admits, or answers
   * `undefined` when a policy has no room, for the general path to refuse. Up to then it has only
   * pruned what left its window, which the general path would do all the same.
   */
  #admitWhole(record: ScopeRecord, t: number, lazy: boolean): StoreOutcome | undefined {
    const { base, arena } = record;
    const { policies, offsets } = record.layout;
    const n = policies.length;
    const m = arena.mem;
    for (let k = 0; k < n; k++) {
      const s = base + offsets[k]!;
      if (earliestFor(policies[k]!, m, s, t, lazy) > t || (m[s] as number) > t) return undefined;
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
      admission.policies = record.policies;
      admission.values = values;
    }
    return admission;
  }

  #admit(plan: Plan, w: Work, n: number, t: number, lazy: boolean): StoreOutcome {
    const admission = new MemoryAdmission(this, t);
    for (let k = 0; k < n; k++) {
      const policy = w.policies[k]!;
      const record = w.records[k]!;
      if (policy.kind === 'concurrency') this.#hold(admission, record, w.offsets[k]!);
      admitOne(policy, record.arena, w.slots[k]!, record.base + QUIET, t, admission.leaseId);
    }
    if (!lazy) {
      admission.policies = activePolicies(plan, w, n);
      admission.values = statusValues(w, n, t, false, true);
    }
    return admission;
  }

  // Hold the admission's lease in a concurrency policy: under a new id in its first.
  #hold(admission: MemoryAdmission, record: ScopeRecord, offset: number): void {
    if (admission.leaseId === 0) admission.takeLease(this.#nextLeaseId++, record, offset);
    else admission.extendLease(record, offset);
  }

  /**
   * Take up to `count` sweep steps, each on the next client of a cursor that cycles through them
   * (from the end of the map back to its start), dropping the quiet records it examines. Stops
   * early once the latest steps in a row have examined every client whole: then there is nothing
   * more to find.
   */
  #sweep(t: number, count: number): void {
    // Steps in a row that examined every record of a client that stays.
    let whole = 0;
    for (let n = 0; n < count && whole < this.#clients.size; n++) {
      let next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = this.#clients.values();
        next = this.#cursor.next();
        if (next.done === true) return;
      }
      const entry = next.value;
      const examinedWhole = this.#sweepClient(entry, t);
      if (
        entry.base === -1 &&
        entry.next === null &&
        entry.accounts === null &&
        (entry.resources === null || entry.resources.map.size === 0)
      ) {
        this.#clients.delete(entry.clientId);
      } else whole = examinedWhole ? whole + 1 : 0;
    }
  }

  /**
   * One sweep step on a client: its entry's record and chain, then the next keys of its account
   * map and of its resources (see KEYS_PER_STEP), so that a step costs alike whatever the client
   * holds. True when the step examined every record of the client.
   */
  #sweepClient(entry: ClientEntry, t: number): boolean {
    const m = entry.arena.mem;
    if (entry.base !== -1 && this.#droppable(m, entry, t)) this.#drop(entry);
    let previous: ScopeRecord = entry;
    for (let r = entry.next; r !== null; r = r.next) {
      if (this.#droppable(m, r, t)) {
        this.#drop(r);
        previous.next = r.next;
      } else previous = r;
    }
    let whole = true;
    const { accounts, resources } = entry;
    if (accounts !== null) {
      whole = this.#sweepChains(accounts, t);
      // None left: the next accounts go in the chain again.
      if (accounts.map.size === 0) entry.accounts = null;
    }
    if (resources !== null) {
      const { map } = resources;
      const all = stepThrough(resources, (accountCode, account) => {
        const complete = this.#sweepChains(account, t);
        if (account.map.size === 0) map.delete(accountCode);
        return complete;
      });
      if (!all) whole = false;
    }
    return whole;
  }

  /**
   * Examine the chains of up to KEYS_PER_STEP keys, going on from where the last step stopped;
   * true when this call went through every key from the first.
   */
  #sweepChains(records: KeyedRecords, t: number): boolean {
    const { map } = records;
    return stepThrough(records, (key, first) => {
      let head: ScopeRecord | null = first;
      let previous: ScopeRecord | null = null;
      for (let r: ScopeRecord | null = first; r !== null; r = r.next) {
        if (this.#droppable(r.arena.mem, r, t)) {
          this.#drop(r);
          if (previous === null) head = r.next;
          else previous.next = r.next;
        } else previous = r;
      }
      if (head === null) map.delete(key);
      else if (head !== first) map.set(key, head);
      return true;
    });
  }
}

/**
 * One sweep step over `records`: visit up to KEYS_PER_STEP keys, going on from where the last step
 * stopped; when the pass over them is over, the next starts from the first key. True when the step
 * examined every key in full: its pass began and ended in it, and `visit` answered true for each.
 */
function stepThrough<T>(
  records: KeyedRecords<T>,
  visit: (key: string, value: T) => boolean,
): boolean {
  const { map } = records;
  const fresh = records.cursor === null;
  const total = map.size;
  records.cursor ??= map.entries();
  let complete = true;
  let n = 0;
  for (; n < KEYS_PER_STEP; n++) {
    const next = records.cursor.next();
    if (next.done === true) break;
    if (!visit(next.value[0], next.value[1])) complete = false;
  }
  // The cursor reached the end; or a pass from the first key has examined as many keys as there
  // were (a sweep step adds none), which spares the next step a look at the end alone.
  const ended = n < KEYS_PER_STEP || (fresh && n >= total);
  if (ended) records.cursor = null;
  return ended && fresh && complete;
}

/**
 * Link a new account-level record into its client's entry: in the entry's chain while it holds at
 * most ACCOUNTS_IN_CHAIN, otherwise (moving the chain there first) in the map by account code.
 */
function addAccountRecord(entry: ClientEntry, accountCode: string, record: ScopeRecord): void {
  let accounts = entry.accounts;
  if (accounts === null) {
    let chained = 0;
    for (let r = entry.next; r !== null; r = r.next) chained++;
    if (chained < ACCOUNTS_IN_CHAIN) {
      record.next = entry.next;
      entry.next = record;
      return;
    }
    accounts = new KeyedRecords();
    for (let r = entry.next; r !== null; ) {
      const after: ScopeRecord | null = r.next;
      r.next = accounts.map.get(r.accountCode) ?? null;
      accounts.map.set(r.accountCode, r);
      r = after;
    }
    entry.next = null;
    entry.accounts = accounts;
  }
  record.next = accounts.map.get(accountCode) ?? null;
  accounts.map.set(accountCode, record);
}

/**
 * The fields of MemoryStore's options, each read once. Throws a ConfigurationError for options
 * that are not an object, for a key that is not an option (a misspelt one would otherwise leave
 * its default in place without a word), and for a read that throws.
 */
function readStoreOptions(options: unknown): Record<keyof MemoryStoreOptions, unknown> {
  const notAnObject = (got: string) =>
    new ConfigurationError(
      'invalid_option',
      `MemoryStore options must be an object such as { maxKeys: 100_000 }, or left out, got ${got}.`,
    );
  if (typeof options !== 'object' || options === null) throw notAnObject(describe(options));
  let array: boolean;
  let keys: string[];
  let fields: Record<keyof MemoryStoreOptions, unknown>;
  try {
    array = Array.isArray(options);
    keys = Object.keys(options);
    const { maxKeys, sweepInterval } = options as MemoryStoreOptions;
    fields = { maxKeys, sweepInterval };
  } catch (cause) {
    // A getter that throws, or a revoked proxy.
    throw new ConfigurationError(
      'invalid_option',
      'Reading the MemoryStore options threw; pass plain data.',
      { cause },
    );
  }
  if (array) throw notAnObject('an array');
  const known: readonly string[] = OPTION_NAMES;
  for (const key of keys) {
    if (known.includes(key)) continue;
    // The first characters are enough to find the nearest of two short names.
    const nearest = nearestName(key.slice(0, 64), known) ?? OPTION_NAMES[0];
    throw new ConfigurationError(
      'invalid_option',
      `MemoryStore has no option ${describe(key)}; did you mean "${nearest}"? Its options are ${OPTION_NAMES.join(' and ')}.`,
    );
  }
  return fields;
}

/**
 * The policy's earliest admission time at `t`, blocks aside; prunes what has expired, except that
 * a `lazy` decision leaves a window's expired admissions alone while it has room without dropping
 * them (they are dropped once they matter: when the window may be full, its ring is full, or a
 * status is read).
 */
function earliestFor(policy: Policy, m: Float64Array, s: number, t: number, lazy: boolean): number {
  switch (policy.kind) {
    case 'window':
      if (lazy && logHasRoom(m, s, policy)) return t;
      pruneLog(m, s, policy, t);
      return logEarliest(m, s, policy, t);
    case 'rate':
      return gcraEarliest(m, s, policy, t);
    case 'concurrency':
      pruneLeases(m, s, t);
      return leaseEarliest(m, s, policy, t);
  }
}

// Every state of the record is fresh at `t`. The record's quiet time is exact for every state but
// the throttles' leases (see admitOne), so a record whose quiet time is still ahead is known busy
// from its block alone, without reading its rings: the sweep finds most records so.
function isQuiet(m: Float64Array, record: ScopeRecord, t: number): boolean {
  const { base } = record;
  if ((m[base + QUIET] as number) > t) return false;
  const { policies, offsets } = record.layout;
  for (let i = 0; i < policies.length; i++) {
    if (policies[i]!.kind !== 'concurrency') continue;
    const s = base + offsets[i]!;
    pruneLeases(m, s, t);
    if (leaseCount(m, s) > 0) return false;
  }
  return true;
}

// Record an admission at `t` in the policy's slots at `s` of `arena`, and move the record's quiet
// time at `quiet` to the instant from which they are fresh again, if later (leases aside; the
// instant is written here rather than returned: a double returned from a call is boxed). A
// concurrency policy takes the request's lease `id`, which the caller has given it; a lease keeps
// its record until it is given back or expires, which isQuiet reads from the lease slots
// themselves: most are given back long before their expiry.
function admitOne(
  policy: Policy,
  arena: Arena,
  s: number,
  quiet: number,
  t: number,
  id: number,
): void {
  let until: number;
  switch (policy.kind) {
    case 'window':
      logAdmit(arena, s, policy, t);
      until = t + policy.windowMs;
      break;
    case 'rate':
      gcraAdmit(arena.mem, s, policy, t);
      until = gcraFreshAt(arena.mem, s);
      break;
    case 'concurrency':
      leaseAcquire(arena, s, policy, t, id);
      return;
  }
  const m = arena.mem;
  if (until > (m[quiet] as number)) m[quiet] = until;
}

// The active policies in plan order; the scope's own list when it is all of them (no copy).
function activePolicies(plan: Plan, w: Work, n: number): readonly Policy[] {
  const only = plan.scopes.length === 1 ? plan.scopes[0]! : undefined;
  if (only !== undefined && only.active.length === only.policies.length) return only.policies;
  return w.policies.slice(0, n);
}

// Write what remains of one policy and when its quota is back at `values[2k]` and `values[2k+1]`.
// Just `admitted` at `t`, a window's newest admission is `t`: it is full again a window later,
// without reading the ring.
function writeStatus(
  values: number[],
  k: number,
  policy: Policy,
  m: Float64Array,
  s: number,
  t: number,
  admitted: boolean,
): void {
  switch (policy.kind) {
    case 'window':
      values[2 * k] = logRemaining(m, s, policy);
      values[2 * k + 1] = admitted ? policy.windowMs : logResetAfter(m, s, policy, t);
      break;
    case 'rate':
      values[2 * k] = gcraRemaining(m, s, policy, t);
      values[2 * k + 1] = gcraResetAfter(m, s, t);
      break;
    case 'concurrency':
      values[2 * k] = leaseRemaining(m, s, policy);
      values[2 * k + 1] = 0;
      break;
  }
}

// The statuses of the work's policies; after a `lazy` look (see earliestFor) windows first drop
// what has left them.
function statusValues(w: Work, n: number, t: number, lazy: boolean, admitted: boolean): number[] {
  const values: number[] = new Array(2 * n);
  for (let k = 0; k < n; k++) {
    const policy = w.policies[k]!;
    const m = w.records[k]!.arena.mem;
    const s = w.slots[k]!;
    if (lazy && policy.kind === 'window') pruneLog(m, s, policy, t);
    writeStatus(values, k, policy, m, s, t, admitted);
  }
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
