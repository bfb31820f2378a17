/**
 * Writing a web-standard `Response` to node's response, for {@link nodeFetchHandler}: status, every
 * header, the body streamed with backpressure until it ends or the client goes away.
 * @module
 */
import {
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
  validateHeaderName,
  validateHeaderValue,
} from 'node:http';

/** The part of a `Response` that is written; a `Response` of another fetch implementation too. */
export interface ResponseLike {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | null;
}

/**
 * Whether a handler's answer can be written as a response: a `Response`, this runtime's or
 * another implementation's (Hono's node server replaces the global one). `Response.error()`, whose
 * status is 0, cannot.
 * @param value - what the handler answered
 */
export function isResponse(value: unknown): value is ResponseLike {
  if (value instanceof Response) return value.status >= 200;
  if (typeof value !== 'object' || value === null) return false;
  const { status, headers, body } = value as Partial<Record<keyof ResponseLike, unknown>>;
  return (
    typeof status === 'number' &&
    status >= 200 &&
    status <= 599 &&
    typeof (headers as Headers | undefined)?.forEach === 'function' &&
    (body === null || typeof (body as ReadableStream | undefined)?.getReader === 'function')
  );
}

// Statuses whose response has no body (RFC 9110 sections 15.3.5 and 15.4.5).
const NO_BODY = new Set([204, 205, 304]);

/**
 * Write the response. Rejects, having written nothing, for a header node refuses or a body whose
 * first read fails; once the head is out, a failing body rejects with the response unfinished
 * (the caller closes the connection).
 * @param response - the handler's response
 * @param req - node's request (a HEAD gets the head alone)
 * @param res - node's response
 */
export async function writeFetchResponse(
  response: ResponseLike,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const head = responseHead(response);
  const { body } = response;
  if (body === null || req.method === 'HEAD' || NO_BODY.has(response.status)) {
    // A body nobody reads is cancelled, so that its source stops producing.
    body?.cancel().catch(() => undefined);
    writeHead(res, head).end();
    return;
  }
  await new BodyWriter(body.getReader(), res).write(head);
}

/** The status line and headers, checked as node checks them before anything is written. */
interface Head {
  readonly status: number;
  readonly statusText: string;
  readonly headers: OutgoingHttpHeaders;
}

function responseHead(response: ResponseLike): Head {
  const headers: OutgoingHttpHeaders = {};
  const { headers: source } = response;
  const cookies =
    typeof source.getSetCookie === 'function' ? source.getSetCookie() : ([] as string[]);
  source.forEach((value, name) => {
    if (name === 'set-cookie') {
      if (typeof source.getSetCookie !== 'function') cookies.push(value);
      return;
    }
    validateHeaderName(name);
    validateHeaderValue(name, value);
    headers[name] = value;
  });
  for (const cookie of cookies) validateHeaderValue('set-cookie', cookie);
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  const statusText = response.statusText;
  if (statusText !== '') validateHeaderValue('status text', statusText);
  return { status: response.status, statusText, headers };
}

function writeHead(res: ServerResponse, head: Head): ServerResponse {
  return head.statusText === ''
    ? res.writeHead(head.status, head.headers)
    : res.writeHead(head.status, head.statusText, head.headers);
}

// What the first read of a body answers when its second one is still waiting.
const WAITING = Symbol('waiting');

/** One body written to one node response; the reader is cancelled when the client goes away. */
class BodyWriter {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #res: ServerResponse;
  #gone = false;

  constructor(reader: ReadableStreamDefaultReader<Uint8Array>, res: ServerResponse) {
    this.#reader = reader;
    this.#res = res;
  }

  async write(head: Head): Promise<void> {
    const res = this.#res;
    // A read waiting for the source ends at once when the client goes.
    res.once('close', this.#onClose);
    try {
      const first = await this.#reader.read();
      if (first.done) {
        writeHead(res, withLength(head, 0)).end();
        return;
      }
      const chunk = bytes(first.value);
      // A body that is whole by the next turn (a string, JSON, bytes) gets a Content-Length;
      // one still waiting for its source (a stream) goes out chunked, its first chunk at once.
      const secondRead = this.#reader.read();
      const second = await Promise.race([secondRead, nextTurn()]);
      if (second !== WAITING && second.done) {
        writeHead(res, withLength(head, chunk.byteLength)).end(chunk);
        return;
      }
      writeHead(res, head);
      if (!(await this.#send(chunk))) return;
      let next = second === WAITING ? await secondRead : second;
      while (!next.done) {
        if (!(await this.#send(bytes(next.value)))) return;
        next = await this.#reader.read();
      }
      if (!this.#gone) res.end();
    } finally {
      res.off('close', this.#onClose);
    }
  }

  /** Write one chunk; wait while node's buffer is full. False once the client is gone. */
  async #send(chunk: Uint8Array): Promise<boolean> {
    if (this.#gone) return false;
    if (!this.#res.write(chunk)) await drained(this.#res);
    return !this.#gone;
  }

  readonly #onClose = (): void => {
    if (this.#res.writableFinished) return;
    this.#gone = true;
    this.#reader.cancel().catch(() => undefined);
  };
}

function withLength(head: Head, length: number): Head {
  const { headers } = head;
  if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) {
    return head;
  }
  return { ...head, headers: { ...headers, 'content-length': length } };
}

/** A body chunk as bytes; a stream that yields anything else cannot be written. */
function bytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  throw new TypeError(
    `A response body chunk must be a Uint8Array, got ${typeof value}; enqueue bytes (TextEncoder) in the body stream.`,
  );
}

function nextTurn(): Promise<typeof WAITING> {
  return new Promise((resolve) => setImmediate(resolve, WAITING));
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
