/** The error of a webhook delivery attempt that got no answer. @module */
import { ApiConventionsError } from './api-conventions-error.js';

/** Codes of {@link DeliveryTransportError}. */
export const deliveryTransportErrorCodes = ['timeout', 'connection_failed'] as const;

/** A code of {@link deliveryTransportErrorCodes}. */
export type DeliveryTransportErrorCode = (typeof deliveryTransportErrorCodes)[number];

/** An attempt that got no answer: no connection, a reset, or the timeout. */
export class DeliveryTransportError extends ApiConventionsError {
  declare readonly code: DeliveryTransportErrorCode;

  /** @param cause - the underlying error */
  constructor(code: DeliveryTransportErrorCode, message: string, cause?: unknown) {
    super(code, message, { cause });
    this.name = 'DeliveryTransportError';
  }
}
