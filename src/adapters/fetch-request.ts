/**
 * A web-standard `Request` made from node's request, for {@link nodeFetchHandler}: the URL on a
 * safe origin, every header, the body streamed as it arrives (or the one a body parser left).
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { refused } from '../internal/options.js';

/** A node request as the frameworks hand it over: Express adds `originalUrl` and `body`. */
export type BridgedRequest = IncomingMessage & {
  /** The URL before a mount path was taken off it (Express, Koa's `ctx.req` has none). */
  originalUrl?: string;
  /** What a body parser made of the body, when one read it first. */
  body?: unknown;
  /** The body's bytes as a body parser kept them (`verify` hooks commonly set this). */
  rawBody?: unknown;
};

// A Host header a URL can be built on: a name or address, an optional port, nothing that would
// move the path (`/`, `?`, `#`, `@`, `\`).
const HOST = /^(?:[A-Za-z0-9._~!$&'()*+,;=%-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * The origin of the `Request` URL: the configured one, else the Host header (or HTTP/2's
 * `:authority`) when it is a plain host, else `localhost`.
 * @param req - node's request
 * @param configured - the `origin` option, already checked
 */
export function requestOrigin(req: IncomingMessage, configured: string | undefined): string {
  if (configured !== undefined) return configured;
  const scheme =
    (req.socket as { encrypted?: boolean } | null)?.encrypted === true ? 'https' : 'http';
  const host = req.headers.host ?? firstString(req.headers[':authority']);
  if (host !== undefined && host.length <= 255 && HOST.test(host)) {
    try {
      return new URL(`${scheme}://${host}`).origin;
    } catch {
      // An unparsable port or address: the fallback below.
    }
  }
  return `${scheme}://localhost`;
}

/**
 * The request target as a path and query: the URL before Express took a mount path off it; an
 * absolute-form target (a proxy's) read for its path; characters beyond ASCII percent-encoded.
 * @param req - node's request
 */
export function requestTarget(req: BridgedRequest): string {
  const target = req.originalUrl ?? req.url ?? '/';
  if (target.charCodeAt(0) === 0x2f) return encodeBeyondAscii(target);
  try {
    const url = new URL(target);
    return `${url.pathname}${url.search}`;
  } catch {
    // `*` (OPTIONS) and whatever else is no path.
    return '/';
  }
}

// Node refuses a request line with bytes beyond ASCII, but a framework may have rewritten
// `req.url` with a decoded string: each such character is sent on as its UTF-8, percent-encoded.
function encodeBeyondAscii(target: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range starts at NUL.
  if (!/[^\u0000-\u007f]/.test(target)) return target;
  let encoded = '';
  for (const char of target) {
    if (char.charCodeAt(0) < 0x80) {
      encoded += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) {
      encoded += `%${byte.toString(16).toUpperCase()}`;
    }
  }
  return encoded;
}

/**
 * The request's headers, repeated ones joined as fetch joins them. HTTP/2's pseudo-headers and a
 * value that fetch refuses are left out.
 * @param req - node's request
 */
function requestHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.charCodeAt(0) === 0x3a) continue;
    try {
      headers.append(name, raw[i + 1] as string);
    } catch {
      // Node's parser lets through nothing fetch refuses; a framework's rewrite might.
    }
  }
  return headers;
}

/** Whether the request carries a body: fetch allows none on GET and HEAD. */
function hasBody(req: IncomingMessage): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return false;
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

// What becomes the `Request` body: node's stream, bytes a parser left, or nothing.
type RequestBody = NodeBody | Uint8Array | string | null;

/*
 * The body of the `Request`. Unread, node's stream as it arrives, with backpressure. Already read
 * by a body parser: `req.rawBody` or `req.body` when it holds bytes or a string, JSON again when it
 * holds what a JSON parser made (the `content-length` is then the new one's); otherwise an error.
 * Throws a ConfigurationError when a parser read the body and left nothing to send on.
 */
function requestBody(req: BridgedRequest, headers: Headers): RequestBody {
  if (!hasBody(req)) return null;
  if (!req.readableDidRead && !req.readableEnded) return new NodeBody(req);
  const made = parsedBody(req, headers.get('content-type'));
  headers.delete('transfer-encoding');
  headers.set('content-length', String(Buffer.byteLength(made)));
  return made;
}

function parsedBody(req: BridgedRequest, contentType: string | null): Uint8Array | string {
  const { rawBody, body } = req;
  if (typeof rawBody === 'string' || rawBody instanceof Uint8Array) return rawBody;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body !== undefined && contentType !== null && /[/+]json\s*(?:;|$)/i.test(contentType)) {
    const json = JSON.stringify(body);
    if (typeof json === 'string') return json;
  }
  throw refused(
    `nodeFetchHandler req.body of a ${req.method} request a body parser already read`,
    'bytes, a string or parsed JSON to send on, or req.rawBody bytes or a string (mount nodeFetchHandler before the body parser, or leave its paths out of it)',
    body,
  );
}

/**
 * Node's request as a stream read on demand: the request is paused while the `Request`'s reader
 * asks for nothing. Cancelled or released, it lets the rest of the body drain, so that the
 * connection can serve its next request.
 */
class NodeBody {
  readonly stream: ReadableStream<Uint8Array>;
  readonly #req: IncomingMessage;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #attached = false;

  constructor(req: IncomingMessage) {
    this.#req = req;
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
          this.#attach();
        },
        pull: () => {
          req.resume();
        },
        cancel: () => this.release(),
      },
      { highWaterMark: 0 },
    );
  }

  /** Stop feeding the stream; what is left of the body is read and dropped. */
  readonly release = (): void => {
    if (!this.#attached) return;
    this.#detach();
    try {
      // A reader still waiting learns that the body is no longer fed.
      this.#controller?.error(
        new Error('The response was sent; the request body is no longer read.'),
      );
    } catch {
      // Already closed or cancelled.
    }
    if (!this.#req.readableEnded) this.#req.resume();
  };

  #attach(): void {
    const req = this.#req;
    this.#attached = true;
    req.pause();
    req.on('data', this.#onData);
    req.once('end', this.#onEnd);
    req.once('error', this.#onError);
    req.once('close', this.#onClose);
  }

  #detach(): void {
    const req = this.#req;
    this.#attached = false;
    req.off('data', this.#onData);
    req.off('end', this.#onEnd);
    req.off('error', this.#onError);
    req.off('close', this.#onClose);
  }

  readonly #onData = (chunk: Buffer): void => {
    const controller = this.#controller as ReadableStreamDefaultController<Uint8Array>;
    controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if ((controller.desiredSize ?? 0) <= 0) this.#req.pause();
  };

  readonly #onEnd = (): void => {
    this.#detach();
    this.#controller?.close();
  };

  readonly #onError = (error: unknown): void => {
    this.#detach();
    this.#controller?.error(error);
  };

  // Closed before its end: the client went away in the middle of the body.
  readonly #onClose = (): void => {
    if (this.#attached) {
      this.#onError(new Error('The client closed the connection before the request body ended.'));
    }
  };
}

function firstString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  return Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
}

/** A `Request` made by {@link fetchRequest}, and how to let go of node's request. */
export interface MadeRequest {
  readonly request: Request;
  /** Once the response is sent: stop feeding the `Request` and let the rest of the body drain. */
  readonly release: () => void;
}

/**
 * Make the `Request`.
 * @param req - node's request
 * @param origin - the URL's origin
 * @param signal - aborts when the client goes away
 * @throws ConfigurationError `invalid_option` when a body parser left nothing to send on
 */
export function fetchRequest(
  req: BridgedRequest,
  origin: string,
  signal: AbortSignal,
): MadeRequest {
  const headers = requestHeaders(req);
  const body = requestBody(req, headers);
  const init: RequestInit & { duplex?: 'half' } = {
    method: req.method ?? 'GET',
    headers,
    body: body instanceof NodeBody ? body.stream : body,
    signal,
  };
  if (body instanceof NodeBody) init.duplex = 'half';
  const request = new Request(`${origin}${requestTarget(req)}`, init);
  return { request, release: body instanceof NodeBody ? body.release : noop };
}

function noop(): void {}

// An HTTP token (RFC 9110, 5.6.2) other than the methods fetch forbids: what a `Request` can carry.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FORBIDDEN = /^(?:CONNECT|TRACE|TRACK)$/i;

/**
 * Whether a `Request` can carry the method: fetch refuses `TRACE`, `TRACK` and `CONNECT`, and
 * anything that is no token (a framework's rewrite of `req.method`).
 * @param method - node's request method
 */
export function carriesMethod(method: string): boolean {
  return TOKEN.test(method) && !FORBIDDEN.test(method);
}

/**
 * The `Request` that asks the handler what a resource allows, for a method a `Request` cannot
 * carry: the same URL and headers as `OPTIONS`, without a body (the request's is left to drain).
 * @param req - node's request
 * @param origin - the URL's origin
 * @param signal - aborts when the client goes away
 */
export function optionsRequest(
  req: BridgedRequest,
  origin: string,
  signal: AbortSignal,
): MadeRequest {
  const headers = requestHeaders(req);
  headers.delete('content-length');
  headers.delete('transfer-encoding');
  const request = new Request(`${origin}${requestTarget(req)}`, {
    method: 'OPTIONS',
    headers,
    signal,
  });
  return { request, release: () => drain(req) };
}

function drain(req: IncomingMessage): void {
  if (!req.readableEnded) req.resume();
}
