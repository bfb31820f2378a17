/** Whom `limiter.reset` clears, read and checked into the scopes of the store. @module */
import { InvalidRequestError } from '../errors/index.js';
import { describe } from '../internal/describe.js';
import { checkAttribution, checkRequest } from './limit-request.js';
import type { ResourceScope } from './limit-rule.js';
import type { Selector } from './policy-selector.js';
import type { ResetScope } from './store.js';

/**
 * Whom `limiter.reset` clears: a client and account as a whole, or one resource of theirs,
 * named by a `method` and `path` as a request would name it (with its `accountType`, when the
 * limiter has presets by account type).
 */
export interface ResetRequest<T extends string = string> {
  /** The client id. */
  readonly clientId: string;
  /** The account code. */
  readonly accountCode: string;
  /** Picks the preset whose resource limits `method` and `path` are read with, as in a request. */
  readonly accountType?: T | undefined;
  /** With `path`: the resource to clear, as a request to it names it. Absent: everything. */
  readonly method?: string | undefined;
  /** With `method`: the path of a request to the resource (version and spelling do not matter). */
  readonly path?: string | undefined;
}

const NO_RESOURCES: readonly ResourceScope[] = Object.freeze([]);

/**
 * The store scopes a reset clears: the client and account, or each resource the path names.
 * @throws InvalidRequestError for a scope a request could not have, or a path no resource limit counts
 * @internal
 */
export function resetScopes(
  input: ResetRequest,
  maxIdLength: number,
  select: Selector,
): ResetScope[] {
  if (typeof input !== 'object' || input === null) {
    throw new InvalidRequestError(
      'invalid_request',
      `reset() needs an object such as { clientId, accountCode }, got ${describe(input)}.`,
    );
  }
  let clientId: string;
  let accountCode: string;
  let accountType: string | undefined;
  let method: string | undefined;
  let path: string | undefined;
  try {
    ({ clientId, accountCode, accountType, method, path } = input);
  } catch (cause) {
    throw new InvalidRequestError(
      'invalid_request',
      'Reading the reset() scope threw; pass plain values.',
      { cause },
    );
  }
  checkAttribution(clientId, accountCode, accountType, maxIdLength);
  if (method === undefined && path === undefined) return [{ clientId, accountCode }];
  if (method === undefined || path === undefined) {
    throw new InvalidRequestError(
      'invalid_request',
      `reset() takes method and path together (the request to the resource to clear), or neither (the whole client and account); got only ${method === undefined ? 'path' : 'method'}.`,
    );
  }
  checkRequest(clientId, accountCode, accountType, method, path, maxIdLength);
  const group = select(clientId, accountCode, accountType, method, path);
  const resources = group.rules.effectOf?.(method, path)?.resources ?? NO_RESOURCES;
  if (resources.length === 0) {
    throw new InvalidRequestError(
      'invalid_path',
      `No resource limit of this limiter counts ${method} ${path}; name a request to a resource under a resource limit, or leave method and path out to clear the whole client and account.`,
    );
  }
  const keys = new Set(resources.map((r) => r.key));
  return [...keys].map((resource) => ({ clientId, accountCode, resource }));
}
