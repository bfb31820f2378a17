/**
 * The queue of pending deliveries, as the rest of a service sees it: enqueue a job (waiting while
 * the queue is full), close to shut down. Implementations: {@link MemoryDeliveryQueue} (the
 * default) and the BullMQ queue of `api-conventions/queue-redis` (durable across restarts).
 * @module
 */
import { ApiConventionsError, type ErrorOptions } from '../errors.js';
import type { DeliveryJob } from './delivery.js';

/** Pending deliveries, worked off by a deliverer. */
export interface DeliveryQueue {
  /**
   * Accept a job. Resolves once the queue holds it; while the queue is full it waits (this is the
   * backpressure), and it rejects with {@link DeliveryQueueError} once the queue is closed.
   * @param job - the job
   */
  enqueue(job: DeliveryJob): Promise<void>;
  /**
   * Stop accepting jobs, finish the attempts that are due, and release resources.
   * @returns the jobs still waiting for a retry that this queue cannot keep (a memory queue's)
   */
  close(): Promise<readonly DeliveryJob[]>;
}

/**
 * Codes of {@link DeliveryQueueError}: closed, full, and for the Redis queue a job that is not
 * plain JSON (`invalid_job`) or a Redis that failed the command (`queue_unavailable`).
 */
export const deliveryQueueErrorCodes = [
  'queue_closed',
  'queue_full',
  'invalid_job',
  'queue_unavailable',
] as const;

/** A code of {@link deliveryQueueErrorCodes}. */
export type DeliveryQueueErrorCode = (typeof deliveryQueueErrorCodes)[number];

/** A job the queue did not accept. */
export class DeliveryQueueError extends ApiConventionsError {
  declare readonly code: DeliveryQueueErrorCode;

  /**
   * @param code - why
   * @param message - what to do
   * @param options - `cause`: the client's error, when there is one
   */
  constructor(code: DeliveryQueueErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'DeliveryQueueError';
  }
}
