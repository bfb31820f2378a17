/** Reading a cursor list to its end, refusing a cursor that would loop or end it early. @module */
import { PaginationClientError } from '../errors/pagination-client-error.js';
import { describe } from '../internal/describe.js';
import { aFunction, aString, readOptions, wholeNumber, worded } from '../internal/options.js';
import { createRetryingFetch } from './fetch.js';
import {
  defaultItems,
  type ItemsReader,
  listUrl,
  PAGE_REQUEST_RULES,
  type Page,
  type PageRequestOptions,
  requestPage,
} from './page-request.js';

/** A page of a cursor list. */
export interface CursorPage<T> extends Page<T> {
  /** The cursor that asked for this page (`undefined` for the first). */
  readonly cursor: string | undefined;
  /** The cursor of the next page, `undefined` at the end. */
  readonly nextCursor: string | undefined;
}

const CURSOR_RULES = {
  ...PAGE_REQUEST_RULES,
  limit: wholeNumber(),
  startCursor: worded(
    aString(Number.MAX_SAFE_INTEGER),
    'a non-empty cursor string from an earlier page (leave it out to start at the first page)',
  ),
  nextCursor: aFunction<NonNullable<CursorIteratorOptions<unknown>['nextCursor']>>(
    'finds the next cursor in a page body',
  ),
};

/** Options of {@link cursorPages} and {@link cursorItems}. */
export interface CursorIteratorOptions<T> extends PageRequestOptions<T> {
  /** Items per page to ask for, a whole number >= 1; absent leaves the server's default. */
  limit?: number;
  /** A cursor to resume from: a non-empty string; absent starts at the first page. */
  startCursor?: string;
  /**
   * The next cursor of a page, or `undefined`, `null` or `''` at the end; anything else stops the
   * listing with `invalid_page_body`. @defaultValue {@link bodyNextCursor}
   */
  nextCursor?: (body: unknown, response: Response) => string | null | undefined;
}

/**
 * The pages of a cursor list, in order, until a page is empty or has no next cursor.
 * @throws ConfigurationError `invalid_option` when the options are not an object, `url` is not an
 * absolute URL, `limit` is not a whole number >= 1, `startCursor` is not a non-empty string, or a
 * reader is not a function; before any request
 * @throws PaginationClientError `unexpected_status` when a page fails; `invalid_page_body` when a
 * page has no items list or a next cursor that cannot be followed (that page is not yielded);
 * `repeated_cursor` when a page repeats an earlier cursor
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
  const given = readOptions(options, 'cursorPages', CURSOR_RULES, {
    defaults: { fetch: createRetryingFetch(), items: defaultItems<T> },
    required: true,
    example: "{ url: 'https://api.example.com/audit-logs' }",
  });
  const list = listUrl(given.url);
  const { limit, startCursor, fetch, nextCursor: readNextCursor } = given;
  const readItems = given.items as ItemsReader<T>;
  const seen = new Set<string>();
  let cursor = startCursor;
  if (cursor !== undefined) seen.add(cursor);
  for (;;) {
    const url = new URL(list);
    if (cursor === undefined) url.searchParams.delete('cursor');
    else url.searchParams.set('cursor', cursor);
    if (limit !== undefined) url.searchParams.set('limit', String(limit));
    const page = await requestPage(fetch, url, given.init, readItems);
    if (page.items.length === 0) return;
    const reading =
      readNextCursor === undefined
        ? nextCursorIn(page.body)
        : returnedCursor(readNextCursor(page.body, page.response));
    if ('problem' in reading) {
      throw new PaginationClientError(
        'invalid_page_body',
        `GET ${page.url} answered ${reading.problem}; the rest of the list cannot be requested, so the listing stopped there.`,
        { url: page.url },
      );
    }
    const nextCursor = reading.cursor;
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

/** Every item of a cursor list, in order, each once; options as for {@link cursorPages}. */
export async function* cursorItems<T = unknown>(
  options: CursorIteratorOptions<T>,
): AsyncGenerator<T, void, undefined> {
  for await (const page of cursorPages(options)) yield* page.items;
}

/**
 * The default next-cursor reader: `nextCursor` at the top of the body or in its `pagination`
 * member. A non-empty string is the next cursor; absent, `null` or `''` means the end of the list.
 * @param response - the page's response, whose URL an error names
 * @throws PaginationClientError `invalid_page_body` when a `nextCursor` is of another type, or
 * when the two places disagree: reading either as the end could drop the rest of the list
 */
export function bodyNextCursor(body: unknown, response?: Response): string | undefined {
  const reading = nextCursorIn(body);
  if ('problem' in reading) {
    const url = response?.url ?? '';
    throw new PaginationClientError(
      'invalid_page_body',
      `${url === '' ? 'The page' : `GET ${url}`} answered ${reading.problem}; the rest of the list cannot be requested.`,
      { url },
    );
  }
  return reading.cursor;
}

/** What a page says of the next cursor: one to follow (`undefined` at the end), or why it cannot. */
type NextCursorReading = { readonly cursor: string | undefined } | { readonly problem: string };

const END: NextCursorReading = { cursor: undefined };

// One place's nextCursor: absent (undefined), the end (null or ''), a cursor, or unusable.
function placeReading(value: unknown, path: string): NextCursorReading | undefined {
  if (value === undefined) return undefined;
  if (value === null || value === '') return END;
  if (typeof value === 'string') return { cursor: value };
  return {
    problem: `${path} ${describe(value)}, which is not a cursor (a non-empty string, or null at the end)`,
  };
}

function nextCursorIn(body: unknown): NextCursorReading {
  if (typeof body !== 'object' || body === null) return END;
  const record = body as Record<string, unknown>;
  const nested = record.pagination;
  const top = placeReading(record.nextCursor, 'nextCursor');
  const inner =
    typeof nested === 'object' && nested !== null
      ? placeReading((nested as Record<string, unknown>).nextCursor, 'pagination.nextCursor')
      : undefined;
  if (top === undefined) return inner ?? END;
  if (inner === undefined || 'problem' in top) return top;
  if ('problem' in inner) return inner;
  // Both places give one: they must agree, or one of them would drop the rest of the list.
  if (top.cursor === inner.cursor) return top;
  return {
    problem: `nextCursor ${describe(record.nextCursor)} and pagination.nextCursor ${describe((nested as Record<string, unknown>).nextCursor)}, which disagree`,
  };
}

// What a nextCursor option returned: the same end markers as a body's nextCursor, and undefined.
function returnedCursor(value: unknown): NextCursorReading {
  if (value === undefined || value === null || value === '') return END;
  if (typeof value === 'string') return { cursor: value };
  return {
    problem: `a body in which the nextCursor option found ${describe(value)}, which is not a cursor (a non-empty string, or undefined at the end)`,
  };
}
