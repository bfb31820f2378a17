/**
 * Stores for the asynchronous and the failing paths: the memory store's decisions behind promises
 * (as a networked store answers), and a store whose every call fails (as Redis does when it is
 * down).
 */
import {
  type AsyncLimitStore,
  concurrency,
  createLimiter,
  FakeClock,
  type LeaseToken,
  MemoryStore,
  type Plan,
  type StoreOutcome,
  type SyncLimitStore,
} from '../../src/index.js';

/** The memory store, answering with promises. */
export class AsyncMemoryStore implements AsyncLimitStore {
  readonly synchronous = false as const;
  readonly #memory = new MemoryStore();

  apply(plan: Plan, now: number): Promise<StoreOutcome> {
    return Promise.resolve().then(() => this.#memory.apply(plan, now));
  }

  release(lease: LeaseToken): Promise<void> {
    return Promise.resolve().then(() => this.#memory.release(lease));
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

/**
 * The memory store behind promises that settle only when the test says: a decision in flight that
 * the test can hold while the client goes away. Counts what it was asked.
 */
export class HeldStore implements AsyncLimitStore {
  readonly synchronous = false as const;
  readonly #memory = new MemoryStore();
  readonly #held: Array<() => void> = [];
  #onApply: (() => void) | undefined;
  /** Leases given back so far. */
  released = 0;

  apply(plan: Plan, now: number): Promise<StoreOutcome> {
    return new Promise((resolve) => {
      this.#held.push(() => resolve(this.#memory.apply(plan, now)));
      this.#onApply?.();
    });
  }

  release(lease: LeaseToken): Promise<void> {
    this.released++;
    this.#memory.release(lease);
    return Promise.resolve();
  }

  /** Resolves once a decision is held. */
  applied(): Promise<void> {
    if (this.#held.length > 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onApply = resolve;
    });
  }

  /** Let every held decision through. */
  proceed(): void {
    for (const decide of this.#held.splice(0)) decide();
  }
}

/** A throttle of one lease on a {@link HeldStore}: the test decides when each decision settles. */
export function heldThrottle() {
  const store = new HeldStore();
  const limiter = createLimiter({
    policies: [concurrency(1, { name: 'throttle' })],
    store,
    clock: new FakeClock(0),
  });
  return { store, limiter };
}

/**
 * The memory store's decisions, with a release that throws `message` synchronously (a store whose
 * connection broke between the decision and the release).
 * @param message - the error's message
 */
export function storeWhoseReleaseThrows(message: string): SyncLimitStore {
  const memory = new MemoryStore();
  return {
    synchronous: true,
    apply: (plan, now) => memory.apply(plan, now),
    release: () => {
      throw new Error(message);
    },
  };
}
