/** The error thrown when a request handed to the limiter cannot be attributed. @module */
import { ApiConventionsError, type ErrorOptions, errorName } from './api-conventions-error.js';

/** Codes of {@link InvalidRequestError}; a test pins them (removing one breaks the API). */
export const invalidRequestErrorCodes = [
  'invalid_request',
  'invalid_client_id',
  'invalid_account_code',
  'invalid_account_type',
  'invalid_method',
  'invalid_path',
] as const;

/** A code of {@link InvalidRequestError}. */
export type InvalidRequestErrorCode = (typeof invalidRequestErrorCodes)[number];

/**
 * Thrown when the request handed to the limiter cannot be attributed to a client and account:
 * an empty or overlong client id, a non-string value, an account type with no preset. It points at
 * the integrator's `identify` step, which must map every request to valid values.
 */
export class InvalidRequestError extends ApiConventionsError {
  declare readonly code: InvalidRequestErrorCode;

  /** @param message - what to change */
  constructor(code: InvalidRequestErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'InvalidRequestError';
  }
}

/** True for an {@link InvalidRequestError}, also from another copy of the package. */
export function isInvalidRequestError(value: unknown): value is InvalidRequestError {
  return errorName(value) === 'InvalidRequestError';
}
