/** Rate limiting for Hono 4 on any Fetch-API runtime, from `api-conventions/hono`. @module */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Env, MiddlewareHandler } from 'hono';
import { createRateLimitGate, type RateLimitOptions } from '../http/rate-limit-gate.js';
import { clientGone, holdUntilClosed, socketAddress } from './node-response.js';

/** Options of {@link honoRateLimit}: `identify` receives the Hono context. */
export type HonoRateLimitOptions<E extends Env = Env, T extends string = string> = RateLimitOptions<
  Context<E>,
  T
>;

/**
 * Make the Hono middleware. An admitted request's lease is given back when the handler has
 * produced its response, or at once when the client goes away. Its headers (the tracking id and
 * the RateLimit fields, when on) go on the node response on @hono/node-server, so they are not in
 * `c.res` there; elsewhere they are set with `c.header` (see docs/middleware.md).
 * @param options - limiter, identify, skip, failure mode, onError, tracking id, headers
 * @example
 * ```ts
 * app.use(honoRateLimit({
 *   limiter: createLimiter({ preset: presets.byAccountType }),
 *   identify: (c) => ({ clientId: c.get('clientId'), accountCode: c.get('accountCode') }),
 * }));
 * ```
 */
export function honoRateLimit<E extends Env = Env, T extends string = string>(
  options: HonoRateLimitOptions<E, T>,
): MiddlewareHandler<E> {
  // The node connection's address on @hono/node-server; other runtimes tell none here (give
  // `anonymous.key`, with the runtime's getConnInfo).
  const gate = createRateLimitGate(options, (c: Context<E>) => {
    const node = nodeBindings(c.env);
    return node === undefined ? undefined : socketAddress(node.incoming);
  });
  const readTrackingId = (c: Context<E>) => c.req.header(gate.trackingIdHeader);
  return async (c, next) => {
    const pending = gate.check(c, c.req.method, pathAsSent(c.req.url), readTrackingId);
    const verdict = pending instanceof Promise ? await pending : pending;
    const { response, headers } = verdict;
    if (response !== undefined) {
      return new Response(response.body, { status: response.status, headers: response.headers });
    }
    const node = nodeBindings(c.env);
    // On @hono/node-server, set on the node response, written with the handler's response (whose
    // own headers win); elsewhere with `c.header`, and again after the handler where Hono dropped
    // them (see docs/middleware.md).
    const direct = node !== undefined && !node.outgoing.headersSent;
    let withHeaders = false;
    for (const name in headers) {
      withHeaders = true;
      if (direct) node.outgoing.setHeader(name, headers[name] as string);
      else c.header(name, headers[name]);
    }
    const keep = withHeaders && !direct;
    if (!verdict.holdsLease) {
      await next();
      if (keep) keepHeaders(c, headers);
      return;
    }
    if (
      node !== undefined ? !holdOnNode(node, verdict.release) : !holdOnSignal(c, verdict.release)
    ) {
      // Gone while an asynchronous store decided.
      verdict.release();
      return new Response(null, { status: 499 });
    }
    try {
      await next();
      if (keep) keepHeaders(c, headers);
    } finally {
      verdict.release();
    }
  };
}

/**
 * Hono 4 drops the headers set with `c.header` before the handler when the handler returns a
 * `Response` of its own rather than one made with `c.text`, `c.json` and the like: those missing
 * from the response are set again (`c.header` copies a response whose headers are immutable).
 * A header the handler set itself is kept as it set it.
 */
function keepHeaders<E extends Env>(
  c: Context<E>,
  headers: Readonly<Record<string, string>>,
): void {
  const kept = c.res.headers;
  for (const name in headers) if (!kept.has(name)) c.header(name, headers[name]);
}

// On @hono/node-server the lease is given back when the node response or its connection closes.
// The request's signal is not read there: reading it makes the full Fetch Request of every request.
function holdOnNode(node: NodeBindings, release: () => void): boolean {
  if (clientGone(node.incoming, node.outgoing)) return false;
  holdUntilClosed(node.incoming, node.outgoing, release);
  return true;
}

// Elsewhere the request's signal tells of a client that went away; the release is idempotent, so
// whichever of the signal and the end of the handler comes first gives the lease back.
function holdOnSignal<E extends Env>(c: Context<E>, release: () => void): boolean {
  const signal = c.req.raw.signal;
  if (signal.aborted) return false;
  signal.addEventListener('abort', release);
  return true;
}

// The path still percent-encoded as sent, not Hono's decoded `c.req.path`, so that the limiter
// reads escapes as the route table documents; without scheme and Host, so that a long Host
// cannot push the path past `maxPathLength`.
function pathAsSent(url: string): string {
  const start = url.indexOf('/', url.indexOf('://') + 3);
  return start < 0 ? '/' : url.slice(start);
}

/** What @hono/node-server passes as `c.env`: the node request and response. */
interface NodeBindings {
  readonly incoming: IncomingMessage;
  readonly outgoing: ServerResponse;
}

/** `c.env` when it holds node's request and response; elsewhere it holds the runtime's bindings. */
function nodeBindings(env: unknown): NodeBindings | undefined {
  if (typeof env !== 'object' || env === null) return undefined;
  try {
    const { incoming, outgoing } = env as { incoming?: unknown; outgoing?: unknown };
    return isNodeMessage(incoming) && isNodeMessage(outgoing) ? (env as NodeBindings) : undefined;
  } catch {
    // Bindings with a getter that throws: not node's.
    return undefined;
  }
}

// node:http's messages and http2's compatibility ones (`socket` is null while queued).
function isNodeMessage(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    'socket' in value &&
    typeof (value as { on?: unknown }).on === 'function' &&
    typeof (value as { once?: unknown }).once === 'function'
  );
}
