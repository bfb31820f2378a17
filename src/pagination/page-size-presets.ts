/**
 * Page sizes per kind of data: the specification's table ("Page sizes") as presets, and the checks
 * that a validator's custom settings make sense.
 * @module
 */
import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';

/** The default and the maximum number of items per page of an endpoint. */
export interface PageSizeLimits {
  /** Items per page when the request does not say. */
  readonly defaultSize: number;
  /** The most items a request may ask for; more is refused, never clamped. */
  readonly maxSize: number;
}

/** The page sizes of the specification's two kinds of data. */
export interface PageSizePresets {
  /** Business data, paged by page number: default 20, maximum 200. */
  readonly businessData: PageSizeLimits;
  /** Analytical data, paged by cursor: default 50, maximum 500. */
  readonly analyticalData: PageSizeLimits;
}

/**
 * The specification's page sizes. Business data (reservations, folios, units) is paged by page
 * number: default 20, maximum 200. Analytical data (audit logs, usage, exports) is paged by cursor:
 * default 50, maximum 500.
 * @example
 * ```ts
 * const validate = pageNumberValidator({ sizes: pageSizePresets.businessData });
 * ```
 */
export const pageSizePresets: PageSizePresets = Object.freeze({
  businessData: Object.freeze({ defaultSize: 20, maxSize: 200 }),
  analyticalData: Object.freeze({ defaultSize: 50, maxSize: 500 }),
});

/**
 * Check that a validator's options are an object (or were left out, which gives `{}`).
 * @param options - the options as given
 * @param where - the factory being configured, for the message
 * @param example - options of that factory to show in the message
 * @throws ConfigurationError `invalid_option` for `null`, an array, a string or any other non-object
 */
export function checkOptionsObject(options: unknown, where: string, example: string): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ConfigurationError(
      'invalid_option',
      `${where}: options must be an object such as ${example}, or left out, got ${describe(options)}.`,
    );
  }
}

/**
 * Check page size limits: whole numbers, `1 <= defaultSize <= maxSize <= 2^53 - 1`.
 * @param sizes - the limits to check
 * @param where - the factory being configured, for the message
 * @throws ConfigurationError `invalid_limit` when the limits are not usable
 */
export function checkPageSizeLimits(sizes: PageSizeLimits, where: string): PageSizeLimits {
  const { defaultSize, maxSize } = sizes;
  if (!Number.isSafeInteger(maxSize) || maxSize < 1) {
    throw new ConfigurationError(
      'invalid_limit',
      `${where}: sizes.maxSize must be a whole number >= 1, got ${String(maxSize)}.`,
    );
  }
  if (!Number.isSafeInteger(defaultSize) || defaultSize < 1 || defaultSize > maxSize) {
    throw new ConfigurationError(
      'invalid_limit',
      `${where}: sizes.defaultSize must be a whole number from 1 to maxSize (${maxSize}), got ${String(defaultSize)}.`,
    );
  }
  return { defaultSize, maxSize };
}

/**
 * Check an HTTP status for a refusal: a 4xx code.
 * @param status - the configured status
 * @param where - the factory being configured, for the message
 * @throws ConfigurationError `invalid_option` when the status is not 400 to 499
 */
export function checkRefusalStatus(status: number, where: string): number {
  if (!Number.isInteger(status) || status < 400 || status > 499) {
    throw new ConfigurationError(
      'invalid_option',
      `${where}: status must be a client error code from 400 to 499 (400 or 422), got ${String(status)}.`,
    );
  }
  return status;
}
