/**
 * A limiter's answer, {@link AdmittedDecision} or {@link RefusedDecision}, from a store's outcome.
 * @module
 */
import { reportLeaseRelease, reportReleaseFailure } from './channels.js';
import type {
  AdmittedDecision,
  Decision,
  RefusedDecision,
  ShadowRefusal,
} from './decision-types.js';
import type { Policy } from './policy.js';
import type {
  AdmittedOutcome,
  LeaseToken,
  LimitStore,
  OutcomeStatuses,
  PolicyStatus,
  RefusalReason,
  RefusedOutcome,
  StoreOutcome,
} from './store.js';
import { admissionWithoutStatuses, NO_STATUSES } from './store.js';

/** The decision of `store`'s outcome; without `statuses` asked for, an admission has none. @internal */
export function toDecision(store: LimitStore, outcome: StoreOutcome, statuses: boolean): Decision {
  if (!outcome.allowed) return new Refused(outcome);
  return new Admitted(statuses ? outcome : NO_STATUSES, outcome, store);
}

/**
 * {@link toDecision}, with the refusal an admission escaped: for limiters with policies in shadow
 * mode only, so that the others read no more of an outcome than before. @internal
 */
export function toShadowDecision(
  store: LimitStore,
  outcome: StoreOutcome,
  statuses: boolean,
): Decision {
  if (!outcome.allowed || outcome.shadow === undefined) return toDecision(store, outcome, statuses);
  const { policy, reason, retryAfterSeconds } = outcome.shadow;
  const shadow: ShadowRefusal = Object.freeze({
    policy,
    reason,
    retryAfterSeconds,
    retryAt: outcome.now + retryAfterSeconds * 1000,
  });
  return new ShadowAdmitted(statuses ? outcome : NO_STATUSES, outcome, store, shadow);
}

/** An admission without statuses or lease (a store outage that fails open). @internal */
export function admittedUnlimited(store: LimitStore, now: number): AdmittedDecision {
  return new Admitted(NO_STATUSES, admissionWithoutStatuses(now, undefined), store);
}

/** A refusal because the store could not decide (a store outage that fails closed). @internal */
export function refusedUnavailable(now: number, retryAfterSeconds: number): RefusedDecision {
  return new Refused({
    allowed: false,
    now,
    reason: 'unavailable',
    retryAfterSeconds,
    policy: undefined,
    resource: undefined,
    policies: NO_STATUSES.policies,
    values: NO_STATUSES.values,
  });
}

/** Whether an admission holds a concurrency lease not given back yet. @internal */
export function holdsLease(decision: AdmittedDecision): boolean {
  return Admitted.holdsLease(decision);
}

/**
 * The compact data a decision of this module builds its `statuses` from, the same policies and
 * numbers, for a reader that would only walk them (the RateLimit fields); `undefined` for any other
 * decision. @internal
 */
export function compactStatuses(decision: object): OutcomeStatuses | undefined {
  return WithStatuses.compact(decision);
}

/** Statuses built from an outcome's compact data on first read: most callers never read them. */
abstract class WithStatuses {
  #statuses: readonly PolicyStatus[] | undefined;
  readonly #outcome: OutcomeStatuses;

  constructor(outcome: OutcomeStatuses) {
    this.#outcome = outcome;
  }

  static compact(decision: object): OutcomeStatuses | undefined {
    return #outcome in decision ? decision.#outcome : undefined;
  }

  get statuses(): readonly PolicyStatus[] {
    if (this.#statuses === undefined) {
      const { policies, values } = this.#outcome;
      this.#statuses = policies.map((policy, k) => ({
        policy,
        remaining: values[2 * k] as number,
        resetAfterMs: values[2 * k + 1] as number,
      }));
    }
    return this.#statuses;
  }
}

const NOTHING_TO_RELEASE = (): void => undefined;

class Admitted extends WithStatuses implements AdmittedDecision {
  readonly allowed = true as const;
  readonly now: number;
  #lease: LeaseToken | undefined;
  readonly #store: LimitStore;
  #release: (() => void) | undefined = undefined;

  constructor(statuses: OutcomeStatuses, outcome: AdmittedOutcome, store: LimitStore) {
    super(statuses);
    this.now = outcome.now;
    this.#lease = outcome.lease;
    this.#store = store;
  }

  static holdsLease(decision: AdmittedDecision): boolean {
    return #lease in decision && decision.#lease !== undefined;
  }

  // Made on first read and kept, so that removeEventListener finds the same function.
  get release(): () => void {
    let release = this.#release;
    if (release === undefined) {
      release = this.#lease === undefined ? NOTHING_TO_RELEASE : this.#giveBack.bind(this);
      this.#release = release;
    }
    return release;
  }

  // Once per decision: a second release on a networked store would still cost a round trip.
  #giveBack(): Promise<void> | undefined {
    const lease = this.#lease;
    if (lease === undefined) return undefined;
    this.#lease = undefined;
    const store = this.#store;
    const done = store.release(lease);
    reportLeaseRelease(this, store);
    if (!(done instanceof Promise)) return undefined;
    // A failed release is bounded by the lease TTL: never an unhandled rejection.
    done.catch((error: unknown) => reportReleaseFailure(store, error));
    return done;
  }
}

/** An admission that policies in shadow mode would have refused. */
class ShadowAdmitted extends Admitted {
  readonly shadow: ShadowRefusal;

  constructor(
    statuses: OutcomeStatuses,
    outcome: AdmittedOutcome,
    store: LimitStore,
    shadow: ShadowRefusal,
  ) {
    super(statuses, outcome, store);
    this.shadow = shadow;
  }
}

class Refused extends WithStatuses implements RefusedDecision {
  readonly allowed = false as const;
  readonly retryAfterSeconds: number;
  readonly retryAt: number;
  readonly policy: Policy | undefined;
  readonly reason: RefusalReason;
  readonly now: number;

  constructor(outcome: RefusedOutcome) {
    super(outcome);
    this.retryAfterSeconds = outcome.retryAfterSeconds;
    this.retryAt = outcome.now + outcome.retryAfterSeconds * 1000;
    this.policy = outcome.policy;
    this.reason = outcome.reason;
    this.now = outcome.now;
  }
}
