import { createServer, type ServerResponse } from 'node:http';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  bodyNextCursor,
  bodySaysLastPage,
  createRetryingFetch,
  cursorItems,
  cursorPages,
  defaultItems,
  isPaginationClientError,
  pageNumberItems,
  pageNumberPages,
} from '../../src/client/index.js';
import { createCursorCodec, isConfigurationError } from '../../src/index.js';
import { keyA } from '../support/cursor-keys.js';
import { type ListServer, recordingSleep, startListServer } from '../support/list-server.js';
import { listen } from '../support/listen.js';

let server: ListServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const value of iterable) out.push(value);
  return out;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** A real local server whose every answer the test writes itself. */
const answering = (answer: (url: URL, res: ServerResponse) => void) =>
  listen(createServer((req, res) => answer(new URL(req.url ?? '/', 'http://127.0.0.1'), res)));

// Retry-After values a throttled request may get: seconds, none (backoff 1 s), unreadable.
const throttlePlan = fc.array(
  fc.option(fc.constantFrom('0', '1', '2', '7', null, 'soon'), { nil: undefined }),
  {
    maxLength: 12,
  },
);

describe('client iterators against a real local server', () => {
  it('page numbers: read every item exactly once, in order, for any page size and total, across 429s with Retry-After', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 45 }),
        fc.integer({ min: 1, max: 12 }),
        throttlePlan,
        fc.boolean(),
        async (total, pageSize, plan, reportEndOfData) => {
          const { waits, sleep } = recordingSleep();
          const live = await startListServer({ total, throttle: (i) => plan[i], reportEndOfData });
          try {
            const fetch = createRetryingFetch({ sleep, maxRetries: 20 });
            const items = await collect(
              pageNumberItems<number>({ url: `${live.url}/items?x=1`, pageSize, fetch }),
            );
            expect(items).toEqual(range(total));
            expect(waits).toHaveLength(live.throttled);
            const pages = live.requests.length - live.throttled;
            const full = Math.ceil(total / pageSize);
            // Without an end-of-data indicator the client learns the end from an empty page.
            expect(pages).toBe(reportEndOfData ? Math.max(1, full) : full + 1);
          } finally {
            await live.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('cursors: read every item exactly once, in order, for any limit and total, across 429s with Retry-After', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 45 }),
        fc.integer({ min: 1, max: 12 }),
        throttlePlan,
        async (total, limit, plan) => {
          const { waits, sleep } = recordingSleep();
          const live = await startListServer({ total, throttle: (i) => plan[i] });
          try {
            const fetch = createRetryingFetch({ sleep, maxRetries: 20 });
            const items = await collect(
              cursorItems<number>({ url: `${live.url}/logs?type=audit`, limit, fetch }),
            );
            expect(items).toEqual(range(total));
            expect(waits).toHaveLength(live.throttled);
            expect(live.requests.length - live.throttled).toBe(
              Math.max(1, Math.ceil(total / limit)),
            );
          } finally {
            await live.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('waits what Retry-After says, and one second when it is missing or unreadable', async () => {
    const { waits, sleep } = recordingSleep();
    const plan: (string | null | undefined)[] = ['3', null, 'soon'];
    server = await startListServer({ total: 5, throttle: (i) => plan[i] });
    const fetch = createRetryingFetch({ sleep });
    const pages = await collect(
      cursorPages<number>({ url: `${server.url}/logs`, limit: 5, fetch }),
    );
    expect(pages.map((p) => p.items)).toEqual([[0, 1, 2, 3, 4]]);
    expect(waits).toEqual([3000, 1000, 1000]);
  });

  it('gives each page with its number, URL and body', async () => {
    server = await startListServer({ total: 3, reportEndOfData: true });
    const pages = await collect(
      pageNumberPages<number>({ url: `${server.url}/items`, pageSize: 2, startPage: 1 }),
    );
    expect(pages.map((p) => [p.pageNumber, p.items])).toEqual([
      [1, [0, 1]],
      [2, [2]],
    ]);
    expect(pages[1]?.url).toBe(`${server.url}/items?pageNumber=2&pageSize=2`);
    expect(pages[1]?.response.headers.get('link')).toContain('rel="first"');
  });

  it('refuses to loop on a cursor that repeats the last one', async () => {
    server = await startListServer({ total: 10, nextCursor: (_offset, encode) => encode(2) });
    const error = await collect(cursorItems({ url: `${server.url}/logs`, limit: 2 })).catch(
      (e: unknown) => e,
    );
    expect(isPaginationClientError(error) && error.code).toBe('repeated_cursor');
    expect(server.requests).toHaveLength(2);
  });

  it('refuses to loop on a cycle of cursors, and on a start cursor given again', async () => {
    server = await startListServer({
      total: 10,
      nextCursor: (offset, encode) => encode(offset === 0 ? 2 : 0),
    });
    const error = await collect(cursorItems({ url: `${server.url}/logs`, limit: 2 })).catch(
      (e: unknown) => e,
    );
    expect(isPaginationClientError(error) && error.code).toBe('repeated_cursor');
    expect(server.requests).toHaveLength(3);

    await server.close();

    // The server answers the start cursor itself as the next one.
    const start = createCursorCodec({ signingKey: keyA }).encode({ offset: 4 }, { query: '' });
    server = await startListServer({ total: 10, nextCursor: (_offset, encode) => encode(4) });
    const again = await collect(
      cursorItems({ url: `${server.url}/logs`, startCursor: start }),
    ).catch((e: unknown) => e);
    expect(isPaginationClientError(again) && again.code).toBe('repeated_cursor');
    expect(server.requests).toHaveLength(1);
  });

  it('stops with unexpected_status when the server refuses a page, after the 429 retries run out', async () => {
    server = await startListServer({ total: 10 });
    const refused = await collect(
      pageNumberItems({ url: `${server.url}/items`, pageSize: 500 }),
    ).catch((e: unknown) => e);
    expect(isPaginationClientError(refused) && [refused.code, refused.status]).toEqual([
      'unexpected_status',
      400,
    ]);

    const { sleep } = recordingSleep();
    const throttled = await startListServer({ total: 10, throttle: () => '1' });
    try {
      const fetch = createRetryingFetch({ sleep, maxRetries: 2 });
      const error = await collect(cursorItems({ url: `${throttled.url}/logs`, fetch })).catch(
        (e: unknown) => e,
      );
      expect(isPaginationClientError(error) && error.status).toBe(429);
      expect(throttled.requests).toHaveLength(3);
    } finally {
      await throttled.close();
    }
  });

  it('stops with unexpected_status on a 404, and with invalid_page_body when a page has no items list', async () => {
    server = await startListServer({ total: 1 });
    const error = await collect(pageNumberItems({ url: `${server.url}/nothing` })).catch(
      (e: unknown) => e,
    );
    expect(isPaginationClientError(error) && error.code).toBe('unexpected_status');
    const items = await collect(
      pageNumberItems({ url: `${server.url}/items`, items: () => undefined }),
    ).catch((e: unknown) => e);
    expect(isPaginationClientError(items) && items.code).toBe('invalid_page_body');
  });

  it('stops at once with the signal reason when aborted while waiting out a 429', async () => {
    server = await startListServer({ total: 10, throttle: () => '30' });
    const controller = new AbortController();
    const reason = new Error('shutting down');
    let waiting = false;
    const fetch = createRetryingFetch({
      sleep: () => {
        waiting = true;
        return new Promise<void>(() => undefined);
      },
    });
    const listing = collect(
      cursorItems({ url: `${server.url}/logs`, fetch, init: { signal: controller.signal } }),
    );
    await vi.waitFor(() => expect(waiting).toBe(true));
    controller.abort(reason);
    await expect(listing).rejects.toBe(reason);
    expect(server.requests).toHaveLength(1);
  });

  it('reads a list whose pages are bare JSON arrays, to the first empty page', async () => {
    const app = await answering((url, res) => {
      const size = Number(url.searchParams.get('pageSize'));
      const start = (Number(url.searchParams.get('pageNumber')) - 1) * size;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(range(5).slice(start, start + size)));
    });
    try {
      const pages = await collect(
        pageNumberPages<number>({ url: `${app.url}/rates`, pageSize: 2 }),
      );
      expect(pages.map((p) => p.items)).toEqual([[0, 1], [2, 3], [4]]);
    } finally {
      await app.close();
    }
  });

  it('stops with unexpected_status naming the URL and status, and discards the refused body without waiting for it', async () => {
    let bodyClosed: Promise<void> = Promise.resolve();
    const app = await answering((_url, res) => {
      bodyClosed = new Promise((resolve) => res.once('close', resolve));
      // The error body never ends: reading it would hang the iterator.
      res.writeHead(503, { 'content-type': 'text/plain' }).write('Service unavailable, and');
    });
    try {
      const received: Response[] = [];
      const fetch = async (input: string | URL | Request, init?: RequestInit) => {
        const response = await globalThis.fetch(input, init);
        received.push(response);
        return response;
      };
      const error = await collect(pageNumberItems({ url: `${app.url}/rates`, fetch })).catch(
        (e: unknown) => e,
      );
      const url = `${app.url}/rates?pageNumber=1`;
      expect(isPaginationClientError(error) && [error.code, error.status, error.url]).toEqual([
        'unexpected_status',
        503,
        url,
      ]);
      expect((error as Error).message).toBe(`GET ${url} answered 503; the listing stopped there.`);
      expect(received[0]?.bodyUsed).toBe(true);
      await bodyClosed;
    } finally {
      await app.close();
    }
  });

  it('stops with unexpected_status even when discarding the refused body fails', async () => {
    const failingBody = new ReadableStream({
      cancel() {
        throw new Error('connection already gone');
      },
    });
    const fetch = async () => new Response(failingBody, { status: 502 });
    const error = await collect(pageNumberItems({ url: 'https://api.test/rates', fetch })).catch(
      (e: unknown) => e,
    );
    expect(isPaginationClientError(error) && [error.code, error.status]).toEqual([
      'unexpected_status',
      502,
    ]);
  });

  it('stops with invalid_page_body when a page is not JSON, keeping the parse error as the cause', async () => {
    const app = await answering((_url, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Maintenance</html>');
    });
    try {
      const error = await collect(cursorItems({ url: `${app.url}/logs` })).catch((e: unknown) => e);
      expect(isPaginationClientError(error) && [error.code, error.url]).toEqual([
        'invalid_page_body',
        `${app.url}/logs`,
      ]);
      expect((error as Error).message).toBe(
        `GET ${app.url}/logs did not answer JSON; a page must be a JSON body with its items.`,
      );
      expect((error as Error).cause).toBeInstanceOf(SyntaxError);
    } finally {
      await app.close();
    }
  });

  it('stops with invalid_page_body, telling to pass an items option, when a JSON page holds no list', async () => {
    const app = await answering((_url, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"results":[1,2]}');
    });
    try {
      const error = await collect(pageNumberItems({ url: `${app.url}/rates` })).catch(
        (e: unknown) => e,
      );
      expect(isPaginationClientError(error) && error.code).toBe('invalid_page_body');
      expect((error as Error).message).toContain('pass an items option that finds them');
    } finally {
      await app.close();
    }
  });
});

describe('the list URL', () => {
  it('throws a ConfigurationError naming the option for a relative or missing URL, before any request', async () => {
    const fetch = vi.fn(async () => new Response('[]'));
    for (const url of ['/reservations', 'reservations?status=open', undefined, 5]) {
      const listings: AsyncIterable<unknown>[] = [
        pageNumberPages({ url: url as never, fetch }),
        cursorPages({ url: url as never, fetch }),
      ];
      for (const listing of listings) {
        const error = await collect(listing).catch((e: unknown) => e);
        expect(error).toMatchObject({
          code: 'invalid_option',
          message: expect.stringContaining("url must be the list's absolute URL"),
        });
        expect(isConfigurationError(error)).toBe(true);
      }
    }
    expect(fetch).not.toHaveBeenCalled();
  });
});

describe('reading a page body', () => {
  it('finds the items of an array body, else of its items array, else of its data array', () => {
    expect(defaultItems([1, 2])).toEqual([1, 2]);
    expect(defaultItems({ items: [3], data: [4] })).toEqual([3]);
    expect(defaultItems({ items: 'none', data: [4] })).toEqual([4]);
    expect(defaultItems({ data: [] })).toEqual([]);
  });

  it('finds no items in a body that is not an array and has no items or data array', () => {
    for (const body of [{}, { items: { a: 1 } }, { data: '1,2' }, 'a,b', 7, true, null]) {
      expect(defaultItems(body), JSON.stringify(body)).toBeUndefined();
    }
  });

  it('reads no next cursor and no end of data from a body that is not an object', () => {
    for (const body of ['abc', 3, true, null, undefined]) {
      expect(bodyNextCursor(body)).toBeUndefined();
      expect(bodySaysLastPage(body)).toBe(false);
    }
    expect(bodyNextCursor({ pagination: { nextCursor: 'c2' } })).toBe('c2');
    expect(bodySaysLastPage({ pagination: { hasMore: false } })).toBe(true);
  });
});
