/**
 * The optional fields of a subscription beyond its filters: `description`, `rateLimit`, `headers`
 * (sent with every delivery), `metadata` (never sent) and `signatureType`, read from a create or
 * PATCH body with every issue reported at its JSON pointer; nothing throws on bad input.
 * @module
 */
import { isArray } from '../../internal/describe.js';
import { UNREADABLE } from '../../internal/read-once.js';
import {
  issue,
  kindOf,
  loneSurrogateIssue,
  ownField,
  ownKeys,
  pointer,
  unreadableIssue,
} from './body-reading.js';
import {
  type SignatureType,
  type SubscriptionChanges,
  type SubscriptionRequest,
  signatureTypes,
} from './subscription.js';
import type { SubscriptionRequestIssue } from './subscription-request-result.js';

/** The bounds of the optional fields; the API's documented limits. */
export const subscriptionFieldLimits = Object.freeze({
  /** The longest description, in Unicode code points. */
  maxDescriptionLength: 256,
  /** The lowest rate limit, in deliveries per second. */
  minRateLimit: 1,
  /** The highest rate limit, in deliveries per second. */
  maxRateLimit: 10_000,
  /** The most delivery headers. */
  maxHeaders: 20,
  /** The most bytes of the headers' names and values together. */
  maxHeaderBytes: 4096,
  /** The most bytes (UTF-8) of the metadata's keys and values together. */
  maxMetadataBytes: 4096,
});

/**
 * Header names a subscription may not set, in lower case: what the service sets on every delivery
 * (`content-type`, the `webhook-*` signature headers), what describes the connection or the
 * message framing (RFC 9110 section 7.6.1 and 8.6, `host`), which the HTTP client owns, and
 * `expect`, which would hold the body back.
 */
const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'content-type',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'proxy-connection',
  'te',
  'upgrade',
  'expect',
]);

/** Whether a subscription may not set this header (any case). @internal */
export function isForbiddenHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return FORBIDDEN_HEADERS.has(lower) || lower.startsWith('webhook-');
}

// RFC 9110 section 5.6.2: token = 1*tchar.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

type Nullable = 'description' | 'rateLimit' | 'headers' | 'metadata';

/** The optional fields of a create body, those present and valid; issues pushed. @internal */
export function readNewFields(
  fields: Record<string, unknown>,
  keys: readonly string[],
  issues: SubscriptionRequestIssue[],
): Pick<SubscriptionRequest, Nullable | 'signatureType'> {
  return readAll(fields, keys, false, issues) as Pick<
    SubscriptionRequest,
    Nullable | 'signatureType'
  >;
}

/**
 * The optional fields of a PATCH body, those present and valid, `null` meaning removal (except
 * for `signatureType`, which always has one); issues pushed. @internal
 */
export function readNewChanges(
  fields: Record<string, unknown>,
  keys: readonly string[],
  issues: SubscriptionRequestIssue[],
): Pick<SubscriptionChanges, Nullable | 'signatureType'> {
  return readAll(fields, keys, true, issues) as Pick<
    SubscriptionChanges,
    Nullable | 'signatureType'
  >;
}

function readAll(
  fields: Record<string, unknown>,
  keys: readonly string[],
  nullable: boolean,
  issues: SubscriptionRequestIssue[],
): Record<string, unknown> {
  const read: Record<string, unknown> = {};
  const take = (name: Nullable, reader: (value: unknown) => unknown): void => {
    if (!keys.includes(name)) return;
    const value = ownField(fields, name);
    if (value === null && nullable) {
      read[name] = null;
      return;
    }
    const checked = reader(value);
    if (checked !== undefined) read[name] = checked;
  };
  take('description', (value) => readDescription(value, issues));
  take('rateLimit', (value) => readRateLimit(value, nullable, issues));
  take('headers', (value) => readHeaders(value, nullable, issues));
  take('metadata', (value) => readMetadata(value, nullable, issues));
  if (keys.includes('signatureType')) {
    const type = readSignatureType(ownField(fields, 'signatureType'), issues);
    if (type !== undefined) read.signatureType = type;
  }
  return read;
}

const orNull = (nullable: boolean, what: string): string =>
  nullable ? `${what}, or null to remove it` : what;

function readDescription(value: unknown, issues: SubscriptionRequestIssue[]): string | undefined {
  const path = '/description';
  const expected = 'description must be a string';
  if (value === UNREADABLE) return fail(issues, unreadableIssue(path, expected));
  if (typeof value !== 'string') {
    return fail(issues, issue('wrong_type', path, `${expected}; got ${kindOf(value)}.`));
  }
  const bad = textIssue(value, path, 'description');
  if (bad !== undefined) return fail(issues, bad);
  const max = subscriptionFieldLimits.maxDescriptionLength;
  const length = codePoints(value, max);
  if (length > max) {
    return fail(
      issues,
      issue(
        'description_too_long',
        path,
        `description has more than ${max} characters; shorten it to ${max} at most.`,
      ),
    );
  }
  return value;
}

function readRateLimit(
  value: unknown,
  nullable: boolean,
  issues: SubscriptionRequestIssue[],
): number | undefined {
  const path = '/rateLimit';
  const { minRateLimit: min, maxRateLimit: max } = subscriptionFieldLimits;
  const expected = orNull(
    nullable,
    `rateLimit must be a whole number of deliveries per second from ${min} to ${max}`,
  );
  if (value === UNREADABLE) return fail(issues, unreadableIssue(path, expected));
  if (typeof value !== 'number') {
    return fail(issues, issue('wrong_type', path, `${expected}; got ${kindOf(value)}.`));
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    const shown = Number.isFinite(value) ? String(value) : 'a number out of range';
    return fail(issues, issue('invalid_rate_limit', path, `${expected}; got ${shown}.`));
  }
  return value;
}

function readSignatureType(
  value: unknown,
  issues: SubscriptionRequestIssue[],
): SignatureType | undefined {
  const path = '/signatureType';
  const expected = `signatureType must be ${signatureTypes.map((t) => `"${t}"`).join(' or ')}`;
  if (value === UNREADABLE) return fail(issues, unreadableIssue(path, expected));
  if (typeof value !== 'string') {
    return fail(issues, issue('wrong_type', path, `${expected}; got ${kindOf(value)}.`));
  }
  if (!signatureTypes.includes(value as SignatureType)) {
    const shown = JSON.stringify(value.slice(0, 40));
    return fail(issues, issue('invalid_signature_type', path, `${expected}; got ${shown}.`));
  }
  return value as SignatureType;
}

/** The own entries of an object field read once, or undefined with the issue pushed. */
function entriesOf(
  value: unknown,
  path: string,
  expected: string,
  issues: SubscriptionRequestIssue[],
): { readonly holder: object; readonly keys: string[] } | undefined {
  if (value === UNREADABLE) return fail(issues, unreadableIssue(path, expected));
  if (typeof value !== 'object' || value === null || isArray(value)) {
    return fail(issues, issue('wrong_type', path, `${expected}; got ${kindOf(value)}.`));
  }
  const keys = ownKeys(value);
  if (keys === undefined) return fail(issues, unreadableIssue(path, expected));
  return { holder: value, keys };
}

function readHeaders(
  value: unknown,
  nullable: boolean,
  issues: SubscriptionRequestIssue[],
): Readonly<Record<string, string>> | undefined {
  const { maxHeaders, maxHeaderBytes } = subscriptionFieldLimits;
  const expected = orNull(
    nullable,
    'headers must be an object of HTTP header names and string values, such as { "X-Team": "billing" }',
  );
  const read = entriesOf(value, '/headers', expected, issues);
  if (read === undefined) return undefined;
  const { holder, keys } = read;
  if (keys.length > maxHeaders) {
    return fail(
      issues,
      issue(
        'too_many_headers',
        '/headers',
        `headers has ${keys.length} entries; at most ${maxHeaders} are allowed.`,
      ),
    );
  }
  const before = issues.length;
  const entries: [string, string][] = [];
  const seen = new Map<string, string>();
  let bytes = 0;
  for (const name of keys) {
    const path = `/headers${pointer(name)}`;
    const shown = JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);
    if (!TOKEN.test(name)) {
      issues.push(
        issue(
          'invalid_header_name',
          path,
          `The header name ${shown} is not an HTTP token; use letters, digits and !#$%&'*+-.^_\`|~ only.`,
        ),
      );
      continue;
    }
    if (isForbiddenHeader(name)) {
      issues.push(
        issue(
          'forbidden_header',
          path,
          `The header ${shown} is set by the service or the HTTP client on every delivery (host, content-length, content-type, connection, transfer-encoding, keep-alive, proxy-connection, te, upgrade, expect and webhook-*); remove it.`,
        ),
      );
      continue;
    }
    const first = seen.get(name.toLowerCase());
    if (first !== undefined) {
      issues.push(
        issue(
          'duplicate_header',
          path,
          `The header ${shown} is given already as ${JSON.stringify(first)} (names are case-insensitive); give it once.`,
        ),
      );
      continue;
    }
    seen.set(name.toLowerCase(), name);
    const header = ownField(holder, name);
    if (header === UNREADABLE || typeof header !== 'string') {
      const got = header === UNREADABLE ? 'a value that cannot be read' : kindOf(header);
      issues.push(
        issue('wrong_type', path, `The value of header ${shown} must be a string; got ${got}.`),
      );
      continue;
    }
    const bad = headerValueIssue(header);
    if (bad !== undefined) {
      issues.push(issue('invalid_header_value', path, `The value of header ${shown} ${bad}.`));
      continue;
    }
    bytes += name.length + header.length;
    entries.push([name, header]);
  }
  if (issues.length > before) return undefined;
  if (bytes > maxHeaderBytes) {
    return fail(
      issues,
      issue(
        'headers_too_large',
        '/headers',
        `headers hold ${bytes} bytes of names and values; at most ${maxHeaderBytes} are allowed: shorten or remove some.`,
      ),
    );
  }
  return Object.freeze(Object.fromEntries(entries));
}

// RFC 9110 section 5.5: visible ASCII, with spaces and tabs inside only (a leading or trailing one
// would be dropped by the receiver's parser). obs-text is refused: receivers read it differently.
function headerValueIssue(value: string): string | undefined {
  const last = value.length - 1;
  for (let i = 0; i <= last; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x21 && c <= 0x7e) continue;
    if ((c === 0x20 || c === 0x09) && i !== 0 && i !== last) continue;
    if (c === 0x20 || c === 0x09) {
      return `has a space or tab at ${i === 0 ? 'its start' : 'its end'}; remove it`;
    }
    const unit = `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
    return `has ${unit} at position ${i}; use visible ASCII characters, spaces and tabs only (no CR, LF, NUL or other control or non-ASCII characters)`;
  }
  return undefined;
}

function readMetadata(
  value: unknown,
  nullable: boolean,
  issues: SubscriptionRequestIssue[],
): Readonly<Record<string, string>> | undefined {
  const { maxMetadataBytes } = subscriptionFieldLimits;
  const expected = orNull(nullable, 'metadata must be an object of string keys and string values');
  const read = entriesOf(value, '/metadata', expected, issues);
  if (read === undefined) return undefined;
  const { holder, keys } = read;
  const tooLarge = (bytes: string) =>
    issue(
      'metadata_too_large',
      '/metadata',
      `metadata holds ${bytes} bytes of keys and values (UTF-8); at most ${maxMetadataBytes} are allowed: shorten or remove some.`,
    );
  // Every key but the empty one (refused) takes a byte at least: more keys cannot fit.
  if (keys.length > maxMetadataBytes)
    return fail(issues, tooLarge(`more than ${maxMetadataBytes}`));
  const before = issues.length;
  const entries: [string, string][] = [];
  let bytes = 0;
  for (const key of keys) {
    const path = `/metadata${pointer(key)}`;
    if (key === '') {
      issues.push(issue('invalid_metadata_key', path, 'A metadata key cannot be empty; name it.'));
      continue;
    }
    const keyIssue = textIssue(key, path, 'A metadata key');
    if (keyIssue !== undefined) {
      issues.push(keyIssue);
      continue;
    }
    const entry = ownField(holder, key);
    if (entry === UNREADABLE || typeof entry !== 'string') {
      const got = entry === UNREADABLE ? 'a value that cannot be read' : kindOf(entry);
      issues.push(issue('wrong_type', path, `metadata values must be strings; got ${got}.`));
      continue;
    }
    const valueIssue = textIssue(entry, path, 'A metadata value');
    if (valueIssue !== undefined) {
      issues.push(valueIssue);
      continue;
    }
    bytes += utf8Length(key) + utf8Length(entry);
    // Bounded as it is read: a huge body is not measured to its end.
    if (bytes > maxMetadataBytes) return fail(issues, tooLarge(`more than ${maxMetadataBytes}`));
    entries.push([key, entry]);
  }
  if (issues.length > before) return undefined;
  return Object.freeze(Object.fromEntries(entries));
}

// Text that PostgreSQL stores as it is given: well-formed Unicode without NUL (a text column and
// jsonb refuse U+0000), so that every repository returns what was sent.
function textIssue(
  value: string,
  path: string,
  what: string,
): SubscriptionRequestIssue | undefined {
  const unpaired = loneSurrogateIssue(value, path, what);
  if (unpaired !== undefined) return unpaired;
  const nul = value.indexOf('\0');
  if (nul === -1) return undefined;
  return issue(
    'nul_character',
    path,
    `${what} cannot hold NUL (U+0000); it has one at position ${nul}: remove it.`,
  );
}

// Code points, counted up to one past `max`: a huge string is not walked to its end.
function codePoints(value: string, max: number): number {
  if (value.length <= max) return value.length;
  let count = 0;
  for (let i = 0; i < value.length && count <= max; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) i++; // well-formed: a high surrogate has its low one
    count++;
  }
  return count;
}

// Bytes in UTF-8 of a well-formed string.
function utf8Length(value: string): number {
  let bytes = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function fail(issues: SubscriptionRequestIssue[], found: SubscriptionRequestIssue): undefined {
  issues.push(found);
  return undefined;
}
