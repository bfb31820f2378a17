/**
 * The demo's node:http plumbing: the request target, bodies read up to a bound, problem answers,
 * the 404 and 405 of the demo's own paths, and node's parser errors as problem details.
 */
import { type IncomingMessage, maxHeaderSize, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { problemDetails, problemResponse, type ResponseParts } from '../src/index.js';

/** The largest body the demo's own routes read. */
export const MAX_BODY = 64 * 1024;

/**
 * The request target as a URL on the service's own origin, or undefined when it is not a path
 * (absolute-form, `*`). Neither the Host header nor a target starting with `//` can name another
 * host: the routes and the limits see the same path, and links point back to this service.
 */
export function targetOf(req: IncomingMessage, origin: string): URL | undefined {
  const target = req.url ?? '';
  if (!target.startsWith('/')) return undefined;
  try {
    return new URL(`${origin}${target}`);
  } catch {
    return undefined;
  }
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A JSON answer of the admin API: never cached, it says how things are now. */
export const jsonParts = (status: number, body: unknown): ResponseParts => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
  body: JSON.stringify(body),
});

export function write(res: ServerResponse, parts: ResponseParts): void {
  res.writeHead(parts.status, parts.headers).end(parts.body);
}

export const problem = (
  status: number,
  code: string,
  title: string,
  detail: string,
): ResponseParts => problemResponse(problemDetails({ code, title, status, detail }));

/** The raw body, or undefined when it is larger than the demo takes (the connection then closes). */
export async function readBody(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) {
      // Stop reading: a body that never ends is not drained; the socket closes after the 413.
      res.shouldKeepAlive = false;
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The JSON body, or the problem response to send. */
export async function readJson(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<{ ok: true; value: unknown } | { ok: false; reply: ResponseParts }> {
  const raw = await readBody(req, res);
  const refuse = (status: number, code: string, detail: string) => ({
    ok: false as const,
    reply: problem(status, code, 'Unreadable body', detail),
  });
  if (raw === undefined) return refuse(413, 'body_too_large', `Send at most ${MAX_BODY} bytes.`);
  // Any content-type is read as JSON: the demo is lenient there, strict about what the JSON says.
  if (raw === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return refuse(400, 'invalid_json', 'The body must be JSON (content-type: application/json).');
  }
}

/** The methods of one of the demo's own paths, or undefined for a path it does not serve. */
function methodsOf(path: string): readonly string[] | undefined {
  if (path === '/v1/test-events') return ['POST'];
  if (path === '/demo/receiver') return ['GET', 'POST'];
  if (path === '/demo/receiver/gone') return ['POST'];
  if (/^\/booking\/v[^/]+\/(reservations|offers)$/.test(path)) return ['GET'];
  if (/^\/booking\/v[^/]+\/bookings\/[^/]+$/.test(path)) return ['PATCH'];
  return undefined;
}

/** 404 for a path the demo does not serve, 405 with Allow for a method it does not route there. */
export function unrouted(res: ServerResponse, method: string, path: string): void {
  const methods = methodsOf(path);
  if (methods === undefined) {
    write(
      res,
      problemResponse(
        problemDetails({
          code: 'not_found',
          title: 'Not found',
          status: 404,
          instance: path,
          detail:
            'The demo serves /v1/subscriptions, /v1/subscriptions/{id}, /v1/subscriptions/{id}/secret/rotate, /v1/subscriptions/{id}/attempts, /v1/subscriptions/{id}/replay, /v1/messages/{messageId}/replay, /v1/audit-logs, /v1/test-events, /demo/receiver, /demo/receiver/gone, /booking/v1/reservations, /booking/v1/offers and /booking/v1/bookings/{id}, with no trailing slash.',
        }),
      ),
    );
    return;
  }
  write(res, notAllowed(path, methods, method));
}

/** 405 with Allow (HEAD beside GET): `path` takes `methods`, not `method`. */
export function notAllowed(
  path: string,
  methods: readonly string[],
  method: string,
): ResponseParts {
  const parts = problem(
    405,
    'method_not_allowed',
    'Method not allowed',
    `${path} takes ${methods.join(' or ')}, not ${method}.`,
  );
  const allow = (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ');
  return { ...parts, headers: { ...parts.headers, allow } };
}

/**
 * The answer of node:http's parser errors, as problem details: a request line or headers that are
 * too long (431), a request that took too long (408), anything else it cannot parse (400).
 */
export function clientError(error: Error & { code?: string }, socket: Duplex): void {
  // As node:http does: answer unless a response has begun (then there is nothing left to say).
  const started = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage?.headersSent;
  if (!socket.writable || started === true) {
    socket.destroy();
    return;
  }
  const [status, title, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'Request header fields too large',
          `Send a request line and headers of at most ${maxHeaderSize} bytes in all.`,
        ]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [
            408,
            'Request timeout',
            'Send the whole request, headers and body, within the time the service gives it.',
          ]
        : [400, 'Bad request', 'Send a well-formed HTTP/1.1 request.'];
  const parts = problem(
    status,
    status === 400 ? 'bad_request' : status === 408 ? 'request_timeout' : 'headers_too_large',
    title,
    detail,
  );
  const head = Object.entries({
    ...parts.headers,
    'content-length': String(Buffer.byteLength(parts.body)),
    connection: 'close',
  })
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n');
  socket.end(`HTTP/1.1 ${status} ${title}\r\n${head}\r\n\r\n${parts.body}`);
}
