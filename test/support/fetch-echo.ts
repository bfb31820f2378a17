/**
 * A fetch handler that tells what it received, for the bridge's tests, and a node:http client
 * that sends exactly what a test asks (repeated headers, chunked bodies, an abort mid-body).
 *
 * The echo answers JSON with the method, the path and query, the origin, every header and the
 * body's text; a few paths do something else: `/cookies` sets two cookies, `/stream` streams two
 * chunks with a pause the test ends, `/no-content` answers 204, `/throw`, `/reject` and
 * `/not-a-response` fail, `/hold-body` reads one chunk of the body and waits for the signal.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

/** What the echo answers as JSON. */
export interface Echoed {
  readonly method: string;
  /** Path and query, as the handler's URL holds them. */
  readonly target: string;
  readonly origin: string;
  /** Every header, as `Headers` joins them. */
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Whether the `Request` had a body. */
  readonly hasBody: boolean;
}

/** A deferred signal from the handler to the test. */
interface Latch {
  readonly reached: Promise<void>;
  open(): void;
}

function latch(): Latch {
  let open: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { reached, open };
}

/** The echo handler and what it tells the test. */
export interface Echo {
  readonly fetch: (request: Request) => Promise<Response>;
  /** Resolves once `/stream` sent its first chunk. */
  readonly streamStarted: Promise<void>;
  /** Let `/stream` send its second chunk and end. */
  finishStream(): void;
  /** Resolves once `/hold-body` read its first chunk. */
  readonly bodyStarted: Promise<void>;
  /** Resolves once the signal of `/hold-body`'s request aborted. */
  readonly bodyAborted: Promise<void>;
}

/** A fresh echo handler. */
export function echoHandler(): Echo {
  const streamStarted = latch();
  const streamGate = latch();
  const bodyStarted = latch();
  const bodyAborted = latch();
  const encoder = new TextEncoder();
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    switch (url.pathname) {
      case '/cookies': {
        const headers = new Headers([['content-type', 'text/plain']]);
        headers.append('set-cookie', 'a=1; Path=/');
        headers.append('set-cookie', 'b=2; Path=/; HttpOnly');
        return new Response('cookies', { headers });
      }
      case '/stream':
        return new Response(
          new ReadableStream<Uint8Array>({
            async start(controller) {
              controller.enqueue(encoder.encode('one\n'));
              streamStarted.open();
              await streamGate.reached;
              controller.enqueue(encoder.encode('two\n'));
              controller.close();
            },
          }),
          { headers: { 'content-type': 'text/plain' } },
        );
      case '/no-content':
        return new Response(null, { status: 204 });
      case '/throw':
        throw new Error('the echo failed');
      case '/reject':
        return Promise.reject(new Error('the echo rejected'));
      case '/not-a-response':
        return { status: 200 } as unknown as Response;
      case '/hold-body': {
        request.signal.addEventListener('abort', () => bodyAborted.open());
        const reader = (request.body as ReadableStream<Uint8Array>).getReader();
        await reader.read();
        bodyStarted.open();
        await bodyAborted.reached;
        return new Response('gone');
      }
      default: {
        const echoed: Echoed = {
          method: request.method,
          target: `${url.pathname}${url.search}`,
          origin: url.origin,
          headers: Object.fromEntries(request.headers),
          body: request.body === null ? '' : await request.text(),
          hasBody: request.body !== null,
        };
        return Response.json(echoed);
      }
    }
  };
  return {
    fetch,
    streamStarted: streamStarted.reached,
    finishStream: streamGate.open,
    bodyStarted: bodyStarted.reached,
    bodyAborted: bodyAborted.reached,
  };
}

/** A response as the client received it. */
export interface Exchanged {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** What to send. */
export interface Sending {
  readonly method?: string;
  /** Header values; an array sends the header once per value. */
  readonly headers?: Record<string, string | string[]>;
  /** The body: one piece (sent with a Content-Length), or pieces sent chunked without one. */
  readonly body?: string | Buffer | readonly string[];
}

/**
 * Send one request on a connection of its own and read the whole response.
 * @param base - `http://127.0.0.1:port`
 * @param path - the request target, as sent
 * @param sending - method, headers, body
 */
export function exchange(base: string, path: string, sending: Sending = {}): Promise<Exchanged> {
  const { method = 'GET', headers = {}, body } = sending;
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body === undefined) req.end();
    else if (typeof body === 'string' || Buffer.isBuffer(body)) {
      req.setHeader('content-length', Buffer.byteLength(body));
      req.end(body);
    } else {
      for (const piece of body) req.write(piece);
      req.end();
    }
  });
}

/**
 * Send the head of a request and the first part of its body, then leave the rest unsent; the
 * test destroys the socket to go away mid-body.
 * @param base - `http://127.0.0.1:port`
 * @param path - the request target
 * @param declared - the Content-Length announced
 * @param first - the part sent
 */
export function startBody(
  base: string,
  path: string,
  declared: number,
  first: Buffer,
): Promise<Socket> {
  return new Promise((resolve) => {
    const req = httpRequest(`${base}${path}`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/octet-stream', 'content-length': declared },
    });
    req.on('error', () => undefined);
    req.on('socket', (socket) => resolve(socket));
    req.write(first);
  });
}
