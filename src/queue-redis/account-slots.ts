/**
 * One account's share of a process's workers, and the jobs of an account at its share that wait
 * in the process for one of its workers (docs/delivery.md, "On Redis").
 * @module
 */

/**
 * The jobs of one account that may wait at once for its workers: as many as its share, but never
 * so many that the account holds more than half of the process's workers, running and waiting
 * together (none where its share alone is half or more). The other accounts keep the rest.
 * @internal
 */
export function waitingRoom(share: number, concurrency: number): number {
  return Math.max(0, Math.min(share, Math.floor(concurrency / 2) - share));
}

/** A job waiting for a worker of its account. */
interface Waiter {
  readonly resolve: (slot: boolean) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/** Attempts in flight by account, and the jobs waiting for them to end. */
interface Account {
  running: number;
  readonly waiting: Waiter[];
}

/**
 * The workers of each account in this process: at most `share` attempts of an account at once.
 * A job taken while its account holds its share may wait up to `waitMs` for one of them to end,
 * at most `room` such jobs per account (see {@link waitingRoom}); the worker that ends hands its
 * slot to the first one waiting. Jobs of no account (`''`) are not held to a share. One instance
 * per queue; never throws.
 * @internal
 */
export class AccountSlots {
  readonly #share: number;
  readonly #room: number;
  readonly #waitMs: number;
  readonly #accounts = new Map<string, Account>();
  #ended = false;

  /**
   * @param share - attempts of one account at once, at least 1
   * @param room - jobs of one account that may wait at once; 0: none waits
   * @param waitMs - the longest a job waits for one of its account's workers, in ms
   */
  constructor(share: number, room: number, waitMs: number) {
    this.#share = share;
    this.#room = room;
    this.#waitMs = waitMs;
  }

  /** Take a worker of `account` now: `false` when the account holds its share. */
  take(account: string): boolean {
    if (account === '') return true;
    const known = this.#accounts.get(account);
    if (known === undefined) {
      this.#accounts.set(account, { running: 1, waiting: [] });
      return true;
    }
    if (known.running >= this.#share) return false;
    known.running += 1;
    return true;
  }

  /**
   * Wait for a worker of `account`, which holds its share: `true` once one is handed over (the
   * caller then holds it, as after {@link take}), `false` after `waitMs` without one or when the
   * waits are ended; `undefined` at once when no more of the account's jobs may wait, or the
   * waits were ended for good ({@link endWaits}). `roomless`: not held to the room (a delivery
   * of a job of several, which holds no worker of its own while it waits).
   */
  wait(account: string, roomless = false): Promise<boolean> | undefined {
    const known = this.#accounts.get(account);
    if (
      this.#ended ||
      known === undefined ||
      this.#waitMs <= 0 ||
      (!roomless && known.waiting.length >= this.#room)
    ) {
      return undefined;
    }
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        const at = known.waiting.indexOf(waiter);
        if (at !== -1) known.waiting.splice(at, 1);
        resolve(false);
      }, this.#waitMs);
      const waiter: Waiter = { resolve, timer };
      known.waiting.push(waiter);
    });
  }

  /** Give back a worker of `account`: to the first job waiting for one, else free. */
  give(account: string): void {
    if (account === '') return;
    const known = this.#accounts.get(account);
    if (known === undefined) return;
    const next = known.waiting.shift();
    if (next !== undefined) {
      clearTimeout(next.timer);
      next.resolve(true);
      return;
    }
    known.running -= 1;
    if (known.running <= 0) this.#accounts.delete(account);
  }

  /**
   * End every wait without a worker, and let none start from now on: those jobs go back to Redis
   * (the queue is closing).
   */
  endWaits(): void {
    this.#ended = true;
    for (const known of this.#accounts.values()) {
      for (const waiter of known.waiting.splice(0)) {
        clearTimeout(waiter.timer);
        waiter.resolve(false);
      }
    }
  }
}

/**
 * At most `size` attempts at a time in this process, whatever the jobs that hold them; the rest
 * wait their turn in order. An attempt holds its slot while its request is in flight (see
 * {@link givingBack}). Never throws.
 * @internal
 */
export class AttemptSlots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  /** @param size - attempts at once, at least 1 */
  constructor(size: number) {
    this.#free = size;
  }

  /** Take a slot now: `false` when none is free. */
  take(): boolean {
    if (this.#free <= 0) return false;
    this.#free -= 1;
    return true;
  }

  /** Resolves once a slot is handed over (the caller then holds it, as after {@link take}). */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  /** Give back a slot: to the first waiting, else free. */
  give(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#free += 1;
    else next();
  }

  /** Take a slot, now or once one is handed over. */
  async taken(): Promise<void> {
    if (!this.take()) await this.wait();
  }
}

/**
 * Gives back what an attempt holds, its account's worker and its attempt slot, once: at the first
 * call, when the attempt's request has ended (the deliverer's `requestEnded`, before the record is
 * written) or when the attempt has (a step with no request). The slots count requests in flight;
 * the record of one that ended is written while the next request runs. Never throws.
 * @internal
 */
export function givingBack(
  slots: AccountSlots,
  account: string,
  attempts: AttemptSlots,
): () => void {
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    attempts.give();
    slots.give(account);
  };
}
