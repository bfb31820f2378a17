/**
 * The path of a request rebuilt from the route a router matched (`/bookings/:id`) and the
 * parameters it captured, for adapters that count the route rather than the URL as sent.
 * @module
 */

// A segment of a route path that is one whole parameter, such as `:id`.
const WHOLE_PARAM = /^:([A-Za-z0-9_]+)$/;
// A literal segment that routes exactly as written: no parameter, wildcard, regular expression,
// escape or character that the canonical reading would take apart.
const PLAIN_LITERAL = /^[^:*()%?#;\\]*$/;

type RouteShape = ReadonlyArray<{ readonly literal: string } | { readonly param: string }>;

/**
 * Fills one route's path from the parameters a router captured: the path, percent-encoded, or
 * `undefined` when it cannot be filled (see {@link filledRoutePath}).
 * @internal
 */
export type RoutePathFiller = (params: unknown) => string | undefined;

// Bounded by the routes the application registered.
const fillers = new Map<string, RoutePathFiller>();

const NOT_FILLED: RoutePathFiller = () => undefined;

/**
 * The matched route's path with its parameters filled in, each percent-encoded, or `undefined`
 * when it cannot be: a route that is not a string or not absolute, a segment other than a plain
 * literal or one whole `:name` parameter, or a parameter that is missing or empty.
 * @param route - the route as registered with the router, such as `/bookings/:id`
 * @param params - the parameters the router captured, by name
 * @internal
 */
export function filledRoutePath(route: unknown, params: unknown): string | undefined {
  return routePathFiller(route)(params);
}

/**
 * What {@link filledRoutePath} answers for `route`, as a function of the parameters: read the
 * route once, fill it per request. A route without parameters is one path, made once.
 * @internal
 */
export function routePathFiller(route: unknown): RoutePathFiller {
  if (typeof route !== 'string') return NOT_FILLED;
  let filler = fillers.get(route);
  if (filler === undefined) {
    filler = fillerOf(routeShape(route));
    fillers.set(route, filler);
  }
  return filler;
}

function fillerOf(shape: RouteShape | null): RoutePathFiller {
  if (shape === null) return NOT_FILLED;
  if (shape.every((segment) => 'literal' in segment)) {
    const path = shape.map((segment) => `/${(segment as { literal: string }).literal}`).join('');
    return () => path;
  }
  return (params) => {
    const values = params as Record<string, unknown> | null | undefined;
    let path = '';
    for (const segment of shape) {
      if ('literal' in segment) {
        path += `/${segment.literal}`;
        continue;
      }
      const value = values?.[segment.param];
      if (typeof value !== 'string' || value === '') return undefined;
      path += `/${encodeURIComponent(value)}`;
    }
    return path;
  };
}

function routeShape(route: string): RouteShape | null {
  if (route.charCodeAt(0) !== 0x2f) return null;
  const shape: Array<{ literal: string } | { param: string }> = [];
  for (const segment of route.slice(1).split('/')) {
    const param = WHOLE_PARAM.exec(segment);
    if (param !== null) shape.push({ param: param[1]! });
    else if (PLAIN_LITERAL.test(segment)) shape.push({ literal: segment });
    else return null;
  }
  return shape;
}
