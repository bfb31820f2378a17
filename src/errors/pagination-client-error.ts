/** The error a page iterator throws when it cannot go on (or would loop forever). @module */
import { ApiConventionsError, type ErrorOptions, errorName } from './index.js';

/** Codes of {@link PaginationClientError}. A test pins this list. */
export const paginationClientErrorCodes = [
  'unexpected_status',
  'invalid_page_body',
  'repeated_cursor',
  // Not the page asked for, or past Number.MAX_SAFE_INTEGER pages.
  'unexpected_page',
] as const;

/** A code of {@link PaginationClientError}. */
export type PaginationClientErrorCode = (typeof paginationClientErrorCodes)[number];

/** Thrown by the page iterators when the listing cannot continue. */
export class PaginationClientError extends ApiConventionsError {
  declare readonly code: PaginationClientErrorCode;
  /** The URL of the request that failed. */
  readonly url: string;
  /** The HTTP status, for `unexpected_status`. */
  readonly status: number | undefined;

  /** @param details - the URL and, for a status error, the status */
  constructor(
    code: PaginationClientErrorCode,
    message: string,
    details: { url: string; status?: number },
    options?: ErrorOptions,
  ) {
    super(code, message, options);
    this.name = 'PaginationClientError';
    this.url = details.url;
    this.status = details.status;
  }
}

/** True for a {@link PaginationClientError}, also from another copy of the package. */
export function isPaginationClientError(value: unknown): value is PaginationClientError {
  return errorName(value) === 'PaginationClientError';
}
