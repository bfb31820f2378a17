/** Rate limiting for Koa, from `api-conventions/koa`. @module */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRateLimitGate, type RateLimitOptions } from '../http/rate-limit-gate.js';
import { clientGone, firstValue, holdUntilClosed, socketAddress } from './node-response.js';

/** The part of a Koa context the middleware uses. */
export interface KoaLikeContext {
  /** The node request. */
  readonly req: IncomingMessage;
  /** The node response. */
  readonly res: ServerResponse;
  /** The request method. */
  readonly method: string;
  /** The URL as the client sent it, before any rewrite. */
  readonly originalUrl: string;
  /** Response status. */
  status: number;
  /** Response body. */
  body: unknown;
  /** Set response headers. */
  set(headers: Record<string, string>): void;
}

/** Options of {@link koaRateLimit}: `identify` receives the Koa context. */
export type KoaRateLimitOptions<
  C extends KoaLikeContext = KoaLikeContext,
  T extends string = string,
> = RateLimitOptions<C, T>;

/** A Koa middleware. */
export type KoaRateLimitMiddleware<C extends KoaLikeContext = KoaLikeContext> = (
  ctx: C,
  next: () => Promise<unknown>,
) => Promise<void>;

/**
 * Make the Koa middleware; an admitted request's lease is given back when the response closes.
 * @param options - limiter, identify, skip, failure mode, onError, tracking id, headers
 * @example
 * ```ts
 * app.use(koaRateLimit({
 *   limiter: createLimiter({ preset: presets.byAccountType }),
 *   identify: (ctx) => ({ clientId: ctx.state.clientId, accountCode: ctx.state.accountCode }),
 * }));
 * ```
 */
export function koaRateLimit<C extends KoaLikeContext = KoaLikeContext, T extends string = string>(
  options: KoaRateLimitOptions<C, T>,
): KoaRateLimitMiddleware<C> {
  // The connection's address: Koa's ctx.ip reads X-Forwarded-For when `app.proxy` is on, which
  // the context type here does not tell.
  const gate = createRateLimitGate(options, (ctx: C) => socketAddress(ctx.req));
  const readTrackingId = (ctx: C) => firstValue(ctx.req.headers[gate.trackingIdHeader]);
  return async (ctx, next) => {
    const pending = gate.check(ctx, ctx.method, ctx.originalUrl, readTrackingId);
    const verdict = pending instanceof Promise ? await pending : pending;
    // The client may have gone while an asynchronous store decided: nothing left to serve.
    if (clientGone(ctx.req, ctx.res)) {
      verdict.release();
      return;
    }
    const { response } = verdict;
    if (response !== undefined) {
      ctx.set(response.headers);
      ctx.status = response.status;
      ctx.body = response.body;
      return;
    }
    ctx.set(verdict.headers);
    if (verdict.holdsLease) holdUntilClosed(ctx.req, ctx.res, verdict.release);
    await next();
  };
}
