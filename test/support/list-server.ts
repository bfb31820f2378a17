/**
 * A real local HTTP server (node:http on 127.0.0.1, port 0) that serves a list of numbered items
 * with both pagination patterns, built from the library's own validators, cursor codec and links,
 * and answers 429 with Retry-After where a test asks it to.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createCursorCodec,
  cursorNavigation,
  cursorValidator,
  type ProblemDetails,
  pageNumberNavigation,
  pageNumberValidator,
  problemResponse,
} from '../../src/index.js';
import { keyA } from './cursor-keys.js';

/** What the server does. */
export interface ListServerOptions {
  /** Number of items; item i is the number i. */
  total: number;
  /** Retry-After value to answer the n-th request (from 0) with a 429, or undefined to serve it. */
  throttle?: (requestIndex: number) => string | null | undefined;
  /**
   * Overrides the next cursor of the page at `offset` (to test a server that repeats itself);
   * `encode` makes a valid cursor for any offset.
   */
  nextCursor?: (offset: number, encode: (offset: number) => string) => string | undefined;
  /** Report end of data in the body so the client need not fetch an empty page. */
  reportEndOfData?: boolean;
}

/** A started list server. */
export interface ListServer {
  /** Base URL, for example `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Every request line received, in order. */
  readonly requests: string[];
  /** Number of 429s answered. */
  readonly throttled: number;
  /** Stop the server. */
  close(): Promise<void>;
}

/**
 * Start a list server: `/items` pages by number (`pageNumber`, `pageSize`), `/logs` by cursor
 * (`cursor`, `limit`, with a signed codec bound to the filters).
 * @param options - the items and the throttling
 */
export async function startListServer(options: ListServerOptions): Promise<ListServer> {
  const validatePage = pageNumberValidator();
  const codec = createCursorCodec<{ offset: number }>({ signingKey: keyA });
  const validateCursor = cursorValidator({ codec });
  const items = Array.from({ length: options.total }, (_, i) => i);
  const requests: string[] = [];
  const state = { throttled: 0 };

  const server: Server = createServer((req, res) => {
    const index = requests.length;
    requests.push(`${req.method} ${req.url}`);
    const retryAfter = options.throttle?.(index);
    if (retryAfter !== undefined) {
      state.throttled++;
      const headers: Record<string, string> = { 'content-type': 'text/plain' };
      if (retryAfter !== null) headers['retry-after'] = retryAfter;
      res.writeHead(429, headers).end('Too many requests');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const send = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const refuse = (problem: ProblemDetails) => {
      const parts = problemResponse(problem);
      res.writeHead(parts.status, parts.headers).end(parts.body);
    };
    if (url.pathname === '/items') {
      const result = validatePage(url.searchParams);
      if (!result.ok) return refuse(result.problem);
      const { pageNumber, pageSize } = result.value;
      const start = (pageNumber - 1) * pageSize;
      const page = items.slice(start, start + pageSize);
      const hasMore = start + pageSize < items.length;
      const nav = pageNumberNavigation({ url: req.url ?? '/', pageNumber, pageSize, hasMore });
      res.setHeader('link', nav.linkHeader);
      send(200, options.reportEndOfData ? { items: page, ...nav } : { items: page });
      return;
    }
    if (url.pathname === '/logs') {
      const result = validateCursor(url.searchParams);
      if (!result.ok) return refuse(result.problem);
      const offset = result.value.state?.offset ?? 0;
      const page = items.slice(offset, offset + result.value.limit);
      const nextOffset = offset + page.length;
      const encode = (at: number) => codec.encode({ offset: at }, { query: url.searchParams });
      const nextCursor = options.nextCursor
        ? options.nextCursor(offset, encode)
        : nextOffset < items.length
          ? encode(nextOffset)
          : undefined;
      const nav = cursorNavigation({
        url: req.url ?? '/',
        limit: result.value.limit,
        ...(nextCursor === undefined ? {} : { nextCursor }),
      });
      send(200, { data: page, pagination: nav });
      return;
    }
    send(404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get throttled() {
      return state.throttled;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** A sleep that records each wait and returns at once: tests never really wait. */
export function recordingSleep(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms);
    },
  };
}
