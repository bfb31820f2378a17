/**
 * How the memory store gives memory back: an incremental sweep of idle records and a shrink of
 * mostly empty arenas (docs/memory-store.md).
 * @module
 */
import { type Arena, copySlots } from './arena.js';
import { leaseCount, pruneLeases } from './lease-set.js';
import { moveState } from './policy-kinds.js';
import { type ClientEntry, type KeyedRecords, QUIET, type ScopeRecord } from './records.js';

// Keys of one of a client's maps examined per step, so a step costs alike however much it holds.
const KEYS_PER_STEP = 8;

/** The quiet time is exact for every state but the leases: one slot tells most busy records. */
function isQuiet(m: Float64Array, record: ScopeRecord, t: number): boolean {
  const { base } = record;
  if ((m[base + QUIET] as number) > t) return false;
  const { policies, offsets } = record.layout;
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i]!;
    if (policy.kind !== 'concurrency') continue;
    const s = base + offsets[i]!;
    pruneLeases(m, s, t, policy);
    if (leaseCount(m, s) > 0) return false;
  }
  return true;
}

/** The sweep over the clients of one store: a cursor that cycles through them. */
export class Sweep {
  readonly #clients: Map<string, ClientEntry>;
  #cursor: MapIterator<ClientEntry>;
  #decision = 0;
  #dropped = 0;

  constructor(clients: Map<string, ClientEntry>) {
    this.#clients = clients;
    this.#cursor = clients.values();
  }

  /**
   * Up to `count` steps, one client each; stops once every client was examined whole in a row.
   * Records the decision under way found are kept. Returns the records dropped.
   */
  run(t: number, count: number, decision: number): number {
    this.#decision = decision;
    this.#dropped = 0;
    let whole = 0;
    for (let n = 0; n < count && whole < this.#clients.size; n++) {
      let next = this.#cursor.next();
      if (next.done === true) {
        this.#cursor = this.#clients.values();
        next = this.#cursor.next();
        if (next.done === true) break;
      }
      const entry = next.value;
      const examinedWhole = this.#sweepClient(entry, t);
      if (entry.empty) this.#clients.delete(entry.clientId);
      else whole = examinedWhole ? whole + 1 : 0;
    }
    return this.#dropped;
  }

  /** One step on a client; true when it examined every record of the client. */
  #sweepClient(entry: ClientEntry, t: number): boolean {
    if (entry.base !== -1 && this.#droppable(entry, t)) this.#drop(entry);
    let previous: ScopeRecord = entry;
    for (let r = entry.next; r !== null; r = r.next) {
      if (this.#droppable(r, t)) {
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

  #sweepChains(records: KeyedRecords, t: number): boolean {
    const { map } = records;
    return stepThrough(records, (key, first) => {
      let head: ScopeRecord | null = first;
      let previous: ScopeRecord | null = null;
      for (let r: ScopeRecord | null = first; r !== null; r = r.next) {
        if (this.#droppable(r, t)) {
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

  // The sweep at the cap runs while a plan's records are found: it must not drop one just found.
  #droppable(record: ScopeRecord, t: number): boolean {
    return record.decision !== this.#decision && isQuiet(record.arena.mem, record, t);
  }

  #drop(record: ScopeRecord): void {
    record.drop();
    this.#dropped++;
  }
}

/** Visit up to KEYS_PER_STEP keys from the cursor; true when one step examined every key in full. */
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
  // A pass from the first key that saw as many keys as there were is over too (a step adds none).
  const ended = n < KEYS_PER_STEP || (fresh && n >= total);
  if (ended) records.cursor = null;
  return ended && fresh && complete;
}

// Shrink from 256 KB in all, and only while at most 2 MB is used: the copy takes a few ms.
const SHRINK_FROM = 32_768;
const SHRINK_AT_MOST = 1 << 18;

/** Whether most of the arenas' room is free again, and what is used is small enough to copy. */
export function shrinkDue(arenas: readonly Arena[]): boolean {
  let used = 0;
  let length = 0;
  for (const arena of arenas) {
    used += arena.usedSlots;
    length += arena.mem.length;
  }
  return length >= SHRINK_FROM && used * 4 <= length && used <= SHRINK_AT_MOST;
}

/**
 * Copy every live record, then its rings and lease blocks, into a smaller array of its arena. Call
 * only when no offset is held outside the records.
 */
export function shrink(
  arenas: readonly Arena[],
  clients: Iterable<ClientEntry>,
  minSlots: number,
): void {
  const copies = new Map(arenas.map((arena) => [arena, new ArenaCopy(arena, minSlots)]));
  const move = (record: ScopeRecord) => copies.get(record.arena)!.move(record);
  const moveChains = (records: KeyedRecords): void => {
    for (const first of records.map.values()) {
      for (let r: ScopeRecord | null = first; r !== null; r = r.next) move(r);
    }
  };
  for (const entry of clients) {
    for (let r: ScopeRecord | null = entry; r !== null; r = r.next) if (r.base !== -1) move(r);
    if (entry.accounts !== null) moveChains(entry.accounts);
    if (entry.resources !== null) {
      for (const account of entry.resources.map.values()) moveChains(account);
    }
  }
  for (const copy of copies.values()) copy.commit();
}

/** The smaller array an arena's live blocks are copied into. */
class ArenaCopy {
  readonly #from: Float64Array;
  readonly #to: Float64Array;
  #top = 0;

  constructor(
    readonly arena: Arena,
    minSlots: number,
  ) {
    this.#from = arena.mem;
    this.#to = new Float64Array(Math.max(minSlots, 2 * arena.usedSlots));
  }

  move(record: ScopeRecord): void {
    const { base, layout } = record;
    const { policies, offsets } = layout;
    let top = this.#top;
    copySlots(this.#from, base, layout.size, this.#to, top);
    record.base = top;
    top += layout.size;
    for (let k = 0; k < policies.length; k++) {
      top = moveState(policies[k]!, this.#from, this.#to, record.base + offsets[k]!, top);
    }
    this.#top = top;
  }

  /** Hand the copy to the arena: every offset outside the records is void from here. */
  commit(): void {
    this.arena.replace(this.#to, this.#top);
  }
}
