/** The pacer's store: the client's own sends, kept exactly, with the margin. @module */
import type { Policy, RatePolicy, WindowPolicy } from '../limits/policy.js';
import {
  admissionWithoutStatuses,
  NO_STATUSES,
  type Plan,
  type StoreOutcome,
  type SyncLimitStore,
} from '../limits/store.js';

/** One policy in one scope: a window's send times, or a rate's theoretical arrival time. */
type PolicyState =
  | { readonly policy: WindowPolicy; readonly sends: number[] }
  | { readonly policy: RatePolicy; tat: number };

/** Applies of a plan between two sweeps of idle scopes, which keep the map bounded. */
const SWEEP_EVERY = 1024;

/** A synchronous limit store that admits exactly what the policies allow, and records no blocks. */
export class PacingStore implements SyncLimitStore {
  readonly synchronous = true;
  readonly #margin: number;
  /** By scope (the resource key, `''` for the client as a whole), the state of each position. */
  readonly #scopes = new Map<string, Map<number, PolicyState>>();
  #applies = 0;
  #refusedUntil = Number.NaN;
  #latest = Number.NEGATIVE_INFINITY;

  /** @param marginMs - how much closer together than sent two requests may reach the server */
  constructor(marginMs: number) {
    this.#margin = marginMs;
  }

  /** Scopes whose state is held: the client as a whole and each resource it sent to lately. */
  get size(): number {
    return this.#scopes.size;
  }

  /** The exact instant (ms) the plan refused last may be admitted, if nothing else is sent first. */
  get refusedUntil(): number {
    return this.#refusedUntil;
  }

  apply(plan: Plan, at: number): StoreOutcome {
    // Time never goes back inside the store, as in the memory store: after a clock stepped back,
    // the sends already made still lie behind it, and the logs stay in order.
    const now = Math.max(at, this.#latest);
    this.#latest = now;
    if (++this.#applies % SWEEP_EVERY === 0) this.#sweep(now);
    const touched: PolicyState[] = [];
    let until = now;
    let policy: Policy | undefined;
    let resource: string | undefined;
    for (const scope of plan.scopes) {
      for (const position of scope.active) {
        const state = this.#stateOf(scope.resource, position, scope.policies[position] as Policy);
        if (state === undefined) continue;
        touched.push(state);
        const earliest = this.#earliest(state, now);
        if (earliest > until) {
          until = earliest;
          policy = state.policy;
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
    for (const state of touched) {
      if ('tat' in state) state.tat = Math.max(state.tat, now) + interval(state.policy);
      else state.sends.push(now);
    }
    return admissionWithoutStatuses(now, undefined);
  }

  release(): void {
    // The pacer counts its requests in flight itself: this store holds no leases.
  }

  /** The state of a window or rate policy (made on first use); none for the throttle. */
  #stateOf(resource: string, position: number, policy: Policy): PolicyState | undefined {
    if (policy.kind === 'concurrency') return undefined;
    let states = this.#scopes.get(resource);
    if (states === undefined) {
      states = new Map();
      this.#scopes.set(resource, states);
    }
    let state = states.get(position);
    if (state === undefined) {
      state =
        policy.kind === 'rate'
          ? { policy, tat: Number.NEGATIVE_INFINITY }
          : { policy, sends: [] as number[] };
      states.set(position, state);
    }
    return state;
  }

  /**
   * The earliest instant `>= now` at which the policy admits one more send, with the margin: as
   * if that send reached the server `margin` ms closer to each earlier one than it was sent.
   */
  #earliest(state: PolicyState, now: number): number {
    if ('tat' in state) {
      // GCRA with its burst tolerance (burst - 1) * T shortened by the margin: the k-th send
      // after one comes no sooner than (k - burst) * T + margin after it.
      const { policy } = state;
      return Math.max(now, state.tat - ((policy.burst - 1) * interval(policy) - this.#margin));
    }
    // At most `limit` sends in any [t, t + windowMs + margin): the oldest of the last `limit`
    // must have left it.
    const { policy, sends } = state;
    const span = policy.windowMs + this.#margin;
    while (sends.length > 0 && (sends[0] as number) + span <= now) sends.shift();
    if (sends.length < policy.limit) return now;
    return Math.max(now, (sends[sends.length - policy.limit] as number) + span);
  }

  // Dropped once it holds back no send: a client touching many resources keeps a bounded map.
  #sweep(now: number): void {
    for (const [resource, states] of this.#scopes) {
      let idle = true;
      for (const state of states.values()) {
        // Read after #earliest, which drops the sends that have left their window.
        const holds = this.#earliest(state, now) > now;
        if (holds || ('tat' in state ? state.tat > now : state.sends.length > 0)) idle = false;
      }
      if (idle) this.#scopes.delete(resource);
    }
  }
}

/** The emission interval T of a rate policy, in ms. */
function interval(policy: RatePolicy): number {
  return 1000 / policy.perSecond;
}
