/**
 * The error thrown when a request handed to the limiter cannot be attributed, or an event handed
 * to the webhook service's `publish` is malformed or reuses an idempotency key. @module
 */
import { ApiConventionsError, type ErrorOptions, errorName } from './api-conventions-error.js';

/** Codes of {@link InvalidRequestError}; a test pins them (removing one breaks the API). */
export const invalidRequestErrorCodes = [
  'invalid_request',
  'invalid_client_id',
  'invalid_account_code',
  'invalid_account_type',
  'invalid_method',
  'invalid_path',
  'invalid_event',
  'invalid_idempotency_key',
  'idempotency_key_reused',
] as const;

/** A code of {@link InvalidRequestError}. */
export type InvalidRequestErrorCode = (typeof invalidRequestErrorCodes)[number];

/** Options of an {@link InvalidRequestError}. */
export interface InvalidRequestErrorOptions extends ErrorOptions {
  /** The JSON pointer of the field at fault, in the value handed over (`/kind`). */
  pointer?: string;
}

/**
 * Thrown when the request handed to the limiter cannot be attributed to a client and account:
 * an empty or overlong client id, a non-string value, an account type with no preset. It points at
 * the integrator's `identify` step, which must map every request to valid values. Also thrown by
 * the webhook service's `publish` for an event it cannot take (`invalid_event`, with the
 * `pointer` of the field at fault): the event is data, not configuration.
 */
export class InvalidRequestError extends ApiConventionsError {
  declare readonly code: InvalidRequestErrorCode;
  /** The JSON pointer of the field at fault, when the error is about one (`/kind`). */
  readonly pointer: string | undefined;

  /** @param message - what to change */
  constructor(
    code: InvalidRequestErrorCode,
    message: string,
    options?: InvalidRequestErrorOptions,
  ) {
    super(code, message, options);
    this.name = 'InvalidRequestError';
    this.pointer = options?.pointer;
  }
}

/** True for an {@link InvalidRequestError}, also from another copy of the package. */
export function isInvalidRequestError(value: unknown): value is InvalidRequestError {
  return errorName(value) === 'InvalidRequestError';
}
