/**
 * An admission of the memory store: the admitted outcome, and the token of its leases when it took
 * any. One object per admission, not two.
 * @module
 */
import type { Policy } from '../policy.js';
import { type AdmittedOutcome, type LeaseToken, NO_STATUSES } from '../store.js';
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
 * An admitted plan's outcome, and its lease token. Where the lease is held is private, so that the
 * outcome shows (and copies, and compares) as plain outcome data; a copy made by spreading it
 * still carries the lease in its `lease` field.
 */
export class MemoryAdmission implements AdmittedOutcome, LeaseToken {
  readonly allowed = true as const;
  policies: readonly Policy[] = NO_STATUSES.policies;
  values: readonly number[] = NO_STATUSES.values;
  /** Itself once it holds a lease: the token to give back. */
  lease: MemoryAdmission | undefined = undefined;
  #id = 0;
  // The first hold is kept in fields, not an object: most admissions hold one lease or none.
  /** The record of the first policy holding the lease; null while none is held, or given back. */
  #record: ScopeRecord | null = null;
  #generation = 0;
  #offset = 0;
  #more: Hold[] | null = null;

  readonly #store: object;

  /**
   * @param store - the store that admitted it
   * @param now - the time of the decision
   */
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

  /**
   * Whether `token` is a lease of `store`: a check of the private brand, which reads nothing of
   * the value (a revoked proxy, or one whose traps throw, is simply not a lease).
   */
  static isLeaseOf(token: unknown, store: object): token is MemoryAdmission {
    return typeof token === 'object' && token !== null && #store in token && token.#store === store;
  }

  /** The lease id, >= 1; 0 while the admission holds no lease. */
  get leaseId(): number {
    return this.#id;
  }

  /**
   * Hold the lease in one more concurrency policy's slots: under lease `nextId` in the first.
   * @param nextId - a lease id no other lease of the store has, taken only by the first hold
   * @param record - the policy's record
   * @param offset - offset of the policy's slots from the record's base
   * @returns whether `nextId` was taken
   */
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
   * Give the leases back, once: every later call does nothing. A hold whose record was dropped
   * since (its generation moved on) is skipped, since its block may belong to another scope now;
   * a lease that expired is no longer in its record, and lease ids are never reused.
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
