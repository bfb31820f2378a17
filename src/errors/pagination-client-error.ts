/**
 * The error a page iterator throws when it cannot go on: the server answered with an error status,
 * a body without a list of items or with a next cursor that cannot be followed, a cursor it had
 * already given, or a page other than the one asked for (either of which would loop forever).
 * @module
 */
import { ApiConventionsError, type ErrorOptions, errorName } from './index.js';

/** Codes of {@link PaginationClientError}. A test pins this list. */
export const paginationClientErrorCodes = [
  'unexpected_status',
  'invalid_page_body',
  'repeated_cursor',
  // A page-number page that is not the one asked for (another stated number, the previous
  // page's items again), or a list that goes on past Number.MAX_SAFE_INTEGER pages.
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

  /**
   * @param code - why the listing stopped
   * @param message - what happened and what to do
   * @param details - the URL and, for a status error, the status
   * @param options - `cause`
   */
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

/**
 * True for a {@link PaginationClientError}, including one from another copy of the package.
 * @param value - anything caught
 */
export function isPaginationClientError(value: unknown): value is PaginationClientError {
  return errorName(value) === 'PaginationClientError';
}
