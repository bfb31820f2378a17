/**
 * Rate limiting for node:http and Connect-style stacks, and the bridge from node's request and
 * response to a fetch handler, from `api-conventions/node`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRateLimitGate, type RateLimitOptions } from '../http/rate-limit-gate.js';
import { NodeGate, socketAddress } from './node-response.js';

export {
  type FetchBridgeErrorEvent,
  type FetchBridgeOutcome,
  type FetchBridgePhase,
  type FetchHandler,
  type FetchTarget,
  type NodeFetchHandlerOptions,
  type NodeFetchListener,
  nodeFetchHandler,
} from './fetch-bridge.js';
export type { BridgedRequest } from './fetch-request.js';

/** Options of {@link nodeRateLimit}: `identify` receives the node request. */
export type NodeRateLimitOptions<
  R extends IncomingMessage = IncomingMessage,
  T extends string = string,
> = RateLimitOptions<R, T>;

/** A Connect-style middleware; `next` may return a promise (an async handler). */
export type NodeRateLimitMiddleware<R extends IncomingMessage = IncomingMessage> = (
  req: R,
  res: ServerResponse,
  next: () => unknown,
) => void;

/**
 * Make the node:http middleware `(req, res, next)`; `next` may be the handler itself. A throwing
 * `next` gives the lease back, is reported (phase `handler`) and answered 500 if nothing was sent.
 * @param options - limiter, identify, skip, failure mode, onError, tracking id, headers
 * @example
 * ```ts
 * const limit = nodeRateLimit({
 *   limiter: createLimiter({ preset: presets.byAccountType }),
 *   identify: (req) => accounts.get(String(req.headers['x-api-key'])),
 * });
 * createServer((req, res) => limit(req, res, () => handle(req, res))).listen(3000);
 * ```
 */
export function nodeRateLimit<
  R extends IncomingMessage = IncomingMessage,
  T extends string = string,
>(options: NodeRateLimitOptions<R, T>): NodeRateLimitMiddleware<R> {
  const gate = new NodeGate(createRateLimitGate(options, socketAddress), {
    catchHandlerErrors: true,
  });
  return (req, res, next) => gate.handle(req, res, req.url ?? '/', next);
}
