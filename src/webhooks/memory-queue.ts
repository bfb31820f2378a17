/** The in-memory delivery queue: bounded, and lost at a restart. @module */

import { aClock, type Clock, systemClock } from '../clock.js';
import { DeliveryQueueError } from '../errors/delivery-queue-error.js';
import {
  aFunction,
  readOptions,
  requiredValue,
  wholeNumber,
  withMethods,
} from '../internal/options.js';
import type { Sleep } from '../internal/timers.js';
import { abortableSleep, timerSleep } from '../internal/timers.js';
import type { Deliverer, DeliveryJob, DeliveryStep } from './delivery.js';
import type { DeliveryQueue } from './delivery-queue.js';

/** How the memory queue behaves. */
export interface MemoryDeliveryQueueOptions {
  /** Makes the attempts. */
  deliverer: Deliverer;
  /** Jobs held at most (ready, in flight and waiting for a retry). @defaultValue 10000 */
  capacity?: number;
  /** Attempts at a time. @defaultValue 8 */
  concurrency?: number;
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
  sleep: aFunction<Sleep>('waits (ms, signal)'),
  clock: aClock,
};

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
  readonly #sleep: Sleep;
  readonly #clock: Clock;
  readonly #ready: DeliveryJob[] = [];
  // One entry per waiting job, so that the same job object held twice is kept twice.
  readonly #waiting = new Set<{ readonly job: DeliveryJob }>();
  readonly #blocked: Array<{ job: DeliveryJob; accept: () => void; refuse: () => void }> = [];
  // The message, subscription and replay of every job held (blocked ones included): a job held
  // already is not added again, so that a redelivery sweep never doubles one.
  readonly #held = new Set<string>();
  readonly #stop = new AbortController();
  #running = 0;
  #closed = false;
  #idle: Array<() => void> = [];

  /**
   * @throws ConfigurationError `invalid_option` for options that are not an object, no deliverer,
   *   a capacity or concurrency below 1, a sleep that is not a function or a clock without now()
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
    this.#sleep = read.sleep;
    this.#clock = read.clock;
  }

  /** Jobs held now: ready, in flight and waiting for a retry. */
  get size(): number {
    return this.#ready.length + this.#running + this.#waiting.size;
  }

  /** Enqueue calls waiting for room. */
  get blocked(): number {
    return this.#blocked.length;
  }

  /**
   * Accept a job, waiting while the queue is full. A job of the same message, subscription and
   * replay as one the queue holds is not added again (it resolves at once).
   */
  enqueue(job: DeliveryJob): Promise<void> {
    if (this.#closed) return Promise.reject(closedError());
    const key = heldKey(job);
    if (key !== undefined) {
      if (this.#held.has(key)) return Promise.resolve();
      this.#held.add(key);
    }
    if (this.size < this.#capacity && this.#blocked.length === 0) {
      this.#accept(job);
      return Promise.resolve();
    }
    return new Promise<void>((accept, refuse) => {
      this.#blocked.push({ job, accept, refuse: () => refuse(closedError()) });
    });
  }

  /**
   * Stop accepting (waiting enqueue calls reject with `queue_closed`), finish every ready and
   * in-flight attempt, and stop waiting for retries.
   * @returns the jobs that were waiting for a retry, to log or to persist
   */
  async close(): Promise<readonly DeliveryJob[]> {
    this.#closed = true;
    for (const blocked of this.#blocked.splice(0)) blocked.refuse();
    this.#stop.abort(closedError());
    if (this.#ready.length > 0 || this.#running > 0) {
      await new Promise<void>((resolve) => this.#idle.push(resolve));
    }
    const leftover = [...this.#waiting].map((entry) => entry.job);
    this.#waiting.clear();
    this.#held.clear();
    return leftover;
  }

  #accept(job: DeliveryJob): void {
    this.#ready.push(job);
    this.#pump();
  }

  #pump(): void {
    while (this.#running < this.#concurrency && this.#ready.length > 0) {
      const job = this.#ready.shift()!;
      this.#running += 1;
      void this.#run(job);
    }
    if (this.#running === 0 && this.#ready.length === 0) {
      for (const wake of this.#idle.splice(0)) wake();
    }
  }

  async #run(job: DeliveryJob): Promise<void> {
    let step: DeliveryStep | undefined;
    try {
      step = await this.#deliverer.attempt(job);
    } catch {
      step = undefined;
    }
    this.#running -= 1;
    if (step === undefined) {
      // A deliverer that broke its promise never to reject: hold the job for close() to hand back.
      this.#waiting.add({ job });
    } else if (!step.done) {
      if (this.#closed) this.#waiting.add({ job: step.job });
      else this.#wait(step.job, step.at);
    } else {
      const key = heldKey(job);
      if (key !== undefined) this.#held.delete(key);
    }
    this.#admit();
    this.#pump();
  }

  #wait(job: DeliveryJob, at: number): void {
    const entry = { job };
    this.#waiting.add(entry);
    const wake = () => {
      if (this.#closed || !this.#waiting.delete(entry)) return;
      this.#ready.push(job);
      this.#pump();
    };
    abortableSleep(this.#sleep, Math.max(0, at - this.#clock.now()), this.#stop.signal).then(
      wake,
      wake,
    );
  }

  #admit(): void {
    while (this.#blocked.length > 0 && this.size < this.#capacity && !this.#closed) {
      const next = this.#blocked.shift()!;
      this.#accept(next.job);
      next.accept();
    }
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
