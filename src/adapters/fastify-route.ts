/**
 * The path of the route a Fastify request matched, read once per route rather than per request.
 * @module
 */
import type { FastifyRequest } from 'fastify';
import { type RoutePathFiller, routePathFiller } from '../limits/route-path.js';

/**
 * Reads the path of the route a request matched, its parameters filled in (`undefined` for none
 * or one that cannot be filled): the route is read once per route, not per request.
 *
 * `request.routeOptions` makes a new object on each read. Fastify keeps the matched route's
 * context on the request under the symbol `fastify.context` (what `routeOptions` reads, and one
 * object per route, the not-found handler's included), found on the first request: each context's
 * route is read through `routeOptions` once and its filler kept for the context's lifetime. Where
 * a Fastify has no such symbol, `routeOptions` is read on every request, as before: the same path,
 * at its cost.
 * @internal
 */
export function routePathReader(): (request: FastifyRequest) => string | undefined {
  let contextKey: symbol | null | undefined;
  const fillers = new WeakMap<object, RoutePathFiller>();
  return (request) => {
    if (contextKey === undefined) contextKey = routeContextKey(request);
    const context: unknown = contextKey === null ? undefined : Reflect.get(request, contextKey);
    if (typeof context !== 'object' || context === null) {
      return routePathFiller(request.routeOptions.url)(request.params);
    }
    let filler = fillers.get(context);
    if (filler === undefined) {
      filler = routePathFiller(request.routeOptions.url);
      fillers.set(context, filler);
    }
    return filler(request.params);
  };
}

function routeContextKey(request: FastifyRequest): symbol | null {
  for (const key of Object.getOwnPropertySymbols(request)) {
    if (key.description !== 'fastify.context') continue;
    const context: unknown = Reflect.get(request, key);
    if (typeof context === 'object' && context !== null && 'config' in context) return key;
  }
  return null;
}
