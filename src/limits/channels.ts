/**
 * The `node:diagnostics_channel` channels (where the runtime has the module: elsewhere nothing is
 * published) of the limits, their messages and the functions that
 * publish them. No message is built while a channel has no subscriber (docs/observability.md).
 * @module
 */
import { diagnosticsChannel } from '../internal/node-builtin.js';
import type { AdmittedDecision, Decision } from './decision-types.js';
import type { OutageMode } from './outage-mode.js';
import type { LimitStore, RefusalReason } from './store.js';

/**
 * The names of the limits' diagnostics channels, all under `api-conventions:limits:`. Subscribe
 * with `diagnostics_channel.subscribe(limitsChannels.decision, listener)`.
 */
export const limitsChannels = Object.freeze({
  /** Every decision of `limiter.check`: a {@link DecisionMessage}. */
  decision: 'api-conventions:limits:decision',
  /** A store that failed to decide or to take a lease back: a {@link StoreFailureMessage}. */
  storeFailure: 'api-conventions:limits:store-failure',
  /** A lease given back when its request ended: a {@link LeaseReleaseMessage}. */
  leaseRelease: 'api-conventions:limits:lease-release',
  /** A lease that ran out without being given back: a {@link LeaseExpiryMessage}. */
  leaseExpiry: 'api-conventions:limits:lease-expiry',
} as const);

/**
 * What a decision did: `'admitted'`, `'refused'`, or `'shadow_refused'`: admitted, but policies
 * in shadow mode would have refused it (the limiter's `shadow` option); the message's `policy`,
 * `reason` and `retryAfterSeconds` are then those of the refusal it escaped.
 */
export type DecisionOutcome = 'admitted' | 'refused' | 'shadow_refused';

/** The request a decision was made for, as the limiter read it. */
export interface DecisionRequest {
  /** The client id. */
  readonly clientId: string;
  /** The account code. */
  readonly accountCode: string;
  /** The account type, when the request named one. */
  readonly accountType: string | undefined;
  /** The HTTP method. */
  readonly method: string;
  /** The path as given (not canonicalised). */
  readonly path: string;
}

/** A message of {@link limitsChannels}`.decision`: one decision of `limiter.check`. */
export interface DecisionMessage {
  /** What was decided. */
  readonly outcome: DecisionOutcome;
  /** The name of the policy that refused; undefined for an admission, `capacity` and `unavailable`. */
  readonly policy: string | undefined;
  /** Why it was refused; undefined for an admission. */
  readonly reason: RefusalReason | undefined;
  /** The Retry-After announced, in whole seconds; undefined for an admission. */
  readonly retryAfterSeconds: number | undefined;
  /** Whether the admission holds a concurrency lease, given back by `release()`. */
  readonly lease: boolean;
  /**
   * How long `check` took, in ms, from its call to its answer (a store's round trip included),
   * read from `performance.now()` only while the channel has a subscriber.
   */
  readonly durationMs: number;
  /** Who asked for what. */
  readonly request: DecisionRequest;
  /** The decision itself, as `check` answers it. */
  readonly decision: Decision;
}

/** A message of {@link limitsChannels}`.storeFailure`: a store that failed. */
export interface StoreFailureMessage {
  /** `'apply'`: the store could not decide; `'release'`: it could not take a lease back. */
  readonly operation: 'apply' | 'release';
  /** What the store rejected with (a `RedisStoreError` for the Redis store). */
  readonly error: unknown;
  /**
   * For `'apply'`, what the limiter did (its `outage` option): `'reject'` (check rejected, its
   * caller decides), `'open'`, `'closed'` or `'fallback'`. Undefined for `'release'`: the lease
   * expires at its TTL.
   */
  readonly outage: OutageMode | undefined;
  /** The store that failed. */
  readonly store: LimitStore;
}

/** A message of {@link limitsChannels}`.leaseRelease`: a lease given back. */
export interface LeaseReleaseMessage {
  /** The decision whose lease was given back, once, by its `release()`. */
  readonly decision: AdmittedDecision;
  /** The store it was given back to. */
  readonly store: LimitStore;
}

/**
 * A message of {@link limitsChannels}`.leaseExpiry`: a store found a lease past its expiry, never
 * given back (its request outlived the lease TTL, or never called `release()`), and dropped it:
 * the memory store in a decision or its sweep, the Redis store in a decision that writes the
 * lease's scope back. Published on a microtask after the decision or sweep that found it.
 */
export interface LeaseExpiryMessage {
  /** The name of the concurrency policy that held the lease. */
  readonly policy: string;
  /** When the lease expired (ms, on the store's clock; the Redis server's with its `TIME`). */
  readonly expiredAt: number;
  /** When the store found it expired (ms): at or after `expiredAt`. */
  readonly foundAt: number;
}

/** The channel of decisions, published by `observeDecision`. @internal */
export const decisionChannel = diagnosticsChannel(limitsChannels.decision);
const storeFailures = diagnosticsChannel(limitsChannels.storeFailure);
const leaseReleases = diagnosticsChannel(limitsChannels.leaseRelease);
const leaseExpiries = diagnosticsChannel(limitsChannels.leaseExpiry);

/** Report a store's failure to decide, and what the limiter did. @internal */
export function reportApplyFailure(store: LimitStore, error: unknown, outage: OutageMode): void {
  if (!storeFailures.hasSubscribers) return;
  storeFailures.publish({
    operation: 'apply',
    error,
    outage,
    store,
  } satisfies StoreFailureMessage);
}

/** Report a store's failure to take a lease back. @internal */
export function reportReleaseFailure(store: LimitStore, error: unknown): void {
  if (!storeFailures.hasSubscribers) return;
  storeFailures.publish({
    operation: 'release',
    error,
    outage: undefined,
    store,
  } satisfies StoreFailureMessage);
}

/** Report a lease given back. @internal */
export function reportLeaseRelease(decision: AdmittedDecision, store: LimitStore): void {
  if (!leaseReleases.hasSubscribers) return;
  leaseReleases.publish({ decision, store } satisfies LeaseReleaseMessage);
}

/**
 * Whether anyone listens for lease expiries: a store that must read what to report asks first.
 * @internal
 */
export function leaseExpiriesWatched(): boolean {
  return leaseExpiries.hasSubscribers;
}

/**
 * Report a lease found expired. Published on a microtask: the store is in the middle of a
 * decision, which a subscriber that calls `check` again must not see.
 * @internal
 */
export function reportLeaseExpiry(policy: string, expiredAt: number, foundAt: number): void {
  if (!leaseExpiries.hasSubscribers) return;
  const message: LeaseExpiryMessage = { policy, expiredAt, foundAt };
  queueMicrotask(() => leaseExpiries.publish(message));
}
