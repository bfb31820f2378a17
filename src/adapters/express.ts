/** Rate limiting for Express 5, from `api-conventions/express`. @module */
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
 * Make the Express middleware. It counts `req.originalUrl`, wherever it is mounted, and gives an
 * admitted request's lease back when the response closes, however it ends.
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
