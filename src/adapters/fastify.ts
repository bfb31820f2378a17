/**
 * Rate limiting for Fastify 5 as a plugin, and a fetch handler mounted in Fastify (from
 * fastify-fetch.ts), from `api-conventions/fastify`.
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
import { routePathReader } from './fastify-route.js';
import { clientGone, firstValue, holdUntilClosed } from './node-response.js';

export { type FastifyFetchOptions, fastifyFetchPlugin } from './fastify-fetch.js';

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
  const routePath = byRoute ? routePathReader() : undefined;
  fastify.addHook('onRequest', (request, reply, hookDone) => {
    const path = routePath?.(request) ?? request.url;
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

// What fastify-plugin does: run in the parent's context, so the hook covers the parent's routes.
Object.assign(fastifyRateLimit, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'api-conventions-rate-limit',
});
