/**
 * The pacer's store: the client's own sends, kept exactly. A refusal tells the exact instant the
 * request may go, not a whole-second Retry-After, and blocks nothing: the client is not a server
 * announcing when to come back, it only needs to know when its next send is within the limits.
 * @module
 */
import type { Policy, RatePolicy, WindowPolicy } from '../limits/policy.js';
import {
  admissionWithoutStatuses,
  NO_STATUSES,
  type Plan,
  type PlanScope,
  type StoreOutcome,
  type SyncLimitStore,
} from '../limits/store.js';

/** The state of one policy in one scope: a window's send times, or a rate's theoretical arrival time. */
type PolicyState = { sends: number[] } | { tat: number };

/** Applies of a plan between two sweeps of idle scopes, which keeps the map bounded. */
const SWEEP_EVERY = 1024;

/** A synchronous limit store that admits exactly what the policies allow, and records no blocks. */
export class PacingStore implements SyncLimitStore {
  readonly synchronous = true;
  /** By scope (the resource key, `''` for the client as a whole), the state of each position. */
  readonly #scopes = new Map<string, Map<number, PolicyState>>();
  #applies = 0;
  #refusedUntil = Number.NaN;

  /** The exact instant (ms) the plan refused last may be admitted, if nothing else is sent first. */
  get refusedUntil(): number {
    return this.#refusedUntil;
  }

  apply(plan: Plan, now: number): StoreOutcome {
    if (++this.#applies % SWEEP_EVERY === 0) this.#sweep(now);
    let until = now;
    let policy: Policy | undefined;
    let resource: string | undefined;
    for (const scope of plan.scopes) {
      const states = this.#statesOf(scope.resource);
      for (const position of scope.active) {
        const own = scope.policies[position] as Policy;
        const at = earliest(own, stateOf(states, position, own), now);
        if (at > until) {
          until = at;
          policy = own;
          resource = scope.resource;
        }
      }
    }
    if (until > now) {
      this.#refusedUntil = until;
      return {
        allowed: false,
        now,
        reason: 'limit',
        retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)),
        policy,
        resource,
        ...NO_STATUSES,
      };
    }
    for (const scope of plan.scopes) record(scope, this.#statesOf(scope.resource), now);
    return admissionWithoutStatuses(now, undefined);
  }

  release(): void {
    // The pacer counts its requests in flight itself: this store holds no leases.
  }

  #statesOf(resource: string): Map<number, PolicyState> {
    let states = this.#scopes.get(resource);
    if (states === undefined) {
      states = new Map();
      this.#scopes.set(resource, states);
    }
    return states;
  }

  // A scope whose sends have all left their windows and whose rates are fresh again weighs on
  // nothing: it is dropped, so a client that touches many resources keeps a bounded map.
  #sweep(now: number): void {
    for (const [resource, states] of this.#scopes) {
      let idle = true;
      for (const state of states.values()) {
        if ('tat' in state ? state.tat > now : state.sends.length > 0) idle = false;
      }
      if (idle) this.#scopes.delete(resource);
    }
  }
}

function stateOf(states: Map<number, PolicyState>, position: number, policy: Policy): PolicyState {
  let state = states.get(position);
  if (state === undefined) {
    state = policy.kind === 'rate' ? { tat: Number.NEGATIVE_INFINITY } : { sends: [] };
    states.set(position, state);
  }
  return state;
}

/** The earliest instant `>= now` at which the policy admits one more send. */
function earliest(policy: Policy, state: PolicyState, now: number): number {
  switch (policy.kind) {
    case 'window':
      return windowEarliest(policy, (state as { sends: number[] }).sends, now);
    case 'rate':
      return rateEarliest(policy, (state as { tat: number }).tat, now);
    case 'concurrency':
      // The pacer turns the throttle into its count of requests in flight.
      return now;
  }
}

// At most `limit` sends in any [t, t + windowMs): a send at `now` is admitted when fewer than
// `limit` lie in (now - windowMs, now]; otherwise when the oldest of the last `limit` leaves.
function windowEarliest(policy: WindowPolicy, sends: number[], now: number): number {
  while (sends.length > 0 && (sends[0] as number) + policy.windowMs <= now) sends.shift();
  if (sends.length < policy.limit) return now;
  return Math.max(now, (sends[sends.length - policy.limit] as number) + policy.windowMs);
}

// GCRA: with interval T = 1000 / perSecond, a send at `now` is admitted when
// tat - (burst - 1) * T <= now. No tolerance: the client never rounds in its own favour.
function rateEarliest(policy: RatePolicy, tat: number, now: number): number {
  return Math.max(now, tat - (policy.burst - 1) * (1000 / policy.perSecond));
}

function record(scope: PlanScope, states: Map<number, PolicyState>, now: number): void {
  for (const position of scope.active) {
    const policy = scope.policies[position] as Policy;
    const state = stateOf(states, position, policy);
    if ('tat' in state)
      state.tat = Math.max(state.tat, now) + 1000 / (policy as RatePolicy).perSecond;
    else state.sends.push(now);
  }
}
