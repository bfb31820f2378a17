/**
 * One bridge from node's request and response to a web-standard fetch handler
 * (`(request: Request) => Promise<Response>`), for node:http, Express, Fastify and Koa; Hono
 * mounts a fetch handler as it is. See docs/mounting.md.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { problemDetails, problemResponse } from '../http/problem-details.js';
import { describe } from '../internal/describe.js';
import { aFunction, checkValue, INVALID, type Rule, readOptions } from '../internal/options.js';
import {
  type BridgedRequest,
  carriesMethod,
  fetchRequest,
  type MadeRequest,
  optionsRequest,
  requestOrigin,
} from './fetch-request.js';
import { isResponse, type ResponseLike, writeFetchResponse } from './fetch-response.js';
import { clientGone } from './node-response.js';

/** A web-standard fetch handler, such as Hono's `app.fetch`. */
export type FetchHandler = (request: Request) => Response | Promise<Response>;

/** What serves the requests: a fetch handler, or an object whose `fetch` method is one. */
export type FetchTarget =
  | FetchHandler
  | {
      /** Answers one request. */
      fetch(request: Request): Response | Promise<Response>;
    };

/**
 * Where a bridged request failed: `request` (a body parser read the body and left nothing to
 * send on), `handler` (it threw, rejected or answered no `Response`), `response` (the `Response`
 * could not be written: a header node refuses, a body stream that failed or yielded no bytes).
 */
export type FetchBridgePhase = 'request' | 'handler' | 'response';

/**
 * What the client got after a failure: `answered` a 500 problem, `closed` connection (the head of
 * the response was already out, so the body is cut short rather than complete), or nothing,
 * `gone` before.
 */
export type FetchBridgeOutcome = 'answered' | 'closed' | 'gone';

/** A failure that {@link nodeFetchHandler} reports through `onError`. */
export interface FetchBridgeErrorEvent {
  /** What was thrown or rejected. */
  readonly error: unknown;
  /** Node's request. */
  readonly request: IncomingMessage;
  /** Where it failed. */
  readonly phase: FetchBridgePhase;
  /** What the client got. */
  readonly outcome: FetchBridgeOutcome;
}

/** Options of {@link nodeFetchHandler}. */
export interface NodeFetchHandlerOptions {
  /**
   * The origin of every `Request` URL, such as `https://api.example.com` (scheme, host and port;
   * no path). Give it behind a proxy or where the Host header is not to be trusted.
   * @defaultValue `http://` (`https://` on TLS) and the Host header when it is a plain host and
   * port, else `localhost`
   */
  origin?: string | undefined;
  /**
   * Told of every failure; a callback that throws is ignored.
   * @defaultValue one line on `console.error`, leaving out failures after the client went away
   */
  onError?: ((event: FetchBridgeErrorEvent) => void) | undefined;
}

/** A node:http request listener, also an Express middleware; its promise never rejects. */
export type NodeFetchListener = (req: BridgedRequest, res: ServerResponse) => Promise<void>;

const originRule: Rule<string> = {
  expected: "an http or https origin such as 'https://api.example.com' (no path, query or user)",
  read(value) {
    if (typeof value !== 'string' || value.length > 2048) return INVALID;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return INVALID;
    }
    const plain =
      url.pathname === '/' &&
      url.search === '' &&
      url.hash === '' &&
      url.username === '' &&
      url.password === '';
    return (url.protocol === 'http:' || url.protocol === 'https:') && plain ? url.origin : INVALID;
  },
};

const RULES = {
  origin: originRule,
  onError: aFunction<(event: FetchBridgeErrorEvent) => void>('takes an error event'),
};

// The method is read once and called on its object: the webhook service's `fetch` is a method.
const targetRule: Rule<FetchHandler> = {
  expected:
    'a function that takes a Request and answers a Response, or an object with such a fetch method',
  read(value) {
    if (typeof value === 'function') return value as FetchHandler;
    if (typeof value !== 'object' || value === null) return INVALID;
    let fetch: unknown;
    try {
      ({ fetch } = value as { fetch?: unknown });
    } catch {
      return INVALID;
    }
    if (typeof fetch !== 'function') return INVALID;
    return (request) => (fetch as FetchHandler).call(value, request);
  },
};

/**
 * Serve a fetch handler from node's request and response. The `Request` has the method, the URL
 * (`req.originalUrl`, which Express keeps whole under a mount path, else `req.url`) on the
 * origin, every header, the body streamed as it arrives, and a signal that aborts when the client
 * goes away. The `Response` is written with every header (each `set-cookie`) and its body
 * streamed with backpressure; a HEAD, 204 or 304 gets no body. A method no `Request` can carry
 * (TRACE) is asked as `OPTIONS`, and answered 405 with the `Allow` the handler names (see
 * docs/mounting.md). A handler that throws, rejects or answers no `Response` gets a 500 problem
 * and is reported; the returned promise never rejects.
 * @param target - the fetch handler (a bound function, such as Hono's `app.fetch`), or an object
 *   whose `fetch` method is one, called on its object (the webhook service)
 * @param options - `origin`, `onError`
 * @returns a request listener for `http.createServer` and Express's `app.use`, to be called with
 *   Fastify's `request.raw` and `reply.raw` or Koa's `ctx.req` and `ctx.res`
 * @throws ConfigurationError `invalid_option` for a target that is neither or bad options
 * @example
 * ```ts
 * createServer(nodeFetchHandler(service)).listen(3000);
 * ```
 */
export function nodeFetchHandler(
  target: FetchTarget,
  options?: NodeFetchHandlerOptions,
): NodeFetchListener {
  const fetch = checkValue(targetRule, target, 'nodeFetchHandler target');
  const read = readOptions(options, 'nodeFetchHandler', RULES, {
    example: "{ origin: 'https://api.example.com' }",
  });
  const bridge = new FetchBridge(fetch, read.origin, read.onError);
  return (req, res) => bridge.serve(req, res);
}

/** One handler served to node requests. */
class FetchBridge {
  readonly #handler: FetchHandler;
  readonly #origin: string | undefined;
  readonly #onError: ((event: FetchBridgeErrorEvent) => void) | undefined;

  constructor(
    handler: FetchHandler,
    origin: string | undefined,
    onError: ((event: FetchBridgeErrorEvent) => void) | undefined,
  ) {
    this.#handler = handler;
    this.#origin = origin;
    this.#onError = onError;
  }

  async serve(req: BridgedRequest, res: ServerResponse): Promise<void> {
    const client = new AbortController();
    // `close` before the response finished: the client went away (or the response was cut).
    res.once('close', () => {
      if (!res.writableFinished) client.abort();
    });
    if (clientGone(req, res)) client.abort();
    const method = req.method ?? 'GET';
    // A method no `Request` can carry (TRACE): the handler is asked what the resource allows.
    const carried = carriesMethod(method);
    let made: MadeRequest;
    try {
      const origin = requestOrigin(req, this.#origin);
      made = carried
        ? fetchRequest(req, origin, client.signal)
        : optionsRequest(req, origin, client.signal);
    } catch (error) {
      this.#failed(error, req, res, 'request');
      return;
    }
    try {
      await this.#answer(made.request, req, res, carried ? undefined : method);
    } finally {
      made.release();
    }
  }

  /** @param uncarried - the method asked with `OPTIONS` instead, if any */
  async #answer(
    request: Request,
    req: BridgedRequest,
    res: ServerResponse,
    uncarried?: string,
  ): Promise<void> {
    let response: unknown;
    try {
      response = await this.#handler(request);
    } catch (error) {
      this.#failed(error, req, res, 'handler');
      return;
    }
    if (!isResponse(response)) {
      const error = new TypeError(
        `The fetch handler answered ${describe(response)}; it must answer a Response.`,
      );
      this.#failed(error, req, res, 'handler');
      return;
    }
    if (clientGone(req, res)) {
      response.body?.cancel().catch(() => undefined);
      return;
    }
    const answer = uncarried === undefined ? response : notAllowed(response, uncarried);
    closeUnlessDrainable(req, res);
    try {
      await writeFetchResponse(answer, req, res);
    } catch (error) {
      this.#failed(error, req, res, 'response');
    }
  }

  #failed(error: unknown, req: IncomingMessage, res: ServerResponse, phase: FetchBridgePhase) {
    const outcome: FetchBridgeOutcome = clientGone(req, res)
      ? 'gone'
      : res.headersSent
        ? 'closed'
        : 'answered';
    this.#report({ error, request: req, phase, outcome });
    if (outcome === 'answered') answerFailure(res);
    else res.destroy();
  }

  #report(event: FetchBridgeErrorEvent): void {
    try {
      if (this.#onError !== undefined) this.#onError(event);
      else if (event.outcome !== 'gone') defaultReport(event);
    } catch {
      // A report that throws must not take the request down.
    }
  }
}

/** The most of an unread request body drained after the response to keep its connection. */
const DRAINABLE_BYTES = 1024 * 1024;

/**
 * A body the handler left unread is drained after the response, so that the connection serves its
 * next request, when it is known to be bounded (a Content-Length up to 1 MiB). One of unknown or
 * larger size (a 413 for a body that never ends) closes the connection after the response instead.
 */
function closeUnlessDrainable(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete || res.headersSent) return;
  const length = Number(req.headers['content-length']);
  if (!(Number.isSafeInteger(length) && length <= DRAINABLE_BYTES)) res.shouldKeepAlive = false;
}

/**
 * The answer to a method no `Request` can carry, from the handler's answer to `OPTIONS` on the
 * same resource: 405 with the `Allow` it names; its own answer when that is an error without one
 * (404 for no such resource, 401, 429); else 501, since nothing says what the resource allows.
 */
function notAllowed(answer: ResponseLike, method: string): ResponseLike {
  const allow = answer.headers.get('allow');
  if (allow === null && answer.status >= 400) return answer;
  answer.body?.cancel().catch(() => undefined);
  const shown = method.slice(0, 20);
  const parts = problemResponse(
    allow === null
      ? problemDetails({
          code: 'method_not_implemented',
          title: 'Method not implemented',
          status: 501,
          detail: `This service does not serve ${shown} requests.`,
        })
      : problemDetails({
          code: 'method_not_allowed',
          title: 'Method not allowed',
          status: 405,
          detail: `This resource answers ${allow}, not ${shown}.`,
        }),
  );
  const headers = allow === null ? parts.headers : { ...parts.headers, allow };
  return new Response(parts.body, { status: parts.status, headers });
}

function answerFailure(res: ServerResponse): void {
  const parts = problemResponse(
    problemDetails({ code: 'internal_error', title: 'Internal server error', status: 500 }),
  );
  try {
    res.writeHead(parts.status, parts.headers).end(parts.body);
  } catch {
    // A header set before the bridge that node refuses now: nothing can be answered.
    res.destroy();
  }
}

function defaultReport(event: FetchBridgeErrorEvent): void {
  const { error, request, phase, outcome } = event;
  const message = error instanceof Error ? error.message : String(error);
  const answer = outcome === 'answered' ? 'answered 500' : 'connection closed mid-response';
  console.error(
    `api-conventions: fetch ${phase} failed for ${request.method} ${request.url}, ${answer}: ${message}`,
  );
}
