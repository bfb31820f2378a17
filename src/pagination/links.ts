/**
 * The links of paged lists, as an RFC 8288 `Link` header and as body fields. A total is reported
 * only when the caller has one: counting a large table on every page is not free.
 * @module
 */
import { isArray } from '../internal/describe.js';
import {
  aBoolean,
  aString,
  checkValue,
  conflictingKeys,
  INVALID,
  invalidValue,
  type Rule,
  readOptions,
  refused,
  requiredValue,
  unreadable,
  wholeNumber,
  worded,
} from '../internal/options.js';
import { isInstance } from '../internal/read-once.js';

/** Links to neighbouring pages; a link is absent when there is no such page (or it is unknown). */
export interface PageLinks {
  /** The first page. */
  readonly first: string;
  /** The page before this one. */
  readonly prev?: string;
  /** The page after this one; absent at the end of the data. */
  readonly next?: string;
  /** The last page; only when the total is known. */
  readonly last?: string;
}

/** What the server knows about a page of a page-number list. */
export interface PageNumberPageInput {
  /** The request URL: absolute, or a path with its query (links are then relative too). */
  url: string | URL;
  /** The page served, from 1. */
  pageNumber: number;
  /** Items per page. */
  pageSize: number;
  /** Whether another page follows (for example: one more row than `pageSize` was found). */
  hasMore?: boolean;
  /** Total number of items, only if the caller has it; enables `last`. */
  totalItems?: number;
}

/** The navigation of a page-number page. */
export interface PageNumberNavigation {
  /** The page served. */
  readonly pageNumber: number;
  /** Items per page. */
  readonly pageSize: number;
  /** True when no page follows this one. */
  readonly endOfData: boolean;
  /** Total number of items, when given. */
  readonly totalItems?: number;
  /** Links to the neighbouring pages. */
  readonly links: PageLinks;
  /** The same links as a `Link` header value (RFC 8288). */
  readonly linkHeader: string;
}

/**
 * The links and end-of-data indicator of a page-number page. Give `hasMore`, `totalItems` or both.
 * @param input - the request URL, the page, and what is known about the rest
 * @throws ConfigurationError `invalid_option` for a bad input (an unknown key is named with the
 * nearest one), URL (`http:/reservations` too) or numbers, or neither `hasMore` nor `totalItems`
 * @example
 * ```ts
 * const nav = pageNumberNavigation({ url: req.url, pageNumber: 2, pageSize: 20, hasMore: true });
 * res.setHeader('link', nav.linkHeader); // </reservations?pageNumber=1&pageSize=20>; rel="first", ...
 * ```
 */
export function pageNumberNavigation(input: PageNumberPageInput): PageNumberNavigation {
  const read = readOptions(input, 'pageNumberNavigation', PAGE_NUMBER_RULES, {
    required: true,
    example: '{ url, pageNumber, pageSize, hasMore }',
  });
  const url = requiredValue(REQUEST_URL, read.url, 'url');
  const pageNumber = requiredValue(COUNT, read.pageNumber, 'pageNumber');
  const pageSize = requiredValue(COUNT, read.pageSize, 'pageSize');
  const { hasMore, totalItems } = read;
  if (hasMore === undefined && totalItems === undefined) {
    throw conflictingKeys(
      'pageNumberNavigation options',
      'hasMore (whether another page follows), totalItems or both',
      [],
    );
  }
  const lastPage =
    totalItems === undefined ? undefined : Math.max(1, Math.ceil(totalItems / pageSize));
  const endOfData = hasMore === undefined ? pageNumber >= (lastPage as number) : !hasMore;
  const link = linkBuilder(url);
  const at = (page: number) => link({ pageNumber: String(page), pageSize: String(pageSize) });
  const links: { -readonly [K in keyof PageLinks]: PageLinks[K] } = { first: at(1) };
  if (pageNumber > 1)
    links.prev = at(lastPage === undefined ? pageNumber - 1 : Math.min(pageNumber - 1, lastPage));
  if (!endOfData) links.next = at(pageNumber + 1);
  if (lastPage !== undefined) links.last = at(lastPage);
  return {
    pageNumber,
    pageSize,
    endOfData,
    ...(totalItems === undefined ? {} : { totalItems }),
    links,
    linkHeader: formatLinkHeader(links),
  };
}

/** What the server knows about a page of a cursor list. */
export interface CursorPageInput {
  /** The request URL: absolute, or a path with its query (links are then relative too). */
  url: string | URL;
  /** Items per page. */
  limit: number;
  /** The cursor of the next page; absent at the end of the data. */
  nextCursor?: string;
  /** The cursor of the previous page, if the endpoint pages backwards. */
  prevCursor?: string;
  /** Total number of items, only if the caller has it. */
  totalItems?: number;
}

/** The navigation of a cursor page. */
export interface CursorNavigation {
  /** Items per page. */
  readonly limit: number;
  /** The cursor of the next page; absent at the end of the data. */
  readonly nextCursor?: string;
  /** True when no page follows this one. */
  readonly endOfData: boolean;
  /** Total number of items, when given. */
  readonly totalItems?: number;
  /** Links to the neighbouring pages (no `last`: a cursor list cannot jump to its end). */
  readonly links: PageLinks;
  /** The same links as a `Link` header value (RFC 8288). */
  readonly linkHeader: string;
}

/**
 * The links and end-of-data indicator of a cursor page.
 * @param input - the request URL, the limit and the neighbouring cursors
 * @throws ConfigurationError `invalid_option` for a bad input (an unknown key is named with the
 * nearest one), URL or numbers, or a cursor that is not a non-empty string (leave `nextCursor` out
 * at the end, not `null` or `""`)
 * @example
 * ```ts
 * const nav = cursorNavigation({ url: req.url, limit: 50, nextCursor: codec.encode({ after: last.id }) });
 * res.json({ items, ...nav }); // nav.endOfData === false, nav.links.next has the cursor
 * ```
 */
export function cursorNavigation(input: CursorPageInput): CursorNavigation {
  const read = readOptions(input, 'cursorNavigation', CURSOR_RULES, {
    required: true,
    example: '{ url, limit, nextCursor }',
  });
  const url = requiredValue(REQUEST_URL, read.url, 'url');
  const limit = requiredValue(COUNT, read.limit, 'limit');
  const { nextCursor, prevCursor, totalItems } = read;
  const link = linkBuilder(url);
  const at = (cursor: string | undefined) => link({ cursor, limit: String(limit) });
  const links: { -readonly [K in keyof PageLinks]: PageLinks[K] } = { first: at(undefined) };
  if (prevCursor !== undefined) links.prev = at(prevCursor);
  if (nextCursor !== undefined) links.next = at(nextCursor);
  return {
    limit,
    ...(nextCursor === undefined ? {} : { nextCursor }),
    endOfData: nextCursor === undefined,
    ...(totalItems === undefined ? {} : { totalItems }),
    links,
    linkHeader: formatLinkHeader(links),
  };
}

/**
 * Format links as a `Link` header value (RFC 8288): `<url>; rel="first", <url>; rel="next"`.
 * @param links - relation names to URLs; absent ones are left out
 * @throws ConfigurationError `invalid_option` for a URL with a space, quote, `<`, `>`, control or
 * non-ASCII character (percent-encode it), or a relation name with a quote or backslash
 */
export function formatLinkHeader(links: Readonly<Record<string, string | undefined>>): string {
  checkValue(LINKS, links, 'formatLinkHeader links');
  let entries: [string, unknown][];
  try {
    entries = Object.entries(links);
  } catch (cause) {
    throw unreadable('formatLinkHeader links', LINKS.expected, links, cause);
  }
  return entries
    .filter((entry) => entry[1] !== undefined)
    .map(([rel, url]) => {
      // A `>`, quote, space or line break would end the link or the header early and let the
      // rest of the value be read as other links, parameters or header lines.
      const target = checkValue(LINK_URL, url, `formatLinkHeader links[${JSON.stringify(rel)}]`);
      checkValue(RELATION, rel, 'formatLinkHeader relation');
      return `<${target}>; rel="${rel}"`;
    })
    .join(', ');
}

// Visible ASCII but `<`, `>` and `"`: what a serialised URL (new URL().href) is made of.
const LINK_TARGET = /^[!#-;=?-~]*$/;
// Visible ASCII but `"` and `\`: fits in the quoted rel parameter as it is.
const RELATION_TYPE = /^[!#-[\]-~]+$/;

const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:/;
// Without `//`, `new URL` reads `http:/x` as relative or takes `x` for the host: refused.
const SCHEME_WITH_HOST = /^(?:https?|wss?|ftp):/i;
const SCHEME_AND_SLASHES = /^[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]{2}/;
// Never appears in a link: only a relative URL's path and query are kept.
const PLACEHOLDER_ORIGIN = 'http://relative.invalid';
// biome-ignore lint/suspicious/noControlCharactersInRegex: the controls the URL parser trims.
const EDGE_CONTROLS = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g;

// Other parameters kept in place; relative in, relative out.
function linkBuilder(url: string | URL): (params: Record<string, string | undefined>) => string {
  checkValue(REQUEST_URL, url, 'url');
  // As the URL parser sees it: `ws\t+:` is the absolute URL `ws+:`.
  const parsed =
    typeof url === 'string' ? url.replace(/[\t\n\r]/g, '').replace(EDGE_CONTROLS, '') : '';
  const relative = typeof url === 'string' && !SCHEME.test(parsed);
  if (
    typeof url === 'string' &&
    SCHEME_WITH_HOST.test(parsed) &&
    !SCHEME_AND_SLASHES.test(parsed)
  ) {
    throw invalidValue(SLASHED_URL, url, 'url');
  }
  let base: URL;
  try {
    base = relative ? new URL(url, PLACEHOLDER_ORIGIN) : new URL(url);
  } catch (cause) {
    throw refused(
      'url',
      'an absolute URL or a path such as /reservations?status=open',
      String(url),
      'invalid_option',
      cause,
    );
  }
  return (params) => {
    const target = new URL(base);
    target.hash = '';
    for (const [name, value] of Object.entries(params)) {
      if (value === undefined) target.searchParams.delete(name);
      else target.searchParams.set(name, value);
    }
    if (!relative) return target.href;
    // `//host/...` would link to another host: `/.` keeps it a path, as URL serialisers do.
    const path = target.pathname.startsWith('//') ? `/.${target.pathname}` : target.pathname;
    return `${path}${target.search}`;
  };
}

function anObject(example: string): Rule<object> {
  return {
    expected: `an object such as ${example}`,
    read: (value) =>
      typeof value === 'object' && value !== null && !isArray(value) ? value : INVALID,
  };
}

const LINKS = anObject("{ first: '/a?page=1', next: '/a?page=2' }");
const COUNT = wholeNumber(1);
const TOTAL = wholeNumber(0);
const CURSOR = worded(
  aString(Number.MAX_SAFE_INTEGER),
  'a non-empty string, or absent when there is no such page (not null or "")',
);
const REQUEST_URL: Rule<string | URL> = {
  expected: 'a string or a URL (the request URL, such as req.url)',
  read: (value) => (typeof value === 'string' || isInstance(value, URL) ? value : INVALID),
};
const LINK_URL: Rule<string> = {
  expected:
    'a URL in ASCII without spaces, quotes or < > (percent-encode them, as new URL(...).href does)',
  read: (value) => (typeof value === 'string' && LINK_TARGET.test(value) ? value : INVALID),
};
const RELATION: Rule<string> = {
  expected: 'a name such as "next" (visible ASCII, no quotes or backslashes)',
  read: (value) => (typeof value === 'string' && RELATION_TYPE.test(value) ? value : INVALID),
};
const PAGE_NUMBER_RULES = {
  url: REQUEST_URL,
  pageNumber: COUNT,
  pageSize: COUNT,
  hasMore: aBoolean,
  totalItems: TOTAL,
};
const CURSOR_RULES = {
  url: REQUEST_URL,
  limit: COUNT,
  nextCursor: CURSOR,
  prevCursor: CURSOR,
  totalItems: TOTAL,
};
const SLASHED_URL = worded(
  REQUEST_URL,
  'an absolute URL with // after the scheme (https://api.example.com/reservations) or a path (/reservations?status=open)',
);
