/** The in-memory delivery queue: bounded, and lost at a restart. @module */

import { aClock, type Clock, systemClock } from '../../clock.js';
import { DeliveryQueueError } from '../../errors/delivery-queue-error.js';
import {
  aFunction,
  readOptions,
  requiredValue,
  wholeNumber,
  withMethods,
} from '../../internal/options.js';
import type { Sleep } from '../../internal/timers.js';
import { abortableSleep, timerSleep } from '../../internal/timers.js';
import type { DeliveryJob } from './job.js';
import { defaultAccountConcurrency, jobAccount } from './job-account.js';
import type { DeliveryQueue, EnqueueOptions } from './queue.js';
import type { Deliverer, DeliveryStep } from './step.js';

/** How the memory queue behaves. */
export interface MemoryDeliveryQueueOptions {
  /** Makes the attempts. */
  deliverer: Deliverer;
  /** Jobs held at most (ready, in flight and waiting for a retry). @defaultValue 10000 */
  capacity?: number;
  /** Attempts at a time. @defaultValue 8 */
  concurrency?: number;
  /**
   * Attempts of one account at a time (the job's `accountCode`, else its envelope's `accountId`):
   * an account whose endpoints hold their attempts (never answer, trickle) holds at most this many
   * workers, and the others are shared round-robin between the accounts with jobs ready. Jobs
   * that tell no account take turns with the accounts but are not held to a share.
   * @defaultValue a quarter of `concurrency`, at least 1
   */
  accountConcurrency?: number;
  /**
   * Waits for retries; should reject when the signal aborts. One that throws, rejects or returns
   * no promise ends the wait at once. @defaultValue real timers
   */
  sleep?: Sleep;
  /** @defaultValue {@link systemClock} */
  clock?: Clock;
}

const QUEUE_RULES = {
  deliverer: withMethods<Deliverer>(['attempt'], 'a Deliverer from createDeliverer()'),
  capacity: wholeNumber(),
  concurrency: wholeNumber(),
  accountConcurrency: wholeNumber(),
  sleep: aFunction<Sleep>('waits (ms, signal)'),
  clock: aClock,
};

/** A job held, with the account it is shared out under. */
interface Held {
  readonly job: DeliveryJob;
  readonly account: string;
}

/** A job waiting for its time, with what ends the wait when the queue closes. */
interface Waiting extends Held {
  readonly stop: AbortController;
}

/**
 * The in-memory queue.
 * @example
 * ```ts
 * const queue = new MemoryDeliveryQueue({ deliverer, capacity: 1000 });
 * await queue.enqueue(deliveryJob(message, subscription));
 * const leftover = await queue.close(); // on shutdown
 * ```
 */
export class MemoryDeliveryQueue implements DeliveryQueue {
  readonly #deliverer: Deliverer;
  readonly #capacity: number;
  readonly #concurrency: number;
  readonly #accountConcurrency: number;
  readonly #sleep: Sleep;
  readonly #clock: Clock;
  // Ready jobs by account, in the order the accounts take their turns: an account that starts a
  // job goes to the back (round-robin).
  readonly #ready = new Map<string, Held[]>();
  #readyCount = 0;
  // Attempts in flight by account.
  readonly #inFlight = new Map<string, number>();
  // One entry per waiting job, so that the same job object held twice is kept twice. Each has a
  // signal of its own: one shared by every wait would carry a listener per waiting job.
  readonly #waiting = new Set<Waiting>();
  readonly #blocked: Array<{
    held: Held;
    at: number | undefined;
    accept: () => void;
    refuse: () => void;
  }> = [];
  // The message, subscription and replay of every job held (blocked ones included): a job held
  // already is not added again, so that a redelivery sweep never doubles one.
  readonly #held = new Set<string>();
  #roomWaiters: Array<() => void> = [];
  #running = 0;
  #closed = false;
  #idle: Array<() => void> = [];

  /**
   * @throws ConfigurationError `invalid_option` for options that are not an object, no deliverer,
   *   a capacity, concurrency or accountConcurrency below 1, a sleep that is not a function or a
   *   clock without now()
   */
  constructor(options: MemoryDeliveryQueueOptions) {
    const read = readOptions(options, 'MemoryDeliveryQueue', QUEUE_RULES, {
      defaults: { capacity: 10_000, concurrency: 8, sleep: timerSleep, clock: systemClock },
      required: true,
      example: '{ deliverer }',
    });
    this.#deliverer = requiredValue(QUEUE_RULES.deliverer, read.deliverer, 'deliverer');
    this.#capacity = read.capacity;
    this.#concurrency = read.concurrency;
    this.#accountConcurrency =
      read.accountConcurrency ?? defaultAccountConcurrency(read.concurrency);
    this.#sleep = read.sleep;
    this.#clock = read.clock;
  }

  /** Jobs held now: ready, in flight and waiting for a retry. */
  get size(): number {
    return this.#readyCount + this.#running + this.#waiting.size;
  }

  /** Enqueue calls waiting for room. */
  get blocked(): number {
    return this.#blocked.length;
  }

  /**
   * Accept a job, waiting while the queue is full. A job of the same message, subscription and
   * replay as one the queue holds is not added again (it resolves at once).
   * @param options - `at`: not attempted before this time (it waits as a retry does)
   */
  enqueue(job: DeliveryJob, options?: EnqueueOptions): Promise<void> {
    if (this.#closed) return Promise.reject(closedError());
    const key = heldKey(job);
    if (key !== undefined) {
      if (this.#held.has(key)) return Promise.resolve();
      this.#held.add(key);
    }
    const held = { job, account: jobAccount(job) };
    const at = timeOf(options);
    if (this.#hasRoom()) {
      this.#accept(held, at);
      return Promise.resolve();
    }
    return new Promise<void>((accept, refuse) => {
      this.#blocked.push({ held, at, accept, refuse: () => refuse(closedError()) });
    });
  }

  /**
   * Accept a job if there is room now: `false` when the queue is full (nothing waits). A job of the
   * same delivery as one the queue holds is not added again (`true`).
   * @param options - `at`: not attempted before this time
   */
  offer(job: DeliveryJob, options?: EnqueueOptions): Promise<boolean> {
    if (this.#closed) return Promise.reject(closedError());
    const key = heldKey(job);
    if (key !== undefined && this.#held.has(key)) return Promise.resolve(true);
    if (!this.#hasRoom()) return Promise.resolve(false);
    if (key !== undefined) this.#held.add(key);
    this.#accept({ job, account: jobAccount(job) }, timeOf(options));
    return Promise.resolve(true);
  }

  /** Resolves once there is room for a job (at once when there is, and once the queue closes). */
  room(): Promise<void> {
    if (this.#closed || this.#hasRoom()) return Promise.resolve();
    return new Promise<void>((wake) => this.#roomWaiters.push(wake));
  }

  /**
   * Stop accepting (waiting enqueue calls reject with `queue_closed`), finish every ready and
   * in-flight attempt, and stop waiting for retries.
   * @returns the jobs that were waiting for a retry, to log or to persist
   */
  async close(): Promise<readonly DeliveryJob[]> {
    this.#closed = true;
    for (const blocked of this.#blocked.splice(0)) blocked.refuse();
    for (const wake of this.#roomWaiters.splice(0)) wake();
    const reason = closedError();
    for (const entry of this.#waiting) entry.stop.abort(reason);
    if (this.#readyCount > 0 || this.#running > 0) {
      await new Promise<void>((resolve) => this.#idle.push(resolve));
    }
    const leftover = [...this.#waiting].map((entry) => entry.job);
    this.#waiting.clear();
    this.#held.clear();
    return leftover;
  }

  #hasRoom(): boolean {
    return this.size < this.#capacity && this.#blocked.length === 0;
  }

  #accept(held: Held, at: number | undefined): void {
    if (at !== undefined && at > this.#clock.now()) {
      this.#wait(held, at);
      return;
    }
    const jobs = this.#ready.get(held.account);
    if (jobs === undefined) this.#ready.set(held.account, [held]);
    else jobs.push(held);
    this.#readyCount += 1;
    this.#pump();
  }

  #pump(): void {
    while (this.#running < this.#concurrency && this.#readyCount > 0) {
      const account = this.#nextAccount();
      if (account === undefined) break;
      const jobs = this.#ready.get(account) as Held[];
      const held = jobs.shift() as Held;
      this.#ready.delete(account);
      if (jobs.length > 0) this.#ready.set(account, jobs);
      this.#readyCount -= 1;
      this.#running += 1;
      this.#inFlight.set(account, (this.#inFlight.get(account) ?? 0) + 1);
      void this.#run(held);
    }
    if (this.#running === 0 && this.#readyCount === 0) {
      for (const wake of this.#idle.splice(0)) wake();
    }
  }

  /** The first account in turn with a job ready and fewer attempts in flight than its share. */
  #nextAccount(): string | undefined {
    for (const account of this.#ready.keys()) {
      // Jobs of no account (a queue used alone, with jobs of its own) are not held to a share.
      if (account === '' || (this.#inFlight.get(account) ?? 0) < this.#accountConcurrency) {
        return account;
      }
    }
    return undefined;
  }

  async #run(held: Held): Promise<void> {
    const { job, account } = held;
    let step: DeliveryStep | undefined;
    try {
      step = await this.#deliverer.attempt(job);
    } catch {
      step = undefined;
    }
    this.#running -= 1;
    const left = (this.#inFlight.get(account) ?? 1) - 1;
    if (left > 0) this.#inFlight.set(account, left);
    else this.#inFlight.delete(account);
    if (step === undefined) {
      // A deliverer that broke its promise never to reject: hold the job for close() to hand back.
      this.#waiting.add({ job, account, stop: new AbortController() });
    } else if (!step.done) {
      // The job of a retry keeps the account of the job it follows, whatever the deliverer copied.
      const next = { job: step.job, account };
      if (this.#closed) this.#waiting.add({ ...next, stop: new AbortController() });
      else this.#wait(next, step.at);
    } else {
      const key = heldKey(job);
      if (key !== undefined) this.#held.delete(key);
    }
    this.#admit();
    this.#pump();
  }

  #wait(held: Held, at: number): void {
    const entry: Waiting = { ...held, stop: new AbortController() };
    this.#waiting.add(entry);
    const wake = () => {
      if (this.#closed || !this.#waiting.delete(entry)) return;
      this.#accept(held, undefined);
    };
    abortableSleep(this.#sleep, Math.max(0, at - this.#clock.now()), entry.stop.signal).then(
      wake,
      wake,
    );
  }

  #admit(): void {
    while (this.#blocked.length > 0 && this.size < this.#capacity && !this.#closed) {
      const next = this.#blocked.shift()!;
      this.#accept(next.held, next.at);
      next.accept();
    }
    if (this.#hasRoom()) for (const wake of this.#roomWaiters.splice(0)) wake();
  }
}

/** The `at` of enqueue options, when it is a time. */
function timeOf(options: EnqueueOptions | undefined): number | undefined {
  try {
    const at = options?.at;
    return typeof at === 'number' && Number.isFinite(at) ? at : undefined;
  } catch {
    return undefined;
  }
}

/** What makes two jobs the same delivery; `undefined` for a job that cannot tell. */
function heldKey(job: DeliveryJob): string | undefined {
  try {
    return JSON.stringify([String(job.id), String(job.subscriptionId), Number(job.replay ?? 0)]);
  } catch {
    return undefined;
  }
}

function closedError(): DeliveryQueueError {
  return new DeliveryQueueError(
    'queue_closed',
    'The delivery queue is closed (the service is shutting down); enqueue to a running queue.',
  );
}
