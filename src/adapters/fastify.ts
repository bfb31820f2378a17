/**
 * Rate limiting for Fastify 5 as a plugin: `app.register(fastifyRateLimit, { limiter, identify })`
 * from `api-conventions/fastify`. It applies to every route of the instance it is registered on
 * and of its children.
 * @module
 */
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import { createRateLimitGate, type RateLimitOptions } from '../http/rate-limit-gate.js';
import { clientGone, firstValue, holdUntilClosed } from './node-response.js';

/** Options of {@link fastifyRateLimit}: `identify` receives the Fastify request. */
export type FastifyRateLimitOptions = RateLimitOptions<FastifyRequest>;

/**
 * The Fastify plugin. An `onRequest` hook decides each request. Admitted: sets the tracking id
 * (and RateLimit fields when enabled) and gives the lease back when the response closes, however it
 * ends (Fastify answers a throwing handler with a 500). Refused: sends the 429.
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
  // Fastify's request.ip follows its `trustProxy` setting.
  const gate = createRateLimitGate(options, (request: FastifyRequest) => request.ip);
  const readTrackingId = (request: FastifyRequest) =>
    firstValue(request.headers[gate.trackingIdHeader]);
  fastify.addHook('onRequest', (request, reply, hookDone) => {
    const pending = gate.check(request, request.method, request.url, readTrackingId);
    const settle = (verdict: Awaited<typeof pending>): void => {
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
    };
    if (pending instanceof Promise) pending.then(settle);
    else settle(pending);
  });
  done();
};

// What fastify-plugin does: run in the parent's context, so the hook covers the parent's routes.
Object.assign(fastifyRateLimit, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'api-conventions-rate-limit',
});
