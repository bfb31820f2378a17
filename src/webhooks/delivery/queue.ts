/** The delivery queue's interface: what the webhook service and the outbox hand jobs to. @module */
import type { DeliveryJob } from './job.js';

/** How a job is queued. */
export interface EnqueueOptions {
  /**
   * Not attempted before this time, in ms (a retry whose time has not come, taken over at start).
   * A queue must honour it; left out or past: as soon as a worker is free.
   */
  readonly at?: number;
}

/** Pending deliveries, worked off by a deliverer. */
export interface DeliveryQueue {
  /**
   * Accept a job. Resolves once the queue holds it; while the queue is full it waits (this is the
   * backpressure), and it rejects with a `DeliveryQueueError` (`queue_closed`) once the queue is closed.
   * A job of the same message, subscription and replay as one the queue holds adds nothing: the
   * redelivery sweep of the webhook service may hand it a job it holds.
   * @param job - the job
   * @param options - `at`: not before this time
   */
  enqueue(job: DeliveryJob, options?: EnqueueOptions): Promise<void>;
  /**
   * Accept a job only if there is room now, never waiting: resolves `true` once the queue holds it
   * (or one of the same delivery), `false` when it is full. The webhook service offers its jobs, so
   * that a publish never waits on the queue's capacity; a queue without `offer` is enqueued to.
   * Rejects as `enqueue` does otherwise.
   */
  offer?(job: DeliveryJob, options?: EnqueueOptions): Promise<boolean>;
  /**
   * Resolves once the queue has room for a job again (at once when it has, and when it closes):
   * the webhook service then sweeps again for what an offer left out.
   */
  room?(): Promise<void>;
  /**
   * Stop accepting jobs, finish the attempts that are due, and release resources.
   * @returns the jobs still waiting for a retry that this queue cannot keep (a memory queue's)
   */
  close(): Promise<readonly DeliveryJob[]>;
}
