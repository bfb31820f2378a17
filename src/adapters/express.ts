/**
 * Rate limiting for Express 5: `app.use(expressRateLimit({ limiter, identify }))` from
 * `api-conventions/express`. Counts the path as the client sent it (`req.originalUrl`), wherever
 * the middleware is mounted.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRateLimitGate, type RateLimitOptions } from '../http/rate-limit-gate.js';
import { NodeGate, socketAddress } from './node-response.js';

/** The part of an Express request the middleware reads: a node request with `originalUrl`. */
export type ExpressLikeRequest = IncomingMessage & {
  /** The URL before any mount path was taken off. */
  originalUrl?: string;
};

/** Options of {@link expressRateLimit}: `identify` receives the Express request. */
export type ExpressRateLimitOptions<
  R extends ExpressLikeRequest = ExpressLikeRequest,
  T extends string = string,
> = RateLimitOptions<R, T>;

/** An Express middleware. */
export type ExpressRateLimitMiddleware<R extends ExpressLikeRequest = ExpressLikeRequest> = (
  req: R,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void;

/**
 * Make the Express middleware. Admitted: sets the tracking id (and RateLimit fields when enabled),
 * calls `next()` and gives the lease back when the response closes, however it ends (Express
 * answers a throwing handler with a 500, which closes the response). Refused: writes the 429.
 * @param options - limiter, identify, skip, failure mode, onError, tracking id, headers
 * @example
 * ```ts
 * import type { Request } from 'express';
 * app.use(expressRateLimit({
 *   limiter: createLimiter({ preset: presets.byAccountType }),
 *   identify: (req: Request) => ({ clientId: req.auth.clientId, accountCode: req.auth.account }),
 * }));
 * ```
 */
export function expressRateLimit<
  R extends ExpressLikeRequest = ExpressLikeRequest,
  T extends string = string,
>(options: ExpressRateLimitOptions<R, T>): ExpressRateLimitMiddleware<R> {
  // Express's req.ip follows its `trust proxy` setting; the socket's address otherwise.
  const rateLimitGate = createRateLimitGate(options, (req: R) => {
    const { ip } = req as { ip?: unknown };
    return typeof ip === 'string' ? ip : socketAddress(req);
  });
  // Express answers a throwing handler itself.
  const gate = new NodeGate(rateLimitGate, { catchHandlerErrors: false });
  return (req, res, next) => gate.handle(req, res, req.originalUrl ?? req.url ?? '/', next);
}
