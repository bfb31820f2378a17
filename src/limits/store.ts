/**
 * The contract between the engine and a store: a {@link Plan} in, applied atomically (all or
 * nothing), a {@link StoreOutcome} out.
 * @module
 */
import type { Policy } from './policy.js';

/** The policies of one scope that apply to one request. */
export interface PlanScope {
  /** The client id the request is attributed to. */
  readonly clientId: string;
  /** The account code the request is attributed to. */
  readonly accountCode: string;
  /** `''` for the client and account as a whole; otherwise the canonical key of a resource. */
  readonly resource: string;
  /** Every policy of the scope, in a fixed order; state is kept per position. */
  readonly policies: readonly Policy[];
  /** Positions in `policies` that apply to this request (an exemption leaves one out). */
  readonly active: readonly number[];
  /**
   * Positions in `policies` in shadow mode, when any (see {@link Plan.shadow}): `shadow[i]` true
   * when the policy at position `i` is. Absent: every policy enforces.
   */
  readonly shadow?: readonly boolean[] | undefined;
  /**
   * The list whose state the scope counts in, when `policies` are an override of it (a client's
   * limits raised or lowered at runtime): the same length and, position by position, the same
   * kind and, for a window, the same `windowMs`. The store keeps the scope's state where it keeps
   * the state of `state` itself, and decides with the limits of `policies`: counters, leases and
   * blocks carry over from one to the other, both ways. A rate policy's backlog carries over: at
   * the first decision at `t` under an emission interval `next` after one under `previous`, a
   * theoretical arrival time `tat > t` becomes `t + ceil((tat - t) / previous * next * 1024) / 1024`
   * (a peek works on a copy and keeps nothing). Absent: `policies` is its own state's list.
   */
  readonly state?: readonly Policy[] | undefined;
}

/** What one request asks of the store. */
export interface Plan {
  /** Scopes in a fixed order; decisions name policies by their position here. */
  readonly scopes: readonly PlanScope[];
  /**
   * `false`: an admitted outcome may leave `policies` and `values` empty, sparing the store the
   * work of counting them. A refused outcome reports them either way.
   * @defaultValue true
   */
  readonly statuses?: boolean;
  /**
   * Admissions the request counts at once in every window and rate policy it falls under: a whole
   * number from 1, at most each such policy's limit (window) or burst (rate); the engine checks
   * that. A throttle takes one lease whatever the cost (docs/limits.md says why).
   * @defaultValue 1
   */
  readonly cost?: number;
  /**
   * `true`: decide as `apply` would and report every active policy's status as it is, but record
   * nothing: no admission, no block started, extended or cleared, no lease taken.
   * @defaultValue false
   */
  readonly peek?: boolean;
  /**
   * `true`: some scope names policies in shadow mode (its `shadow`). Only the enforcing policies
   * may refuse: their refusal is the outcome, with its blocks, as without the shadow ones. When
   * they admit, the request is admitted and recorded in every active policy, shadow ones
   * included, and a shadow policy that would have refused it is reported in the outcome's
   * `shadow`: what the store would answer if every active policy enforced. A shadow policy is
   * never blocked.
   * @defaultValue false
   */
  readonly shadow?: boolean;
}

/** What a store's `reset` clears: a client and account, or one resource of theirs. */
export interface ResetScope {
  /** The client id. */
  readonly clientId: string;
  /** The account code. */
  readonly accountCode: string;
  /**
   * The canonical key of one resource (a {@link PlanScope}'s `resource`): only that resource's
   * state is cleared, under whichever policy list. Absent: every state of the client and account,
   * its own and its resources'.
   */
  readonly resource?: string;
}

/** What a `reset` cleared. */
export interface ResetOutcome {
  /**
   * Scope states removed: 0 when the store held nothing for the scope. A store keeps idle state
   * for a while (until swept, or until its key expires), so the count says what was held, not
   * what was in use.
   */
  readonly cleared: number;
}

/** The state of one policy after a decision. */
export interface PolicyStatus {
  /** The policy: from a limiter, its frozen copy of the policy given, not the same object. */
  readonly policy: Policy;
  /** Requests it would still admit at once. */
  readonly remaining: number;
  /** Milliseconds until its full quota is available again (0 when it is). */
  readonly resetAfterMs: number;
}

/**
 * The active policies' state, in plan order: `policies[k]` has `values[2k]` remaining and its full
 * quota back in `values[2k + 1]` ms. Compact, so a decision allocates little; the limiter makes
 * {@link PolicyStatus} objects only when read.
 */
export interface OutcomeStatuses {
  /** The active policies, in plan order. */
  readonly policies: readonly Policy[];
  /** Remaining and reset-after (ms) of each policy, interleaved. */
  readonly values: readonly number[];
}

/** Why a request was refused. */
export type RefusalReason =
  /** A policy has no room. */
  | 'limit'
  /** An earlier refusal blocked the scope until the instant it announced. */
  | 'blocked'
  /** The store holds as many keys as it may and this request needs a new one. */
  | 'capacity'
  /** The store could not decide and the limiter refuses (`outage: 'closed'`): a 503, never a 429. */
  | 'unavailable';

/** A store's answer to a plan. */
export type StoreOutcome = AdmittedOutcome | RefusedOutcome;

/** The plan was admitted and recorded. */
export interface AdmittedOutcome extends OutcomeStatuses {
  /** Discriminant. */
  readonly allowed: true;
  /** The time the store decided at (ms). */
  readonly now: number;
  /** The leases taken, to give back with the store's `release`; absent when none. */
  readonly lease: LeaseToken | undefined;
  /**
   * With a {@link Plan.shadow} plan: the refusal the shadow policies would have made, had every
   * active policy enforced; absent when none would have refused.
   */
  readonly shadow?: ShadowOutcome | undefined;
}

/** What shadow policies would have refused: the refusal, had every active policy enforced. */
export interface ShadowOutcome {
  /** `'limit'`, or `'blocked'` for a block a shadow policy still holds from when it enforced. */
  readonly reason: 'limit' | 'blocked';
  /** The Retry-After the refusal would have announced, in whole seconds (>= 1). */
  readonly retryAfterSeconds: number;
  /** The policy that would have refused (the one that frees up last). */
  readonly policy: Policy;
  /** Its resource (`''` for none). */
  readonly resource: string;
}

/** The statuses of an admission that reports none. Shared and frozen. */
export const NO_STATUSES: OutcomeStatuses = Object.freeze({
  policies: Object.freeze([]),
  values: Object.freeze([]),
});

/** An admission at `now` that reports no statuses (see {@link NO_STATUSES}). */
export function admissionWithoutStatuses(
  now: number,
  lease: LeaseToken | undefined,
): AdmittedOutcome {
  return { allowed: true, now, lease, policies: NO_STATUSES.policies, values: NO_STATUSES.values };
}

/** The plan was refused; nothing was recorded. */
export interface RefusedOutcome extends OutcomeStatuses {
  /** Discriminant. */
  readonly allowed: false;
  /** The time the store decided at (ms). */
  readonly now: number;
  /** Why. */
  readonly reason: RefusalReason;
  /** Whole seconds to wait, >= 1: a retry after that long is admitted if nothing else arrives. */
  readonly retryAfterSeconds: number;
  /** The policy that refused (the one that frees up last); absent for `capacity` and `unavailable`. */
  readonly policy: Policy | undefined;
  /** The refusing policy's resource (`''` for none); absent for `capacity` and `unavailable`. */
  readonly resource: string | undefined;
}

/** An opaque handle on the leases of one admitted request. */
export interface LeaseToken {
  /** Brand: only the store that issued it reads the rest. */
  readonly store: object;
}

/** What every store has. */
export interface LimitStoreBase {
  /** True when `apply` and `release` answer synchronously. */
  readonly synchronous: boolean;
}

/** A store that answers at once (the memory store). */
export interface SyncLimitStore extends LimitStoreBase {
  /** Synchronous. */
  readonly synchronous: true;
  /** Apply a plan at `now` (ms), atomically. Never throws for any plan the engine builds. */
  apply(plan: Plan, now: number): StoreOutcome;
  /** Give back the leases of an admitted request. Idempotent; needs no clock. */
  release(lease: LeaseToken): void;
  /**
   * Clear the counters, leases and blocks of a scope, atomically: its next request is decided
   * afresh, and a lease taken before is void (giving it back changes nothing). Optional, so that a
   * store written before it still works; the limiter's `reset` needs it.
   */
  reset?(scope: ResetScope): ResetOutcome;
}

/** A store that answers with promises (a networked store). */
export interface AsyncLimitStore extends LimitStoreBase {
  /** Asynchronous. */
  readonly synchronous: false;
  /**
   * Apply a plan at `now` (ms), atomically. In an outage it rejects with a typed error of its own
   * and decides nothing: the limiter's `outage` option, or its caller, decides.
   */
  apply(plan: Plan, now: number): Promise<StoreOutcome>;
  /** Give back the leases of an admitted request. Idempotent; needs no clock. */
  release(lease: LeaseToken): Promise<void>;
  /**
   * Clear the counters, leases and blocks of a scope, atomically (see {@link SyncLimitStore.reset}).
   * In an outage it rejects with a typed error of its own.
   */
  reset?(scope: ResetScope): Promise<ResetOutcome>;
}

/** Any store. */
export type LimitStore = SyncLimitStore | AsyncLimitStore;

/**
 * Steps per millisecond of the stores' time grid: a power of two, so times on it add and compare
 * exactly in doubles (up to 2^43 ms, the year 2248).
 */
export const STEPS_PER_MS = 1024;

/**
 * A time rounded down to the {@link STEPS_PER_MS} grid; down, so a retry at `t + R * 1000` from a
 * finer clock is not before the instant announced at `t`.
 * @param ms - a time in ms
 */
export function resolveTime(ms: number): number {
  return Math.floor(ms * STEPS_PER_MS) / STEPS_PER_MS;
}

/**
 * Whole seconds to announce for a wait of `ms` milliseconds: `max(1, ceil(ms / 1000))`
 * (Retry-After is an integer, RFC 9110 delay-seconds, never 0). Exact: no tolerance.
 */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * Whole seconds a refusal at `t` announces for an admission at `at` (ms): the least `R >= 1` with
 * `t + R * 1000` (in doubles) not before `at`; `ceil((at - t) / 1000)` alone may be one off when
 * rounded.
 * @param at - the instant the request is admitted at, if nothing else arrives (ms)
 * @param t - the time of the refusal (ms)
 */
export function announcedSeconds(at: number, t: number): number {
  const seconds = retryAfterSeconds(at - t);
  if (t + seconds * 1000 < at) return seconds + 1;
  return seconds > 1 && t + (seconds - 1) * 1000 >= at ? seconds - 1 : seconds;
}
