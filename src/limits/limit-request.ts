/**
 * A request as the limiter sees it, and the one check of its fields: nothing after it checks.
 * @module
 */
import { InvalidRequestError } from '../errors/index.js';
import { describe } from '../internal/describe.js';

/**
 * A request as the limiter sees it: who sends it, and what it asks for. `T` is the account types
 * of the limiter's presets, when it knows them.
 */
export interface LimitRequest<T extends string = string> {
  /** The client (application) id; limits are counted per client id and account code. */
  readonly clientId: string;
  /** The account code. */
  readonly accountCode: string;
  /** Picks the preset when the limiter has one per account type (`live`, `development`, `trial`). */
  readonly accountType?: T | undefined;
  /** The HTTP method. */
  readonly method: string;
  /** The request path (the query string is ignored). */
  readonly path: string;
}

/** A {@link LimitRequest} of plain values, read once; a `policies` function is handed one. */
export class RequestFields implements LimitRequest {
  /**
   * @param clientId - the client id
   * @param accountCode - the account code
   * @param accountType - the account type, if any
   * @param method - the HTTP method
   * @param path - the request path
   */
  constructor(
    readonly clientId: string,
    readonly accountCode: string,
    readonly accountType: string | undefined,
    readonly method: string,
    readonly path: string,
  ) {}
}

const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;
// Accepted without running the token pattern.
const COMMON_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The error for a request that is no object. @internal */
export function notARequest(input: unknown): InvalidRequestError {
  return new InvalidRequestError(
    'invalid_request',
    `check() needs a request object; it must have clientId, accountCode, method and path, got ${describe(input)}.`,
  );
}

/** The error for a request whose fields cannot be read. @internal */
export function unreadableRequest(cause: unknown): InvalidRequestError {
  return new InvalidRequestError(
    'invalid_request',
    'Reading the request object threw; pass plain values from identify().',
    { cause },
  );
}

/**
 * Positional, so that `check` makes no object per request.
 * @throws InvalidRequestError naming the field
 * @internal
 */
export function checkRequest(
  clientId: unknown,
  accountCode: unknown,
  accountType: unknown,
  method: unknown,
  path: unknown,
  maxIdLength: number,
): void {
  checkAttribution(clientId, accountCode, accountType, maxIdLength);
  if (typeof method !== 'string' || !(COMMON_METHODS.has(method) || METHOD.test(method))) {
    throw new InvalidRequestError(
      'invalid_method',
      `method must be an HTTP method token such as "GET", got ${describe(method)}.`,
    );
  }
  if (typeof path !== 'string') {
    throw new InvalidRequestError('invalid_path', `path must be a string, got ${describe(path)}.`);
  }
}

/**
 * The fields that attribute a request, or a reset, to a client and account.
 * @throws InvalidRequestError naming the field
 * @internal
 */
export function checkAttribution(
  clientId: unknown,
  accountCode: unknown,
  accountType: unknown,
  maxIdLength: number,
): void {
  checkId(clientId, 'clientId', 'invalid_client_id', maxIdLength);
  checkId(accountCode, 'accountCode', 'invalid_account_code', maxIdLength);
  if (accountType !== undefined && typeof accountType !== 'string') {
    throw new InvalidRequestError(
      'invalid_account_type',
      `accountType must be a string or undefined, got ${describe(accountType)}.`,
    );
  }
}

function checkId(
  value: unknown,
  name: string,
  code: 'invalid_client_id' | 'invalid_account_code',
  max: number,
): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new InvalidRequestError(
      code,
      `${name} must be a non-empty string of at most ${max} characters, got ${describe(value)}${typeof value === 'string' ? ` (${value.length} characters)` : ''}; map every request to its ${name} in identify().`,
    );
  }
}
