/**
 * Applying a gate verdict to a node:http (or http2 compatibility) response, for every adapter.
 * Only types come from node, so the Hono adapter still loads where there is no node.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { problemDetails, problemResponse } from '../http/problem-details.js';
import type { GateVerdict, RateLimitGate, TrackingIdReader } from '../http/rate-limit-gate.js';

/** The socket's address, the default key of anonymous requests; undefined once it is gone. */
export function socketAddress(req: IncomingMessage): string | undefined {
  return req.socket?.remoteAddress;
}

/** How a {@link NodeGate} treats the handler. */
export interface NodeGateOptions {
  /** Catch a throwing `next`: on plain node:http nothing else does. */
  readonly catchHandlerErrors: boolean;
}

/** The gate on node:http requests; no closure is made on the synchronous path. */
export class NodeGate<R extends IncomingMessage> {
  readonly #gate: RateLimitGate<R>;
  readonly #readTrackingId: TrackingIdReader<R>;
  readonly #catchHandlerErrors: boolean;

  constructor(gate: RateLimitGate<R>, options: NodeGateOptions) {
    this.#gate = gate;
    this.#readTrackingId = nodeTrackingIdReader(gate.trackingIdHeader);
    this.#catchHandlerErrors = options.catchHandlerErrors;
  }

  /** Decide one request, then answer it or go on to `next` (called without arguments). */
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
 * True when nothing can be served. An http2 compatibility response has no `destroyed`, and a
 * pipelined request whose connection closed has only the request destroyed.
 */
export function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  if (res.destroyed === true) return true;
  const { stream } = res as { stream?: { destroyed: boolean } };
  if (stream !== undefined) return stream.destroyed;
  return req.socket?.destroyed === true;
}

// Leases of responses queued on a pipelined connection: node emits no `close` for such a response
// when the connection closes before it is sent.
const waiting = new WeakMap<Socket, Set<() => void>>();

/** Give the lease back when the response, or the connection it is queued on, closes. */
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
 * Called only when the id is needed: the first read of `req.headers` builds the headers object,
 * which an admitted request then never pays for.
 */
export function nodeTrackingIdReader(header: string): TrackingIdReader<IncomingMessage> {
  return (req) => firstValue(req.headers[header]);
}

export function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
