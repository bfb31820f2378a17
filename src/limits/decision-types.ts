/**
 * The types of a limiter's answer: {@link Decision}, an {@link AdmittedDecision} or a
 * {@link RefusedDecision}, and the {@link ShadowRefusal} an admission may carry. In a file of their
 * own so that `channels.ts`, which publishes decisions, need not import `decision.ts`, which makes
 * them and reports through `channels.ts`.
 * @module
 */
import type { Policy } from './policy.js';
import type { PolicyStatus, RefusalReason } from './store.js';

/** The request may proceed. Call `release()` when it ends, however it ends. */
export interface AdmittedDecision {
  /** Discriminant. */
  readonly allowed: true;
  /** Every policy that applied, with what remains; empty when checked with `{ statuses: false }`. */
  readonly statuses: readonly PolicyStatus[];
  /** The time of the decision (ms). */
  readonly now: number;
  /**
   * Give back the concurrency lease; idempotent. Bound, and the same function on every read, so
   * it may be a callback (`res.once('close', decision.release)`). With an asynchronous store it
   * returns the store's promise, already handled (a lease not taken back expires at its TTL).
   */
  readonly release: () => void;
  /**
   * Present only when policies in shadow mode would have refused the request (the limiter's
   * `shadow` option): the refusal it escaped, as an enforcing limiter would have announced it.
   * The request is admitted and counted all the same.
   */
  readonly shadow?: ShadowRefusal | undefined;
}

/**
 * What policies in shadow mode would have refused: the refusal an admitted request escaped, the
 * decision `check` would have made had every policy enforced (docs/limits.md, "Shadow mode").
 */
export interface ShadowRefusal {
  /** The policy that would have refused (the one that frees up last); compare by `name`. */
  readonly policy: Policy;
  /** `'limit'`: it was full; `'blocked'`: it still held a block from when it enforced. */
  readonly reason: 'limit' | 'blocked';
  /** The Retry-After the refusal would have announced, whole seconds >= 1. */
  readonly retryAfterSeconds: number;
  /** The instant (ms) a retry would have been admitted: `now + retryAfterSeconds * 1000`. */
  readonly retryAt: number;
}

/** The request must be answered with 429 and not processed. */
export interface RefusedDecision {
  /** Discriminant. */
  readonly allowed: false;
  /** Whole seconds, >= 1: a retry after this long is admitted if nothing else arrives. */
  readonly retryAfterSeconds: number;
  /** The instant (ms) a retry may be sent: `now + retryAfterSeconds * 1000`. */
  readonly retryAt: number;
  /**
   * The limit that was hit; absent for `capacity` and `unavailable`. The limiter's frozen copy of
   * the policy, not the object given: compare by `name`, unique within a list.
   */
  readonly policy: Policy | undefined;
  /** Why: a full limit, a block, the store's key cap, or a store outage failing closed. */
  readonly reason: RefusalReason;
  /** Every policy that applied, unchanged by this request. */
  readonly statuses: readonly PolicyStatus[];
  /** The time of the decision (ms). */
  readonly now: number;
}

/** A limiter's answer. */
export type Decision = AdmittedDecision | RefusedDecision;
