/** A request's tracking id: the incoming one when well-formed, else a new one. @module */
import { checkValue, INVALID, invalidValue, type Rule, refused } from '../internal/options.js';

/** The default name of the tracking id header (the specification's neutral name). */
export const DEFAULT_TRACKING_ID_HEADER = 'Service-Tracking-Id';

/** Makes a new tracking id; must return a {@link isWellFormedTrackingId well-formed} one. */
export type TrackingIdSource = () => string;

// Letters, digits and `._:-`, at most 128: safe to echo in a header and in a text body (no CR,
// LF or quote can be smuggled in by a client), and wide enough for UUIDs, ULIDs and trace ids.
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
// Under one of these names the header would replace a field the 429, node or caches rely on, or
// echo a client's Authorization or Cookie back; node:http2 throws on connection-specific ones.
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  // RFC 9110, HTTP semantics
  'accept',
  'accept-charset',
  'accept-encoding',
  'accept-language',
  'accept-ranges',
  'allow',
  'authentication-info',
  'authorization',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-range',
  'content-type',
  'date',
  'etag',
  'expect',
  'from',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'range',
  'referer',
  'retry-after',
  'server',
  'user-agent',
  'vary',
  'via',
  'www-authenticate',
  // RFC 9111, caching
  'age',
  'cache-control',
  'expires',
  'pragma',
  'warning',
  // Connection-specific (RFC 9110 section 7.6.1, RFC 9112, RFC 9113 section 8.2.2)
  'connection',
  'http2-settings',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // Cookies (RFC 6265), the RateLimit fields, and fields browsers act on
  'alt-svc',
  'content-disposition',
  'content-security-policy',
  'cookie',
  'forwarded',
  'link',
  'origin',
  'ratelimit',
  'ratelimit-policy',
  'refresh',
  'set-cookie',
  'strict-transport-security',
  'x-content-type-options',
  'x-frame-options',
]);

// Whole families: CORS (Fetch), the proxy fields (Proxy-Authorization, Proxy-Connection, ...) and
// the Sec- fields that only a browser may set.
const RESERVED_PREFIXES = ['access-control-', 'proxy-', 'sec-'] as const;

/**
 * True for 1 to 128 letters, digits, `.`, `_`, `:` or `-`.
 * @param value - the header value as received
 */
export function isWellFormedTrackingId(value: unknown): value is string {
  return typeof value === 'string' && WELL_FORMED.test(value);
}

/** The default {@link TrackingIdSource}: `crypto.randomUUID()`, in every Fetch-API runtime. */
export const randomTrackingId: TrackingIdSource = () => globalThis.crypto.randomUUID();

/**
 * The tracking id of a request: the incoming one when well-formed, otherwise a new one.
 * @param incoming - the request's tracking id header value, if any
 * @param source - makes a new id
 * @throws ConfigurationError `invalid_tracking_id` when the source returns a malformed id
 */
export function resolveTrackingId(
  incoming: string | null | undefined,
  source: TrackingIdSource = randomTrackingId,
): string {
  if (isWellFormedTrackingId(incoming)) return incoming;
  const made = source();
  if (!isWellFormedTrackingId(made)) throw invalidValue(MADE_ID, made, 'the tracking id source()');
  return made;
}

const MADE_ID: Rule<string> = {
  expected: "a tracking id of 1 to 128 letters, digits, '.', '_', ':' or '-'",
  code: 'invalid_tracking_id',
  read: (value) => (isWellFormedTrackingId(value) ? value : INVALID),
};

/**
 * A configured header name, checked (see {@link headerName}), in lower case.
 * @throws ConfigurationError `invalid_header_name`
 */
export function checkHeaderName(name: unknown, option: string): string {
  return checkValue(headerName, name, option);
}

/** An HTTP field name token, lower case; names with an HTTP meaning refused (docs/http.md). */
export const headerName: Rule<string> = {
  expected: "an HTTP header name (letters, digits and !#$%&'*+.^_`|~-, at most 64 characters)",
  code: 'invalid_header_name',
  read(value, name) {
    if (typeof value !== 'string' || !HEADER_NAME.test(value)) return INVALID;
    const lower = value.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || RESERVED_PREFIXES.some((p) => lower.startsWith(p))) {
      throw refused(
        name,
        'a header name with no meaning of its own in HTTP, such as "X-Request-Id"',
        value,
        'invalid_header_name',
      );
    }
    return lower;
  },
};
