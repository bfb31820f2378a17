/**
 * Applying a gate verdict to a node:http response, shared by the node, Express, Fastify and Koa
 * adapters: write the 429 (or the fail-closed 503), or set the headers, hold the lease until the
 * response closes (finished, failed or aborted: node emits `close` in every case) and go on.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GateVerdict, RateLimitGate } from '../http/rate-limit-gate.js';

/**
 * Run the gate for one request and settle it on the node response.
 * @param gate - the adapter's gate
 * @param request - the framework's request, for `identify` and `skip`
 * @param req - the node request
 * @param res - the node response
 * @param path - the request target as the client sent it
 * @param proceed - goes on to the handler (not called when the gate answers)
 */
export function gateNodeRequest<R>(
  gate: RateLimitGate<R>,
  request: R,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  proceed: (verdict: GateVerdict) => void,
): void {
  const verdict = gate.check(
    request,
    req.method ?? 'GET',
    path,
    firstValue(req.headers[gate.trackingIdHeader]),
  );
  if (verdict instanceof Promise) verdict.then((v) => settle(v, res, proceed));
  else settle(verdict, res, proceed);
}

function settle(
  verdict: GateVerdict,
  res: ServerResponse,
  proceed: (verdict: GateVerdict) => void,
): void {
  // The client may have gone while an asynchronous store decided: nothing left to serve.
  if (res.destroyed) {
    verdict.release();
    return;
  }
  const { response } = verdict;
  if (response !== undefined) {
    res.writeHead(response.status, response.headers).end(response.body);
    return;
  }
  for (const name in verdict.headers) res.setHeader(name, verdict.headers[name] as string);
  if (verdict.holdsLease) res.once('close', verdict.release);
  proceed(verdict);
}

/**
 * The first value of a node header.
 * @param value - as in `req.headers`
 */
export function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
