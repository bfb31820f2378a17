/** One page request of an iterator, shared by the page-number and cursor ones. @module */
import { PaginationClientError } from '../errors/pagination-client-error.js';
import { aFunction, anything, INVALID, invalidValue, type Rule } from '../internal/options.js';
import type { FetchFunction } from './fetch.js';

/** Finds the items of a page in its JSON body; `undefined` when the body has none. */
export type ItemsReader<T> = (body: unknown) => readonly T[] | undefined;

/** What every iterator needs besides its pattern's parameters. */
export interface PageRequestOptions<T> {
  /** The list's absolute URL; its query parameters (filters) are kept on every request. */
  url: string | URL;
  /** The fetch that sends the requests; pass `createRetryingFetch()` to honour 429s. @defaultValue `createRetryingFetch()` */
  fetch?: FetchFunction;
  /** Request options for every page (headers, signal). */
  init?: RequestInit;
  /** Finds the items in a page body. @defaultValue the body if an array, else its `items` or `data` */
  items?: ItemsReader<T>;
}

/** One page read by an iterator. */
export interface Page<T> {
  /** The page's items, never empty (an empty page ends the iteration and is not yielded). */
  readonly items: readonly T[];
  /** The parsed JSON body. */
  readonly body: unknown;
  /** The URL requested. */
  readonly url: string;
  /** The response (its body already read). */
  readonly response: Response;
}

/** The default {@link ItemsReader}: an array body, or the `items` or `data` array of an object body. */
export function defaultItems<T>(body: unknown): readonly T[] | undefined {
  if (Array.isArray(body)) return body as T[];
  if (typeof body !== 'object' || body === null) return undefined;
  const { items, data } = body as { items?: unknown; data?: unknown };
  if (Array.isArray(items)) return items as T[];
  if (Array.isArray(data)) return data as T[];
  return undefined;
}

const LIST_URL: Rule<URL> = {
  expected: "the list's absolute URL, such as https://api.example.com/reservations",
  read(value) {
    try {
      if (typeof value === 'string' || value instanceof URL) return new URL(value);
    } catch {
      // Refused below, in the one wording.
    }
    return INVALID;
  },
};

/** The rules of the options every iterator takes. @internal */
export const PAGE_REQUEST_RULES = {
  url: LIST_URL,
  fetch: aFunction<FetchFunction>('sends a request as fetch does'),
  init: anything('request options such as { headers }') as Rule<RequestInit>,
  items: aFunction<ItemsReader<never>>('finds the items in a page body'),
};

/** The list's URL, which an iterator cannot do without. @internal */
export function listUrl(url: URL | undefined): URL {
  if (url === undefined) throw invalidValue(LIST_URL, url, 'url');
  return url;
}

/**
 * Request one page and read its items.
 * @throws PaginationClientError `unexpected_status` for a non-2xx answer, `invalid_page_body` for a body without items
 */
export async function requestPage<T>(
  fetch: FetchFunction,
  url: URL,
  init: RequestInit | undefined,
  readItems: ItemsReader<T>,
): Promise<Page<T>> {
  const href = url.href;
  const response = await fetch(href, init);
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw new PaginationClientError(
      'unexpected_status',
      `GET ${href} answered ${response.status}; the listing stopped there.`,
      { url: href, status: response.status },
    );
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch (cause) {
    throw new PaginationClientError(
      'invalid_page_body',
      `GET ${href} did not answer JSON; a page must be a JSON body with its items.`,
      { url: href },
      { cause },
    );
  }
  const items = readItems(body);
  if (items === undefined) {
    throw new PaginationClientError(
      'invalid_page_body',
      `GET ${href} answered a body without a list of items; pass an items option that finds them.`,
      { url: href },
    );
  }
  return { items, body, url: href, response };
}

/** Read a field of the body or of its `pagination` member. */
export function paginationField(body: unknown, name: string): unknown {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  if (record[name] !== undefined) return record[name];
  const nested = record.pagination;
  return typeof nested === 'object' && nested !== null
    ? (nested as Record<string, unknown>)[name]
    : undefined;
}
