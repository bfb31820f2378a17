/** Reading a page-number list to its end, refusing a page not asked for. @module */

import { PaginationClientError } from '../errors/pagination-client-error.js';
import { describe } from '../internal/describe.js';
import { aFunction, readOptions, wholeNumber } from '../internal/options.js';
import { createRetryingFetch } from './fetch.js';
import {
  defaultItems,
  type ItemsReader,
  listUrl,
  PAGE_REQUEST_RULES,
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

const PAGE_NUMBER_RULES = {
  ...PAGE_REQUEST_RULES,
  pageSize: wholeNumber(),
  startPage: wholeNumber(),
  isLastPage: aFunction<(body: unknown) => boolean>('tells whether a page body is the last'),
};

/** Options of {@link pageNumberPages} and {@link pageNumberItems}. */
export interface PageNumberIteratorOptions<T> extends PageRequestOptions<T> {
  /** Items per page to ask for, a whole number >= 1; absent leaves the server's default. */
  pageSize?: number;
  /** The first page to read, a whole number >= 1. @defaultValue 1 */
  startPage?: number;
  /** Whether a page is the last, sparing the empty page. @defaultValue {@link bodySaysLastPage} */
  isLastPage?: (body: unknown) => boolean;
}

/**
 * The pages of a page-number list, in order, until a page is empty or says it is the last.
 * @throws ConfigurationError `invalid_option` when the options are not an object, `url` is not an
 * absolute URL, `startPage` or `pageSize` is not a whole number >= 1, or a reader is not a
 * function; before any request
 * @throws PaginationClientError `unexpected_status` when a page fails; `invalid_page_body` when it
 * has no items list; `unexpected_page` when it is not the page asked for (see docs/client.md)
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
  const given = readOptions(options, 'pageNumberPages', PAGE_NUMBER_RULES, {
    defaults: {
      fetch: createRetryingFetch(),
      items: defaultItems<T>,
      startPage: 1,
      isLastPage: bodySaysLastPage,
    },
    required: true,
    example: "{ url: 'https://api.example.com/reservations' }",
  });
  const list = listUrl(given.url);
  const { startPage, pageSize, fetch, isLastPage } = given;
  const readItems = given.items as ItemsReader<T>;
  let previous: readonly T[] | undefined;
  for (let pageNumber = startPage; ; pageNumber++) {
    const url = new URL(list);
    url.searchParams.set('pageNumber', String(pageNumber));
    if (pageSize !== undefined) url.searchParams.set('pageSize', String(pageSize));
    const page = await requestPage(fetch, url, given.init, readItems);
    if (page.items.length === 0) return;
    const stated = statedPageNumber(page.body);
    if (stated !== undefined && stated !== pageNumber) {
      throw new PaginationClientError(
        'unexpected_page',
        `GET ${page.url} answered page ${describe(stated)} instead of page ${pageNumber}: the server does not serve the page asked for (it ignores or clamps pageNumber), so reading on would never end; the listing stopped there.`,
        { url: page.url },
      );
    }
    if (stated === undefined && previous !== undefined && sameItems(previous, page.items)) {
      throw new PaginationClientError(
        'unexpected_page',
        `GET ${page.url} answered the same items as page ${pageNumber - 1}: the server does not move on to the page asked for (it ignores or clamps pageNumber), so reading on would never end; the listing stopped there.`,
        { url: page.url },
      );
    }
    yield { ...page, pageNumber };
    if (isLastPage(page.body)) return;
    if (pageNumber === Number.MAX_SAFE_INTEGER) {
      throw new PaginationClientError(
        'unexpected_page',
        `GET ${page.url} answered a page that is not the last, but the next page number would pass Number.MAX_SAFE_INTEGER and cannot be requested exactly; the listing stopped there.`,
        { url: page.url },
      );
    }
    previous = page.items;
  }
}

/** Every item of a page-number list, in order, each once; options as for {@link pageNumberPages}. */
export async function* pageNumberItems<T = unknown>(
  options: PageNumberIteratorOptions<T>,
): AsyncGenerator<T, void, undefined> {
  for await (const page of pageNumberPages(options)) yield* page.items;
}

/**
 * The default end-of-data test: `endOfData: true` or `hasMore: false`, at the top of the body or in
 * its `pagination` member.
 */
export function bodySaysLastPage(body: unknown): boolean {
  return paginationField(body, 'endOfData') === true || paginationField(body, 'hasMore') === false;
}

// As a number or a decimal string, as pageNumberNavigation writes it; anything else states nothing.
function statedPageNumber(body: unknown): number | string | undefined {
  const value = paginationField(body, 'pageNumber');
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) {
    const number = Number(value);
    return Number.isSafeInteger(number) ? number : value;
  }
  return undefined;
}

// Item by item, so that two different pages (the usual case) differ at the first item.
function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    try {
      const text = JSON.stringify(a[i]);
      if (text === undefined || text !== JSON.stringify(b[i])) return false;
    } catch {
      // Items JSON cannot write (a cycle, a BigInt) count as different.
      return false;
    }
  }
  return true;
}
