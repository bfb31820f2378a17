/**
 * Stores for the asynchronous and the failing paths: the memory store's decisions behind promises
 * (as a networked store answers), and a store whose every call fails (as Redis does when it is
 * down).
 */
import {
  type AsyncLimitStore,
  type LeaseToken,
  MemoryStore,
  type Plan,
  type StoreOutcome,
} from '../../src/index.js';

/** The memory store, answering with promises. */
export class AsyncMemoryStore implements AsyncLimitStore {
  readonly synchronous = false as const;
  readonly #memory = new MemoryStore();

  apply(plan: Plan, now: number): Promise<StoreOutcome> {
    return Promise.resolve().then(() => this.#memory.apply(plan, now));
  }

  release(lease: LeaseToken, now: number): Promise<void> {
    return Promise.resolve().then(() => this.#memory.release(lease, now));
  }
}

/** A store that is down: every call rejects. */
export class UnreachableStore implements AsyncLimitStore {
  readonly synchronous = false as const;

  apply(): Promise<StoreOutcome> {
    return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6380'));
  }

  release(): Promise<void> {
    return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6380'));
  }
}
