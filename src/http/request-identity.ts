/**
 * What `identify` answers, read at the edge where it enters: the limiter checks the values' types
 * and lengths itself, so the gate only tells an identity from none.
 * @module
 */
import { InvalidRequestError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import { RequestFields } from '../limits/limit-request.js';

/**
 * The request as the limiter reads it, each field of the identity read once; `undefined` when
 * there is none to count (nothing returned, no client id or no account code).
 * @param identity - what `identify` answered
 * @param method - the HTTP method
 * @param path - the request target
 * @throws InvalidRequestError when `identity` is not an object; a getter's throw is passed on
 */
export function identityFields(
  identity: unknown,
  method: string,
  path: string,
): RequestFields | undefined {
  if (identity === undefined || identity === null) return undefined;
  if (typeof identity !== 'object') {
    throw new InvalidRequestError(
      'invalid_request',
      `identify() must return { clientId, accountCode, accountType? } or undefined, got ${describe(identity)}.`,
    );
  }
  const { clientId, accountCode, accountType } = identity as Record<string, unknown>;
  if (isMissing(clientId) || isMissing(accountCode)) return undefined;
  return new RequestFields(
    clientId as string,
    accountCode as string,
    accountType as string | undefined,
    method,
    path,
  );
}

const isMissing = (value: unknown): boolean =>
  value === undefined || value === null || value === '';
