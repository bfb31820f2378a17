/**
 * Reading a page-number list to its end: `pageNumber` 1, 2, 3, ... until a page comes back empty
 * or says it is the last ("A client that needs all data repeats requests until no more data is
 * returned").
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

/** A page of a page-number list. */
export interface NumberedPage<T> extends Page<T> {
  /** The page's number. */
  readonly pageNumber: number;
}

/** Options of {@link pageNumberPages} and {@link pageNumberItems}. */
export interface PageNumberIteratorOptions<T> extends PageRequestOptions<T> {
  /** Items per page to ask for; absent leaves the server's default. */
  pageSize?: number;
  /** The first page to read. @defaultValue 1 */
  startPage?: number;
  /**
   * Whether a page is known to be the last, so that no empty page has to be fetched.
   * @defaultValue `endOfData === true` or `hasMore === false` in the body or its `pagination` member
   */
  isLastPage?: (body: unknown) => boolean;
}

/**
 * The pages of a page-number list, in order, until a page is empty or says it is the last.
 * @param options - the URL, page size, fetch and body readers
 * @throws ConfigurationError `invalid_option` when `url` is not an absolute URL
 * @throws PaginationClientError when a page fails or has no items list
 * @example
 * ```ts
 * for await (const page of pageNumberPages({ url: 'https://api.example.com/reservations', pageSize: 200 })) {
 *   console.log(page.pageNumber, page.items.length);
 * }
 * ```
 */
export async function* pageNumberPages<T = unknown>(
  options: PageNumberIteratorOptions<T>,
): AsyncGenerator<NumberedPage<T>, void, undefined> {
  const fetch = options.fetch ?? createRetryingFetch();
  const readItems = options.items ?? defaultItems<T>;
  const isLastPage = options.isLastPage ?? bodySaysLastPage;
  const list = listUrl(options.url);
  for (let pageNumber = options.startPage ?? 1; ; pageNumber++) {
    const url = new URL(list);
    url.searchParams.set('pageNumber', String(pageNumber));
    if (options.pageSize !== undefined) url.searchParams.set('pageSize', String(options.pageSize));
    const page = await requestPage(fetch, url, options.init, readItems);
    if (page.items.length === 0) return;
    yield { ...page, pageNumber };
    if (isLastPage(page.body)) return;
  }
}

/**
 * Every item of a page-number list, in order, each once.
 * @param options - as for {@link pageNumberPages}
 */
export async function* pageNumberItems<T = unknown>(
  options: PageNumberIteratorOptions<T>,
): AsyncGenerator<T, void, undefined> {
  for await (const page of pageNumberPages(options)) yield* page.items;
}

/**
 * The default end-of-data test: `endOfData: true` or `hasMore: false`, at the top of the body or in
 * its `pagination` member.
 * @param body - the parsed JSON body
 */
export function bodySaysLastPage(body: unknown): boolean {
  return paginationField(body, 'endOfData') === true || paginationField(body, 'hasMore') === false;
}
