/**
 * Rate limiting for Fastify 5 as a plugin, and a fetch handler mounted in Fastify, from
 * `api-conventions/fastify`.
 * @module
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import {
  createRateLimitGate,
  type GateVerdict,
  type RateLimitGate,
  type RateLimitOptions,
} from '../http/rate-limit-gate.js';
import { checkValue, oneOf } from '../internal/options.js';
import {
  type FetchTarget,
  type NodeFetchHandlerOptions,
  type NodeFetchListener,
  nodeFetchHandler,
} from './fetch-bridge.js';
import { clientGone, firstValue, holdUntilClosed } from './node-response.js';

/** Options of {@link fastifyRateLimit}: `identify` receives the Fastify request. */
export type FastifyRateLimitOptions = RateLimitOptions<FastifyRequest> & {
  /**
   * Which path the limiter reads: `route`, the matched route's path with its parameters filled in
   * (else the URL; see docs/middleware.md), or `url`, the URL as the client sent it.
   * @defaultValue `'route'`
   */
  keyBy?: 'route' | 'url';
};

const keyByRule = oneOf('route', 'url');

/**
 * The Fastify plugin, covering every route of the instance it is registered on and its children.
 * An admitted request's lease is given back when the response closes, however it ends.
 * @example
 * ```ts
 * await app.register(fastifyRateLimit, {
 *   limiter: createLimiter({ preset: presets.byAccountType }),
 *   identify: (request) => ({ clientId: request.user.clientId, accountCode: request.user.account }),
 * });
 * ```
 */
export const fastifyRateLimit: FastifyPluginCallback<FastifyRateLimitOptions> = (
  fastify,
  options,
  done,
) => {
  let gate: RateLimitGate<FastifyRequest>;
  let byRoute: boolean;
  try {
    const { keyBy, ...gateOptions } = options;
    // Fastify's request.ip follows its `trustProxy` setting.
    gate = createRateLimitGate(gateOptions, (request: FastifyRequest) => request.ip);
    byRoute = keyBy === undefined || checkValue(keyByRule, keyBy, 'keyBy') === 'route';
  } catch (error) {
    // Handed to Fastify, which fails `ready()` with it; a throw would escape the plugin loader.
    done(error as Error);
    return;
  }
  const readTrackingId = (request: FastifyRequest) =>
    firstValue(request.headers[gate.trackingIdHeader]);
  fastify.addHook('onRequest', (request, reply, hookDone) => {
    const path = (byRoute ? routedPath(request) : undefined) ?? request.url;
    const verdict = gate.check(request, request.method, path, readTrackingId);
    if (verdict instanceof Promise) verdict.then((v) => settle(v, request, reply, hookDone));
    else settle(verdict, request, reply, hookDone);
  });
  done();
};

function settle(
  verdict: GateVerdict,
  request: FastifyRequest,
  reply: FastifyReply,
  hookDone: () => void,
): void {
  // The client may have gone while an asynchronous store decided: nothing left to serve.
  if (clientGone(request.raw, reply.raw)) {
    verdict.release();
    reply.hijack();
    return;
  }
  const { response } = verdict;
  if (response !== undefined) {
    reply.code(response.status).headers(response.headers).send(response.body);
    return;
  }
  reply.headers(verdict.headers);
  if (verdict.holdsLease) holdUntilClosed(request.raw, reply.raw, verdict.release);
  hookDone();
}

// A segment of a route path that is one whole parameter, such as `:id`.
const WHOLE_PARAM = /^:([A-Za-z0-9_]+)$/;
// A literal segment that routes exactly as written: no parameter, wildcard, regular expression,
// escape or character that the canonical reading would take apart.
const PLAIN_LITERAL = /^[^:*()%?#;\\]*$/;

type RouteShape = ReadonlyArray<{ readonly literal: string } | { readonly param: string }>;

// Bounded by the routes the application registered.
const shapes = new Map<string, RouteShape | null>();

/** The matched route's path with its parameters filled in, or `undefined` when it cannot be. */
function routedPath(request: FastifyRequest): string | undefined {
  const route = request.routeOptions.url;
  if (typeof route !== 'string') return undefined;
  let shape = shapes.get(route);
  if (shape === undefined) {
    shape = routeShape(route);
    shapes.set(route, shape);
  }
  if (shape === null) return undefined;
  const params = request.params as Record<string, unknown> | null | undefined;
  let path = '';
  for (const segment of shape) {
    if ('literal' in segment) {
      path += `/${segment.literal}`;
      continue;
    }
    const value = params?.[segment.param];
    if (typeof value !== 'string' || value === '') return undefined;
    path += `/${encodeURIComponent(value)}`;
  }
  return path;
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

// What fastify-plugin does: run in the parent's context, so the hook covers the parent's routes.
Object.assign(fastifyRateLimit, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'api-conventions-rate-limit',
});

/** Options of {@link fastifyFetchPlugin}: the handler, and the bridge's `origin` and `onError`. */
export interface FastifyFetchOptions extends NodeFetchHandlerOptions {
  /**
   * What answers every request under the plugin's prefix: a fetch handler, or an object whose
   * `fetch` method is one (the webhook service).
   */
  handler: FetchTarget;
}

/**
 * A fetch handler (`(request: Request) => Promise<Response>`) answering every method and path
 * under the prefix it is registered with, through {@link nodeFetchHandler}. The plugin is
 * encapsulated: inside it, every body is left unread for the handler (Fastify's parsers and its
 * `bodyLimit` do not run; the handler reads and limits the body itself), while the hooks of its
 * parents (a rate limit among them) still run first. The `Request` URL is the whole path, prefix
 * included.
 * @example
 * ```ts
 * await app.register(fastifyFetchPlugin, { handler: service, prefix: '/v1' });
 * ```
 */
export const fastifyFetchPlugin: FastifyPluginCallback<FastifyFetchOptions> = (
  fastify,
  options,
  done,
) => {
  let serve: NodeFetchListener;
  try {
    // Fastify hands the plugin its registration options too (`prefix`, `logLevel`, ...).
    const { handler, origin, onError } = options;
    serve = nodeFetchHandler(handler, { origin, onError });
  } catch (error) {
    done(error as Error);
    return;
  }
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_request, _payload, parsed) => parsed(null));
  const answer = (request: FastifyRequest, reply: FastifyReply) => {
    // Fastify lets go of the reply: the bridge writes node's response itself.
    reply.hijack();
    return serve(request.raw, reply.raw);
  };
  fastify.all('/', answer);
  fastify.all('/*', answer);
  done();
};
