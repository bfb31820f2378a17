import type { DeliveryJob } from './delivery.js';

/** Pending deliveries, worked off by a deliverer. */
export interface DeliveryQueue {
  /**
   * Accept a job. Resolves once the queue holds it; while the queue is full it waits (this is the
   * backpressure), and it rejects with a `DeliveryQueueError` (`queue_closed`) once the queue is closed.
   * A job of the same message, subscription and replay as one the queue holds adds nothing: the
   * redelivery sweep of the webhook service may hand it a job it holds.
   * @param job - the job
   */
  enqueue(job: DeliveryJob): Promise<void>;
  /**
   * Stop accepting jobs, finish the attempts that are due, and release resources.
   * @returns the jobs still waiting for a retry that this queue cannot keep (a memory queue's)
   */
  close(): Promise<readonly DeliveryJob[]>;
}
