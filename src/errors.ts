/**
 * The library's thrown errors: one base class, subclasses that set `name` and `code`.
 *
 * Thrown errors are for programmer mistakes (bad configuration). Expected failures of a request
 * (a bad query, a refused subscription, a limit reached) are returned as values, never thrown.
 * @module
 */

// A registered symbol, so that the guards recognise errors from another copy of the package.
const BRAND = Symbol.for('api-conventions.error');

/** Options accepted by every error constructor. */
export interface ErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * Base class of every error the library throws. `code` is stable and part of the public API.
 */
export class ApiConventionsError extends Error {
  /** Stable, machine-readable code. */
  readonly code: string;

  /**
   * @param code - stable, machine-readable code
   * @param message - what went wrong and what to change
   * @param options - `cause`, forwarded to `Error`
   */
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiConventionsError';
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * Codes of {@link ConfigurationError}. A test pins this list: removing or renaming one is a
 * breaking change.
 */
export const configurationErrorCodes = [
  'invalid_limit',
  'invalid_duration',
  'invalid_rate',
  'invalid_policy',
  'duplicate_policy_name',
  'invalid_option',
  // src/limits/route-pattern.ts and src/limits/route-table.ts
  'invalid_route_pattern',
  'invalid_route_rule',
  // pagination: a cursor state that JSON cannot represent
  'invalid_cursor_state',
  // webhooks
  'invalid_event_catalog',
  'invalid_subscription',
  'duplicate_subscription_id',
  // src/http/tracking-id.ts: the tracking id header and source of the 429 and the middleware
  'invalid_header_name',
  'invalid_tracking_id',
  // src/redis: a Redis client without the commands the store needs
  'invalid_redis_client',
  // src/webhooks: delivery (a malformed whsec_ secret, a bad SSRF allow-list entry)
  'invalid_webhook_secret',
  'invalid_address_allow_list',
] as const;

/** A code of {@link ConfigurationError}. */
export type ConfigurationErrorCode = (typeof configurationErrorCodes)[number];

/**
 * Thrown when the library is configured wrongly (a limit of 0, a negative duration, two policies
 * with the same name). The message says what to change.
 */
export class ConfigurationError extends ApiConventionsError {
  declare readonly code: ConfigurationErrorCode;

  /**
   * @param code - which configuration rule was broken
   * @param message - what to change
   * @param options - `cause`
   */
  constructor(code: ConfigurationErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'ConfigurationError';
  }
}

/**
 * Codes of {@link InvalidRequestError}. A test pins this list: removing or renaming one is a
 * breaking change.
 */
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

  /**
   * @param code - which field is wrong
   * @param message - what to change
   * @param options - `cause`
   */
  constructor(code: InvalidRequestErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'InvalidRequestError';
  }
}

/**
 * True for any error thrown by this library, including one from another copy of the package.
 * Never throws, whatever the value.
 * @param value - anything caught
 */
export function isApiConventionsError(value: unknown): value is ApiConventionsError {
  return errorName(value) !== undefined;
}

/**
 * The `name` of an error of this library (of any copy of the package), read once, or `undefined`
 * for anything else: a getter or Proxy that throws is not one of ours, and the guards answer.
 * @param value - anything caught
 * @internal
 */
export function errorName(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    const error = value as { [BRAND]?: unknown; code?: unknown; name?: unknown };
    if (error[BRAND] !== true || typeof error.code !== 'string') return undefined;
    const { name } = error;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True for a {@link ConfigurationError}, including one from another copy of the package.
 * @param value - anything caught
 */
export function isConfigurationError(value: unknown): value is ConfigurationError {
  return errorName(value) === 'ConfigurationError';
}

/**
 * True for an {@link InvalidRequestError}, including one from another copy of the package.
 * @param value - anything caught
 */
export function isInvalidRequestError(value: unknown): value is InvalidRequestError {
  return errorName(value) === 'InvalidRequestError';
}
