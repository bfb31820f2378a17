/**
 * The routes of the webhook service: a request's method and path to the operation, or the 404 or
 * 405 that refuses it.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import {
  messageNotFound,
  serviceProblem,
  subscriptionNotFound,
  type WebhookServiceProblemCode,
} from './problems.js';

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
  | 'replayMessage'
  | 'openApi';

/** The operation asked for, with its subscription id, or the answer that refuses the request. @internal */
export type RouteMatch =
  | { readonly ok: true; readonly operation: Operation; readonly id: string }
  | { readonly ok: false; readonly response: ResponseParts };

/** Ids longer than this are no id of any subscription: 404 without a look-up. */
export const MAX_ID_LENGTH = 256;

/** What an operation's query takes: pages by number, attempts by cursor with filters, or nothing. @internal */
export type RouteQuery = 'pageNumber' | 'attempts';

/** What an operation's body is. @internal */
export type RouteBody = 'subscriptionRequest' | 'subscriptionChange' | 'replaySince';

/** What an operation answers when it succeeds. @internal */
export type RouteAnswer =
  | 'subscriptionCreated'
  | 'subscriptionPage'
  | 'subscription'
  | 'subscriptionChanged'
  | 'noContent'
  | 'rotation'
  | 'attemptPage'
  | 'subscriptionReplay'
  | 'messageReplay'
  | 'openApiDocument';

/** One route of the API: the path, method and operation, and what the OpenAPI document says of it. @internal */
export interface Route {
  readonly operation: Operation;
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Under the base path; `{id}` is one percent-encoded segment. */
  readonly path: string;
  readonly summary: string;
  /** Answered without `identify` and outside the limiter. */
  readonly anonymous?: true;
  readonly query?: RouteQuery;
  readonly body?: RouteBody;
  readonly answer: RouteAnswer;
  /** The problem codes of this route beyond those of every request and of its query and body. */
  readonly problems: readonly WebhookServiceProblemCode[];
}

/**
 * The route table: the service answers these routes and no other, and the OpenAPI document
 * (`webhookServiceOpenApi`) describes these and no other.
 * @internal
 */
export const routeTable: readonly Route[] = Object.freeze([
  {
    operation: 'create',
    method: 'POST',
    path: '/v1/subscriptions',
    summary: 'Create a subscription; its secret is shown once',
    body: 'subscriptionRequest',
    answer: 'subscriptionCreated',
    problems: ['subscription_limit_reached'],
  },
  {
    operation: 'list',
    method: 'GET',
    path: '/v1/subscriptions',
    summary: 'List the subscriptions of the account, in creation order, by page number',
    query: 'pageNumber',
    answer: 'subscriptionPage',
    problems: [],
  },
  {
    operation: 'read',
    method: 'GET',
    path: '/v1/subscriptions/{id}',
    summary: 'Read a subscription',
    answer: 'subscription',
    problems: ['subscription_not_found'],
  },
  {
    operation: 'change',
    method: 'PATCH',
    path: '/v1/subscriptions/{id}',
    summary: 'Change a subscription; a change of signatureType rotates its secret',
    body: 'subscriptionChange',
    answer: 'subscriptionChanged',
    problems: ['subscription_not_found'],
  },
  {
    operation: 'delete',
    method: 'DELETE',
    path: '/v1/subscriptions/{id}',
    summary: 'Delete a subscription',
    answer: 'noContent',
    problems: ['subscription_not_found'],
  },
  {
    operation: 'rotate',
    method: 'POST',
    path: '/v1/subscriptions/{id}/secret/rotate',
    summary: 'Give a subscription a new secret of its type; the old ones sign on through the grace',
    answer: 'rotation',
    problems: ['subscription_not_found'],
  },
  {
    operation: 'attempts',
    method: 'GET',
    path: '/v1/subscriptions/{id}/attempts',
    summary: "List a subscription's delivery attempts, newest first, by cursor",
    query: 'attempts',
    answer: 'attemptPage',
    problems: ['subscription_not_found'],
  },
  {
    operation: 'replaySubscription',
    method: 'POST',
    path: '/v1/subscriptions/{id}/replay',
    summary: 'Send again every message the subscription failed since a time',
    body: 'replaySince',
    answer: 'subscriptionReplay',
    problems: ['subscription_not_found', 'subscription_disabled'],
  },
  {
    operation: 'auditLogs',
    method: 'GET',
    path: '/v1/audit-logs',
    summary: 'List every delivery attempt of the account, newest first, by cursor',
    query: 'attempts',
    answer: 'attemptPage',
    problems: [],
  },
  {
    operation: 'replayMessage',
    method: 'POST',
    path: '/v1/messages/{id}/replay',
    summary: 'Send a message again to each enabled subscription that failed it',
    answer: 'messageReplay',
    problems: ['message_not_found'],
  },
  {
    operation: 'openApi',
    method: 'GET',
    path: '/v1/openapi.json',
    summary: "This API's OpenAPI 3.1 document",
    anonymous: true,
    answer: 'openApiDocument',
    problems: [],
  },
] satisfies Route[]);

type Methods = Readonly<Record<string, Operation>>;

/** The operations of each path without an id, by method. */
const FIXED = new Map<string, Record<string, Operation>>();
/** The operations under each item prefix (`/v1/subscriptions/`), by what follows the id and method. */
const ITEM_ROUTES = new Map<string, Map<string, Record<string, Operation>>>();
for (const route of routeTable) {
  const at = route.path.indexOf('{id}');
  if (at === -1) {
    const methods = FIXED.get(route.path) ?? {};
    FIXED.set(route.path, { ...methods, [route.method]: route.operation });
    continue;
  }
  const prefix = route.path.slice(0, at);
  const after = route.path.slice(at + '{id}'.length);
  const subresources = ITEM_ROUTES.get(prefix) ?? new Map<string, Record<string, Operation>>();
  subresources.set(after, { ...subresources.get(after), [route.method]: route.operation });
  ITEM_ROUTES.set(prefix, subresources);
}

/** The 404 of an id no item has, by item prefix. */
const MISSING: Readonly<Record<string, (id: string) => ResponseParts>> = {
  '/v1/subscriptions/': subscriptionNotFound,
  '/v1/messages/': messageNotFound,
};

/**
 * Match a request.
 * @param pathname - the path as sent, still percent-encoded (`new URL(request.url).pathname`)
 * @internal
 */
export function matchRoute(method: string, pathname: string, basePath: string): RouteMatch {
  if (!pathname.startsWith(basePath)) return notFound(pathname);
  const rest = pathname.slice(basePath.length);
  const fixed = FIXED.get(rest);
  if (fixed !== undefined) return byMethod(fixed, method, '');
  for (const [prefix, subresources] of ITEM_ROUTES) {
    if (!rest.startsWith(prefix)) continue;
    const tail = rest.slice(prefix.length);
    const slash = tail.indexOf('/');
    const encoded = slash === -1 ? tail : tail.slice(0, slash);
    const after = slash === -1 ? '' : tail.slice(slash);
    const routes = subresources.get(after);
    if (encoded === '' || routes === undefined) return notFound(pathname);
    const matched = byMethod(routes, method, '');
    if (!matched.ok) return matched;
    const id = decodeId(encoded);
    if (id === undefined) {
      const missing = MISSING[prefix] ?? subscriptionNotFound;
      return { ok: false, response: missing(encoded) };
    }
    return { ok: true, operation: matched.operation, id };
  }
  return notFound(pathname);
}

// Read from the table once, not at every request.
const ANONYMOUS: ReadonlySet<Operation> = new Set(
  routeTable.filter((route) => route.anonymous === true).map((route) => route.operation),
);

/** Whether the route an operation is on is answered without `identify`. @internal */
export function isAnonymous(operation: Operation): boolean {
  return ANONYMOUS.has(operation);
}

/**
 * Whether a method only reads (GET, and HEAD answered as GET): every other method of a route
 * changes something, which a read-only portal token may not ask. @internal
 */
export function isReading(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
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

function byMethod(routes: Methods, method: string, id: string): RouteMatch {
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
