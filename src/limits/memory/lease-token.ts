/**
 * An admission of the memory store: the outcome and its lease token in one object.
 * @module
 */
import type { Policy } from '../policy.js';
import {
  type AdmittedOutcome,
  type LeaseToken,
  NO_STATUSES,
  type ShadowOutcome,
} from '../store.js';
import { leaseRelease } from './lease-set.js';
import type { ScopeRecord } from './records.js';

/** Where one concurrency policy holds the lease. */
interface Hold {
  readonly record: ScopeRecord;
  /** The record's generation when the lease was taken. */
  readonly generation: number;
  /** Offset of the policy's slots from the record's base. */
  readonly offset: number;
}

/**
 * An admitted plan's outcome and lease token. Where the lease is held is private, so the outcome
 * shows, copies and compares as plain data.
 */
export class MemoryAdmission implements AdmittedOutcome, LeaseToken {
  readonly allowed = true as const;
  policies: readonly Policy[] = NO_STATUSES.policies;
  values: readonly number[] = NO_STATUSES.values;
  /** Itself once it holds a lease: the token to give back. */
  lease: MemoryAdmission | undefined = undefined;
  /** Set only on an admission a shadow policy would have refused: no field of every admission. */
  declare shadow?: ShadowOutcome;
  #id = 0;
  // The first hold is kept in fields, not an object: most admissions hold one lease or none.
  /** The record of the first policy holding the lease; null while none is held, or given back. */
  #record: ScopeRecord | null = null;
  #generation = 0;
  #offset = 0;
  #more: Hold[] | null = null;

  readonly #store: object;

  constructor(
    store: object,
    readonly now: number,
  ) {
    this.#store = store;
  }

  /** The store that admitted it: the lease token's brand, not a field of the outcome. */
  get store(): object {
    return this.#store;
  }

  /** A check of the private brand: reads nothing, so a revoked proxy is simply not a lease. */
  static isLeaseOf(token: unknown, store: object): token is MemoryAdmission {
    return typeof token === 'object' && token !== null && #store in token && token.#store === store;
  }

  /** The lease id, >= 1; 0 while the admission holds no lease. */
  get leaseId(): number {
    return this.#id;
  }

  /** Hold the lease in one more concurrency policy; the first hold takes `nextId` (answers true). */
  hold(nextId: number, record: ScopeRecord, offset: number): boolean {
    if (this.#id === 0) {
      this.#id = nextId;
      this.#record = record;
      this.#generation = record.generation;
      this.#offset = offset;
      this.lease = this;
      return true;
    }
    this.#more ??= [];
    this.#more.push({ record, generation: record.generation, offset });
    return false;
  }

  /**
   * Give the leases back, once. A hold whose record was dropped since is skipped: its block may
   * belong to another scope now.
   */
  giveBack(): void {
    const record = this.#record;
    if (record === null) return;
    this.#record = null;
    const more = this.#more;
    this.#more = null;
    const id = this.#id;
    if (record.generation === this.#generation) {
      leaseRelease(record.arena.mem, record.base + this.#offset, id);
    }
    if (more === null) return;
    for (const hold of more) {
      if (hold.record.generation === hold.generation) {
        leaseRelease(hold.record.arena.mem, hold.record.base + hold.offset, id);
      }
    }
  }
}
