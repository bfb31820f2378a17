import type { DeliveryJob } from './delivery.js';

/** Pending deliveries, worked off by a deliverer. */
export interface DeliveryQueue {
  /**
   * Accept a job. Resolves once the queue holds it; while the queue is full it waits (this is the
   * backpressure), and it rejects with a `DeliveryQueueError` (`queue_closed`) once the queue is closed.
   * @param job - the job
   */
  enqueue(job: DeliveryJob): Promise<void>;
  /**
   * Stop accepting jobs, finish the attempts that are due, and release resources.
   * @returns the jobs still waiting for a retry that this queue cannot keep (a memory queue's)
   */
  close(): Promise<readonly DeliveryJob[]>;
}
