/** The error of a delivery job that the queue did not accept. @module */
import { ApiConventionsError, type ErrorOptions } from './api-conventions-error.js';

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

  /** @param options - `cause`: the client's error, when there is one */
  constructor(code: DeliveryQueueErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'DeliveryQueueError';
  }
}
