/**
 * Applying a gate verdict to a node:http (or node:http2 compatibility) response, shared by the
 * node, Express, Fastify and Koa adapters, and by Hono on @hono/node-server: write the answer, or
 * set the headers, hold the lease until the response closes and go on (see docs/middleware.md).
 * Only types come from node, so the Hono adapter still loads where there is no node.
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

/** How a {@link NodeGate} treats the handler. */
export interface NodeGateOptions {
  /**
   * Catch a throw or a rejection of `next`: plain node:http, where nothing else does. Express,
   * Fastify and Koa answer a throwing handler themselves.
   */
  readonly catchHandlerErrors: boolean;
}

/**
 * The gate on node:http requests, made once per middleware: it decides each request and settles
 * the verdict on the node response. No closure is made on the synchronous path.
 */
export class NodeGate<R extends IncomingMessage> {
  readonly #gate: RateLimitGate<R>;
  readonly #readTrackingId: TrackingIdReader<R>;
  readonly #catchHandlerErrors: boolean;

  /**
   * @param gate - the adapter's gate
   * @param options - how the handler is treated
   */
  constructor(gate: RateLimitGate<R>, options: NodeGateOptions) {
    this.#gate = gate;
    this.#readTrackingId = nodeTrackingIdReader(gate.trackingIdHeader);
    this.#catchHandlerErrors = options.catchHandlerErrors;
  }

  /**
   * Decide one request, then answer it or go on to `next`.
   * @param req - the node request, also handed to `identify` and `skip`
   * @param res - the node response
   * @param path - the request target as the client sent it
   * @param next - goes on to the handler, called without arguments (not when the gate answers)
   */
  handle(req: R, res: ServerResponse, path: string, next: () => unknown): void {
    const verdict = this.#gate.check(req, req.method ?? 'GET', path, this.#readTrackingId);
    if (verdict instanceof Promise) verdict.then((v) => this.#settle(v, req, res, next));
    else this.#settle(verdict, req, res, next);
  }

  #settle(verdict: GateVerdict, req: R, res: ServerResponse, next: () => unknown): void {
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
    if (!this.#catchHandlerErrors) {
      next();
      return;
    }
    try {
      const result = next();
      if (result instanceof Promise) {
        result.catch((error: unknown) => this.#handlerFailed(verdict, req, res, error));
      }
    } catch (error) {
      this.#handlerFailed(verdict, req, res, error);
    }
  }

  /** Give the lease back, report, and answer 500 if nothing was sent yet, else cut it short. */
  #handlerFailed(verdict: GateVerdict, req: R, res: ServerResponse, error: unknown): void {
    verdict.release();
    this.#gate.report(error, req, 'handler', verdict.trackingId);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const parts = problemResponse(
      problemDetails({ code: 'internal_error', title: 'Internal server error', status: 500 }),
    );
    res.writeHead(parts.status, parts.headers).end(parts.body);
  }
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
