/**
 * Applying a gate verdict to a node:http response, shared by the node, Express, Fastify and Koa
 * adapters: write the 429 (or the fail-closed 503), or set the headers, hold the lease until the
 * response closes (finished, failed or aborted) and go on. Also node:http2's compatibility API.
 * Node emits no `close` for a response that waits behind an earlier one on a pipelined HTTP/1.1
 * connection when that connection closes: such a lease is also given back on the connection's
 * `close`. The Hono adapter uses the same hold on @hono/node-server. Only types come from node:
 * nothing here loads a node module, so the Hono adapter still runs where there is none.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { problemDetails, problemResponse } from '../http/problem-details.js';
import type { GateVerdict, RateLimitGate, TrackingIdReader } from '../http/rate-limit-gate.js';

/**
 * The address a node request came from (its socket's), the default key of anonymous requests;
 * undefined once the socket is gone.
 * @param req - the node request
 */
export function socketAddress(req: IncomingMessage): string | undefined {
  return req.socket?.remoteAddress;
}

/**
 * Run the gate for one request and settle it on the node response. No closure is made on the
 * synchronous path: the memory store's requests cost only what the decision costs.
 * @param gate - the adapter's gate
 * @param request - the framework's request, for `identify` and `skip`
 * @param req - the node request
 * @param res - the node response
 * @param path - the request target as the client sent it
 * @param readTrackingId - reads the request's tracking id header, only when the gate needs it
 * @param next - goes on to the handler, called without arguments (not called when the gate answers)
 * @param guard - catch a throw or a rejection of `next` (plain node:http, where nothing else does)
 */
export function gateNodeRequest<R>(
  gate: RateLimitGate<R>,
  request: R,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  readTrackingId: TrackingIdReader<R>,
  next: () => unknown,
  guard: boolean,
): void {
  const verdict = gate.check(request, req.method ?? 'GET', path, readTrackingId);
  if (verdict instanceof Promise) {
    verdict.then((v) => settle(gate, request, v, req, res, next, guard));
  } else settle(gate, request, verdict, req, res, next, guard);
}

function settle<R>(
  gate: RateLimitGate<R>,
  request: R,
  verdict: GateVerdict,
  req: IncomingMessage,
  res: ServerResponse,
  next: () => unknown,
  guard: boolean,
): void {
  // The client may have gone while an asynchronous store decided: nothing left to serve.
  if (clientGone(req, res)) {
    verdict.release();
    return;
  }
  const { response } = verdict;
  if (response !== undefined) {
    res.writeHead(response.status, response.headers).end(response.body);
    return;
  }
  for (const name in verdict.headers) res.setHeader(name, verdict.headers[name] as string);
  if (verdict.holdsLease) holdUntilClosed(req, res, verdict.release);
  if (!guard) {
    next();
    return;
  }
  try {
    const result = next();
    if (result instanceof Promise) {
      result.catch((error: unknown) => handlerFailed(gate, request, verdict, res, error));
    }
  } catch (error) {
    handlerFailed(gate, request, verdict, res, error);
  }
}

// A handler that throws on plain node:http: give the lease back, report it, answer 500 if nothing
// was sent yet (otherwise cut the response short), and never let it crash the process.
function handlerFailed<R>(
  gate: RateLimitGate<R>,
  request: R,
  verdict: GateVerdict,
  res: ServerResponse,
  error: unknown,
): void {
  verdict.release();
  gate.report(error, request, 'handler', verdict.trackingId);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const parts = problemResponse(
    problemDetails({ code: 'internal_error', title: 'Internal server error', status: 500 }),
  );
  res.writeHead(parts.status, parts.headers).end(parts.body);
}

/**
 * True when the client is gone and nothing can be served: the response was destroyed, its HTTP/2
 * stream closed (node:http2's compatibility response has no `destroyed`), or the connection of a
 * pipelined request closed while its response waited behind an earlier one (node then destroys
 * the request only).
 * @param req - the node request
 * @param res - the node response
 */
export function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  if (res.destroyed === true) return true;
  const { stream } = res as { stream?: { destroyed: boolean } };
  if (stream !== undefined) return stream.destroyed;
  return req.socket?.destroyed === true;
}

// The leases of responses that wait behind an earlier response on a pipelined HTTP/1.1
// connection, by connection: node emits no `close` for such a response when the connection
// closes before it is sent.
const waiting = new WeakMap<Socket, Set<() => void>>();

/**
 * Give the lease back when the response closes: finished, failed or aborted. A response that
 * waits behind an earlier one on a pipelined connection (it has no socket yet) also gives it back
 * when the connection closes.
 * @param req - the node request
 * @param res - the node response
 * @param release - gives the lease back; idempotent
 */
export function holdUntilClosed(
  req: IncomingMessage,
  res: ServerResponse,
  release: () => void,
): void {
  // `on`, not `once`: release is idempotent, and `once` would wrap it in one more function.
  res.on('close', release);
  if (res.socket !== null || req.socket == null) return;
  const socket = req.socket;
  let leases = waiting.get(socket);
  if (leases === undefined) {
    const held = new Set<() => void>();
    leases = held;
    waiting.set(socket, held);
    socket.once('close', () => {
      for (const leave of held) leave();
      held.clear();
    });
  }
  leases.add(release);
  const held = leases;
  res.once('close', () => held.delete(release));
}

/**
 * The gate's reader of a node request's tracking id header, made once per middleware. The gate
 * calls it only when it needs the id: on node:http the first read of `req.headers` builds the
 * headers object, which an admitted request then never pays for the middleware's sake.
 * @param header - the header name, lower case (the gate's `trackingIdHeader`)
 */
export function nodeTrackingIdReader(header: string): TrackingIdReader<IncomingMessage> {
  return (req) => firstValue(req.headers[header]);
}

/**
 * The first value of a node header.
 * @param value - as in `req.headers`
 */
export function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
