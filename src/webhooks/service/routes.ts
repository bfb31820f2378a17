/**
 * The routes of the webhook service: a request's method and path to the operation, or the 404 or
 * 405 that refuses it.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { messageNotFound, serviceProblem, subscriptionNotFound } from './problems.js';

/** The operations of the API. @internal */
export type Operation =
  | 'create'
  | 'list'
  | 'read'
  | 'change'
  | 'delete'
  | 'rotate'
  | 'auditLogs'
  | 'attempts'
  | 'replaySubscription'
  | 'replayMessage';

/** The operation asked for, with its subscription id, or the answer that refuses the request. @internal */
export type RouteMatch =
  | { readonly ok: true; readonly operation: Operation; readonly id: string }
  | { readonly ok: false; readonly response: ResponseParts };

/** Ids longer than this are no id of any subscription: 404 without a look-up. */
export const MAX_ID_LENGTH = 256;

const COLLECTION: Readonly<Record<string, Operation>> = { POST: 'create', GET: 'list' };
const ITEM: Readonly<Record<string, Operation>> = {
  GET: 'read',
  PATCH: 'change',
  DELETE: 'delete',
};
const ROTATE: Readonly<Record<string, Operation>> = { POST: 'rotate' };
const AUDIT_LOGS: Readonly<Record<string, Operation>> = { GET: 'auditLogs' };
const ATTEMPTS: Readonly<Record<string, Operation>> = { GET: 'attempts' };
const REPLAY_SUBSCRIPTION: Readonly<Record<string, Operation>> = { POST: 'replaySubscription' };
const REPLAY_MESSAGE: Readonly<Record<string, Operation>> = { POST: 'replayMessage' };
/** The paths without an id, and their routes. */
const FIXED: Readonly<Record<string, Readonly<Record<string, Operation>>>> = {
  '/v1/subscriptions': COLLECTION,
  '/v1/audit-logs': AUDIT_LOGS,
};
/** The routes under a subscription's path. */
const SUBRESOURCES: Readonly<Record<string, Readonly<Record<string, Operation>>>> = {
  '': ITEM,
  '/secret/rotate': ROTATE,
  '/attempts': ATTEMPTS,
  '/replay': REPLAY_SUBSCRIPTION,
};

/**
 * Match a request.
 * @param pathname - the path as sent, still percent-encoded (`new URL(request.url).pathname`)
 * @internal
 */
export function matchRoute(method: string, pathname: string, basePath: string): RouteMatch {
  if (!pathname.startsWith(basePath)) return notFound(pathname);
  const rest = pathname.slice(basePath.length);
  const fixed = Object.hasOwn(FIXED, rest) ? FIXED[rest] : undefined;
  if (fixed !== undefined) return byMethod(fixed, method, '');
  for (const [prefix, subresources, missing] of ITEMS) {
    if (!rest.startsWith(prefix)) continue;
    const tail = rest.slice(prefix.length);
    const slash = tail.indexOf('/');
    const encoded = slash === -1 ? tail : tail.slice(0, slash);
    const after = slash === -1 ? '' : tail.slice(slash);
    const routes = Object.hasOwn(subresources, after) ? subresources[after] : undefined;
    if (encoded === '' || routes === undefined) return notFound(pathname);
    const matched = byMethod(routes, method, '');
    if (!matched.ok) return matched;
    const id = decodeId(encoded);
    if (id === undefined) return { ok: false, response: missing(encoded) };
    return { ok: true, operation: matched.operation, id };
  }
  return notFound(pathname);
}

/** The routes under a message's path. */
const MESSAGE_SUBRESOURCES: Readonly<Record<string, Readonly<Record<string, Operation>>>> = {
  '/replay': REPLAY_MESSAGE,
};

/** The item paths: their prefix, their subresources, and the 404 of an id no item has. */
const ITEMS = [
  ['/v1/subscriptions/', SUBRESOURCES, subscriptionNotFound],
  ['/v1/messages/', MESSAGE_SUBRESOURCES, messageNotFound],
] as const;

/** One route of the table: its method, its path (an item's id written `{id}`) and operation. @internal */
export interface RouteEntry {
  readonly method: string;
  readonly path: string;
  readonly operation: Operation;
}

/** Every route {@link matchRoute} answers, from the tables it matches by. @internal */
export function routeTable(): RouteEntry[] {
  const entries: RouteEntry[] = [];
  const add = (path: string, routes: Readonly<Record<string, Operation>>) => {
    for (const [method, operation] of Object.entries(routes)) {
      entries.push({ method, path, operation });
    }
  };
  for (const [path, routes] of Object.entries(FIXED)) add(path, routes);
  for (const [prefix, subresources] of ITEMS) {
    for (const [after, routes] of Object.entries(subresources))
      add(`${prefix}{id}${after}`, routes);
  }
  return entries;
}

// An id is one segment: `%2F` in it is part of the id, not a separator.
function decodeId(encoded: string): string | undefined {
  if (encoded.length > MAX_ID_LENGTH * 12) return undefined;
  let id: string;
  try {
    id = decodeURIComponent(encoded);
  } catch {
    return undefined; // a malformed escape names no id
  }
  // PostgreSQL text cannot hold U+0000: no stored id has one, and a query with one would fail.
  return id.length > MAX_ID_LENGTH || id.includes('\u0000') ? undefined : id;
}

function byMethod(
  routes: Readonly<Record<string, Operation>>,
  method: string,
  id: string,
): RouteMatch {
  // HEAD is a GET whose answer has no body (the service leaves the body out).
  const asked = method === 'HEAD' ? 'GET' : method;
  const operation = Object.hasOwn(routes, asked) ? routes[asked] : undefined;
  if (operation !== undefined) return { ok: true, operation, id };
  const methods = Object.keys(routes);
  const allow = (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ');
  return {
    ok: false,
    response: serviceProblem(405, 'method_not_allowed', 'Method not allowed', {
      detail: `This resource answers ${allow}, not ${method.slice(0, 20)}.`,
      headers: { allow },
    }),
  };
}

function notFound(pathname: string): RouteMatch {
  const shown = pathname.length > 100 ? `${pathname.slice(0, 100)}…` : pathname;
  return {
    ok: false,
    response: serviceProblem(404, 'route_not_found', 'Not found', {
      detail: `No resource at ${JSON.stringify(shown)}; the API serves /v1/subscriptions, /v1/audit-logs and /v1/messages/{id}/replay.`,
    }),
  };
}
