/**
 * The memory store's records, one per scope, and their links, found without building a key
 * string. docs/memory-store.md draws the layout.
 * @module
 */
import { type Policy, policyListIdentity } from '../policy.js';
import type { Arena } from './arena.js';
import { gcraCarry, gcraFreshAt } from './gcra.js';
import { freeState, slotsOf } from './policy-kinds.js';

/** Where each policy's state lies in a record block: after slot {@link QUIET}, in list order. */
export interface Layout {
  /** A copy: V8 reads a frozen array's elements in optimized code through a call per read. */
  readonly policies: readonly Policy[];
  readonly offsets: readonly number[];
  readonly size: number;
}

/** Slot of the quiet time: the instant from which every state but the leases is fresh. */
export const QUIET = 0;

const EMPTY_LAYOUT: Layout = { policies: [], offsets: [], size: 0 };

const layouts = new WeakMap<readonly Policy[], Layout>();

/** The layout of a list, made once per list. */
export function layoutOf(policies: readonly Policy[]): Layout {
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

/** One state for the same policies, as the Redis store keys state by a list's content. */
function samePolicies(a: readonly Policy[], b: readonly Policy[]): boolean {
  return a === b || policyListIdentity(a) === policyListIdentity(b);
}

/** One scope's block in its client's arena (`base` -1 while an entry waits for a scope). */
export class ScopeRecord {
  base = -1;
  /** Bumped whenever the record is dropped: a lease of an earlier life is not given to this one. */
  generation = 0;
  /** The next account-level record of the client, or of the same key under another list. */
  next: ScopeRecord | null = null;
  /** The last decision that found the record: the sweep at the cap must not drop it then. */
  decision = 0;
  accountCode = '';
  /** The list whose state the record holds (a scope's `state`, or its `policies` without one). */
  policies: readonly Policy[] = [];
  /**
   * The list the latest decision recorded decided with: `policies` or an override of it. A rate
   * policy's backlog is carried from it to the next list (see {@link ScopeRecord.decideWith}).
   */
  decidedWith: readonly Policy[] = [];
  layout: Layout = EMPTY_LAYOUT;

  constructor(readonly arena: Arena) {}

  /**
   * Hold the state of `policies`, fresh, for decisions with `decidedWith` (the same list, or an
   * override of it).
   */
  hold(
    accountCode: string,
    policies: readonly Policy[],
    decidedWith: readonly Policy[] = policies,
  ): void {
    this.accountCode = accountCode;
    this.policies = policies;
    this.decidedWith = decidedWith;
    this.layout = layoutOf(policies);
    this.base = this.arena.alloc(this.layout.size);
  }

  /**
   * Decide with `policies` from `t` on, after decisions with {@link ScopeRecord.decidedWith}: each
   * rate policy's backlog is carried over to its emission interval (docs/memory-store.md,
   * "Overridden limits"), and the quiet time follows it. Counters, leases and blocks need nothing.
   */
  decideWith(policies: readonly Policy[], t: number): void {
    const previous = this.decidedWith;
    this.decidedWith = policies;
    const { base } = this;
    const { offsets } = this.layout;
    const m = this.arena.mem;
    for (let k = 0; k < offsets.length; k++) {
      const before = previous[k];
      const after = policies[k];
      if (before?.kind !== 'rate' || after?.kind !== 'rate') continue;
      const s = base + offsets[k]!;
      gcraCarry(m, s, before, after, t);
      const fresh = gcraFreshAt(m, s);
      if (fresh > (m[base + QUIET] as number)) m[base + QUIET] = fresh;
    }
  }

  /** Give the block and every ring and lease block back; leases taken before are void. */
  drop(): void {
    const { arena, base, layout } = this;
    const { policies, offsets } = layout;
    for (let k = 0; k < policies.length; k++) freeState(policies[k]!, arena, base + offsets[k]!);
    arena.free(base, layout.size);
    this.base = -1;
    this.generation++;
  }
}

/** Records by key, each key a chain with one record per policy list, and the sweep's place. */
export class KeyedRecords<T = ScopeRecord> {
  readonly map = new Map<string, T>();
  /** The sweep's place in `map`; null when its next pass starts from the first key. */
  cursor: MapIterator<[string, T]> | null = null;
}

/**
 * Everything held for one client id; itself the record of its first account (most clients act for
 * one), so the client map leads straight to it.
 */
export class ClientEntry extends ScopeRecord {
  /** The account-level records other than the entry's own, by account code; null while few. */
  accounts: KeyedRecords | null = null;
  /** By account code, then resource: two lookups rather than a key concatenated per decision. */
  resources: KeyedRecords<KeyedRecords> | null = null;

  constructor(
    readonly clientId: string,
    arena: Arena,
  ) {
    super(arena);
  }

  get empty(): boolean {
    return (
      this.base === -1 &&
      this.next === null &&
      this.accounts === null &&
      (this.resources === null || this.resources.map.size === 0)
    );
  }
}

// Account-level records a client holds in its entry's chain besides the entry's own; one more
// moves them all to a map by account code.
const ACCOUNTS_IN_CHAIN = 4;

export function findAccountRecord(
  entry: ClientEntry,
  accountCode: string,
  policies: readonly Policy[],
): ScopeRecord | null {
  if (
    entry.accountCode === accountCode &&
    samePolicies(entry.policies, policies) &&
    entry.base !== -1
  ) {
    return entry;
  }
  // Every record in a chain holds a block: the sweep unlinks those it drops.
  const { accounts } = entry;
  let r = accounts === null ? entry.next : (accounts.map.get(accountCode) ?? null);
  for (; r !== null; r = r.next) {
    if (r.accountCode === accountCode && samePolicies(r.policies, policies)) return r;
  }
  return null;
}

export function findResourceRecord(
  entry: ClientEntry,
  accountCode: string,
  resource: string,
  policies: readonly Policy[],
): ScopeRecord | null {
  let r = entry.resources?.map.get(accountCode)?.map.get(resource) ?? null;
  for (; r !== null; r = r.next) if (samePolicies(r.policies, policies)) return r;
  return null;
}

/** In the entry's chain while it holds at most ACCOUNTS_IN_CHAIN, then in the map by code. */
export function addAccountRecord(
  entry: ClientEntry,
  accountCode: string,
  record: ScopeRecord,
): void {
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

export function addResourceRecord(
  entry: ClientEntry,
  accountCode: string,
  resource: string,
  record: ScopeRecord,
): void {
  entry.resources ??= new KeyedRecords();
  let account = entry.resources.map.get(accountCode);
  if (account === undefined) {
    account = new KeyedRecords();
    entry.resources.map.set(accountCode, account);
  }
  record.next = account.map.get(resource) ?? null;
  account.map.set(resource, record);
}

/**
 * Drop every record of `accountCode` under the entry, under whichever policy list: its
 * account-level records and every resource's. Returns how many were dropped.
 */
export function dropAccountRecords(entry: ClientEntry, accountCode: string): number {
  let dropped = 0;
  if (entry.base !== -1 && entry.accountCode === accountCode) {
    entry.drop();
    dropped++;
  }
  let previous: ScopeRecord = entry;
  for (let r = entry.next; r !== null; r = r.next) {
    if (r.accountCode === accountCode) {
      r.drop();
      dropped++;
      previous.next = r.next;
    } else previous = r;
  }
  const { accounts, resources } = entry;
  if (accounts !== null) {
    dropped += dropChain(accounts.map.get(accountCode));
    accounts.map.delete(accountCode);
    // None left: the next accounts go in the chain again, as after a sweep.
    if (accounts.map.size === 0) entry.accounts = null;
  }
  const account = resources?.map.get(accountCode);
  if (account !== undefined) {
    for (const first of account.map.values()) dropped += dropChain(first);
    resources!.map.delete(accountCode);
  }
  return dropped;
}

/** Drop the records of one resource of `accountCode`, under whichever policy list; how many. */
export function dropResourceRecords(
  entry: ClientEntry,
  accountCode: string,
  resource: string,
): number {
  const resources = entry.resources;
  const account = resources?.map.get(accountCode);
  const first = account?.map.get(resource);
  if (first === undefined) return 0;
  account!.map.delete(resource);
  if (account!.map.size === 0) resources!.map.delete(accountCode);
  return dropChain(first);
}

function dropChain(first: ScopeRecord | undefined): number {
  let dropped = 0;
  for (let r: ScopeRecord | null = first ?? null; r !== null; r = r.next) {
    r.drop();
    dropped++;
  }
  return dropped;
}
