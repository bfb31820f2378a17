/**
 * Reading a cursor list to its end: follow each page's next cursor until a page is empty or has
 * none, and refuse a cursor seen before, which would loop forever.
 * @module
 */
import { createRetryingFetch } from './fetch.js';
import {
  defaultItems,
  listUrl,
  type Page,
  type PageRequestOptions,
  paginationField,
  requestPage,
} from './page-request.js';
import { PaginationClientError } from './pagination-client-error.js';

/** A page of a cursor list. */
export interface CursorPage<T> extends Page<T> {
  /** The cursor that asked for this page (`undefined` for the first). */
  readonly cursor: string | undefined;
  /** The cursor of the next page, `undefined` at the end. */
  readonly nextCursor: string | undefined;
}

/** Options of {@link cursorPages} and {@link cursorItems}. */
export interface CursorIteratorOptions<T> extends PageRequestOptions<T> {
  /** Items per page to ask for; absent leaves the server's default. */
  limit?: number;
  /** A cursor to resume from. */
  startCursor?: string;
  /**
   * Finds the next cursor in a page.
   * @defaultValue a non-empty string `nextCursor` in the body or its `pagination` member
   */
  nextCursor?: (body: unknown, response: Response) => string | undefined;
}

/**
 * The pages of a cursor list, in order, until a page is empty or has no next cursor.
 * @param options - the URL, limit, fetch and body readers
 * @throws ConfigurationError `invalid_option` when `url` is not an absolute URL
 * @throws PaginationClientError when a page fails, has no items list, or repeats an earlier cursor
 * @example
 * ```ts
 * for await (const page of cursorPages({ url: 'https://api.example.com/audit-logs', limit: 500 })) {
 *   await store(page.items);
 * }
 * ```
 */
export async function* cursorPages<T = unknown>(
  options: CursorIteratorOptions<T>,
): AsyncGenerator<CursorPage<T>, void, undefined> {
  const fetch = options.fetch ?? createRetryingFetch();
  const readItems = options.items ?? defaultItems<T>;
  const readNextCursor = options.nextCursor ?? bodyNextCursor;
  const list = listUrl(options.url);
  const seen = new Set<string>();
  let cursor = options.startCursor;
  if (cursor !== undefined) seen.add(cursor);
  for (;;) {
    const url = new URL(list);
    if (cursor === undefined) url.searchParams.delete('cursor');
    else url.searchParams.set('cursor', cursor);
    if (options.limit !== undefined) url.searchParams.set('limit', String(options.limit));
    const page = await requestPage(fetch, url, options.init, readItems);
    if (page.items.length === 0) return;
    const nextCursor = readNextCursor(page.body, page.response);
    yield { ...page, cursor, nextCursor };
    if (nextCursor === undefined) return;
    if (seen.has(nextCursor)) {
      throw new PaginationClientError(
        'repeated_cursor',
        `GET ${page.url} answered a next cursor that an earlier page already gave; following it would loop forever, so the listing stopped.`,
        { url: page.url },
      );
    }
    seen.add(nextCursor);
    cursor = nextCursor;
  }
}

/**
 * Every item of a cursor list, in order, each once.
 * @param options - as for {@link cursorPages}
 */
export async function* cursorItems<T = unknown>(
  options: CursorIteratorOptions<T>,
): AsyncGenerator<T, void, undefined> {
  for await (const page of cursorPages(options)) yield* page.items;
}

/**
 * The default next-cursor reader: a non-empty string `nextCursor` at the top of the body or in its
 * `pagination` member.
 * @param body - the parsed JSON body
 */
export function bodyNextCursor(body: unknown): string | undefined {
  const value = paginationField(body, 'nextCursor');
  return typeof value === 'string' && value !== '' ? value : undefined;
}
