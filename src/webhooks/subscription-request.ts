/**
 * Validation of the create-subscription request body (`endpointUrl`, `events`, optional
 * `propertyIds`). Every error is reported at once, each with its JSON pointer (`/events/2`), a
 * stable code and a message; nothing throws on bad input.
 * @module
 */
import { ConfigurationError } from '../errors/index.js';
import { describe as describeValue, isArray } from '../internal/describe.js';
import { readFields, readSafely, UNREADABLE } from '../internal/read-once.js';
import type {
  EndpointUrlErrorCode,
  EndpointUrlOptions,
  EndpointUrlResult,
} from './endpoint-url.js';
import { endpointUrlErrorCodes, endpointUrlPolicy } from './endpoint-url.js';
import type { EventCatalog, EventCatalogErrorCode } from './event-catalog.js';
import { eventCatalogErrorCodes } from './event-catalog.js';
import type { EventPatternErrorCode } from './event-kind.js';
import { eventPatternErrorCodes, parseEventPattern } from './event-kind.js';
import type { SubscriptionRequest } from './subscription.js';

/** Codes about the shape of the body, before any field's own rules. */
export const subscriptionBodyErrorCodes = [
  'body_not_object',
  'unknown_field',
  'missing_field',
  'wrong_type',
  'empty_array',
  'too_many_elements',
  'duplicate_element',
  'invalid_property_id',
  'property_id_too_long',
] as const;

/**
 * The codes a {@link SubscriptionRequestIssue} carries: the body's own, then the pattern parser's,
 * the catalog's and the endpointUrl policy's, each list whole (a non-string element of `events` is
 * reported as `wrong_type`, so `pattern_not_string` and `pattern_wildcard_kind` never appear).
 * A test pins this list: removing or renaming one is a breaking change.
 */
export const subscriptionRequestErrorCodes = [
  ...subscriptionBodyErrorCodes,
  ...eventPatternErrorCodes,
  ...eventCatalogErrorCodes,
  ...endpointUrlErrorCodes,
] as const;

/** A code of {@link subscriptionRequestErrorCodes}. */
export type SubscriptionRequestErrorCode =
  | (typeof subscriptionBodyErrorCodes)[number]
  | EventPatternErrorCode
  | EventCatalogErrorCode
  | EndpointUrlErrorCode;

/** One thing wrong with a request body. */
export interface SubscriptionRequestIssue {
  /** Stable code. */
  readonly code: SubscriptionRequestErrorCode;
  /** JSON pointer (RFC 6901) to the offending value: `/events/2`, or `''` for the whole body. */
  readonly path: string;
  /** What is wrong and what to change. */
  readonly message: string;
  /** The nearest known event pattern, when a catalog refused one. */
  readonly suggestion?: string;
}

/** The validated request, or every issue found. */
export type SubscriptionRequestResult =
  | {
      /** Valid. */
      readonly ok: true;
      /** The request, with the URL normalised. */
      readonly value: SubscriptionRequest;
    }
  | {
      /** Refused. */
      readonly ok: false;
      /** Every issue found, in body order. */
      readonly issues: readonly SubscriptionRequestIssue[];
    };

/** Bounds and policies of the validation. */
export interface SubscriptionRequestOptions {
  /** The endpointUrl policy. */
  endpointUrl?: EndpointUrlOptions;
  /** Refuse event patterns the catalog does not know. @defaultValue no catalog: any well-formed pattern */
  catalog?: EventCatalog;
  /** The most elements of `events`. @defaultValue 100 */
  maxEvents?: number;
  /** The most elements of `propertyIds`. @defaultValue 1000 */
  maxPropertyIds?: number;
  /** The longest property id, in characters. @defaultValue 128 */
  maxPropertyIdLength?: number;
}

/** The defaults of {@link SubscriptionRequestOptions}. */
export const subscriptionRequestDefaults = Object.freeze({
  /** The most elements of `events`. */
  maxEvents: 100,
  /** The most elements of `propertyIds`. */
  maxPropertyIds: 1000,
  /** The longest property id, in characters. */
  maxPropertyIdLength: 128,
}) satisfies SubscriptionRequestOptions;

const FIELDS = ['endpointUrl', 'events', 'propertyIds'];

const OPTION_KEYS = [
  'endpointUrl',
  'catalog',
  'maxEvents',
  'maxPropertyIds',
  'maxPropertyIdLength',
] as const;

/**
 * Validate a create-subscription request body (already parsed from JSON).
 * Duplicates are refused, not normalised away; a list over its bound is reported once and its
 * elements are not checked.
 * @param body - the parsed JSON body; anything
 * @param options - bounds, the endpointUrl policy and an optional catalog
 * @returns the validated request, or every issue with its JSON pointer
 * @throws ConfigurationError, whatever the body, `invalid_option` when `options` or its
 * `endpointUrl` is not an object or cannot be read (a getter that throws), `invalid_limit` when a bound is not a positive integer,
 * `invalid_event_catalog` when `catalog` was not made by `defineEventCatalog()`, and
 * `invalid_address_allow_list` for a bad `endpointUrl.allow`
 * @example
 * ```ts
 * const result = validateSubscriptionRequest({ endpointUrl: 'https://x.example/in', events: [] });
 * // { ok: false, issues: [{ code: 'empty_array', path: '/events', message: '...' }] }
 * ```
 */
export function validateSubscriptionRequest(
  body: unknown,
  options: SubscriptionRequestOptions = {},
): SubscriptionRequestResult {
  // Every option is checked before the body is read: a bad one throws on the first request,
  // whatever that request holds.
  if (typeof options !== 'object' || options === null || isArray(options)) {
    throw new ConfigurationError(
      'invalid_option',
      'The options of validateSubscriptionRequest must be an object { endpointUrl?, catalog?, maxEvents?, maxPropertyIds?, maxPropertyIdLength? }, or left out.',
    );
  }
  // Read once: an option whose read throws is a ConfigurationError, never the getter's own error.
  const read = readFields(
    options,
    OPTION_KEYS,
    'invalid_option',
    'the validateSubscriptionRequest options',
  );
  const limits = {
    ...subscriptionRequestDefaults,
    ...(definedOnly(read) as SubscriptionRequestOptions),
  };
  for (const name of ['maxEvents', 'maxPropertyIds', 'maxPropertyIdLength'] as const) {
    checkBound(name, limits[name]);
  }
  const catalog = read.catalog as SubscriptionRequestOptions['catalog'];
  if (
    catalog !== undefined &&
    (typeof catalog !== 'object' ||
      catalog === null ||
      typeof readSafely(catalog, 'check') !== 'function')
  ) {
    throw new ConfigurationError(
      'invalid_event_catalog',
      "catalog must be an event catalog made by defineEventCatalog(), such as defineEventCatalog({ folio: ['created'] }); leave it out to accept any well-formed kind.",
    );
  }
  // The policy reads its options once and refuses a bad maxLength or allow-list.
  const checkUrl = endpointUrlPolicy(read.endpointUrl as EndpointUrlOptions | undefined);
  const issues: SubscriptionRequestIssue[] = [];
  if (typeof body !== 'object' || body === null || isArray(body)) {
    issues.push({
      code: 'body_not_object',
      path: '',
      message: `The body must be a JSON object with endpointUrl, events and optional propertyIds; got ${describe(body)}.`,
    });
    return { ok: false, issues };
  }
  const fields = body as Record<string, unknown>;
  const keys = ownKeys(fields);
  if (keys === undefined) {
    issues.push({
      code: 'body_not_object',
      path: '',
      message: `The body must be a JSON object with endpointUrl, events and optional propertyIds; got ${UNREADABLE_VALUE}.`,
    });
    return { ok: false, issues };
  }
  for (const key of keys) {
    if (!FIELDS.includes(key)) {
      issues.push({
        code: 'unknown_field',
        path: pointer(key),
        message: `Unknown field "${key}"; the body has only ${FIELDS.join(', ')} (check the spelling).`,
      });
    }
  }
  const endpointUrl = validateEndpointUrl(fields, checkUrl, issues);
  const events = validateList(fields, 'events', limits.maxEvents, true, issues, (value, path) =>
    eventIssue(value, path, catalog),
  );
  const propertyIds = validateList(
    fields,
    'propertyIds',
    limits.maxPropertyIds,
    false,
    issues,
    (value, path) => propertyIdIssue(value, path, limits.maxPropertyIdLength),
  );
  if (issues.length > 0 || endpointUrl === undefined || events === undefined)
    return { ok: false, issues };
  return {
    ok: true,
    value:
      propertyIds === undefined ? { endpointUrl, events } : { endpointUrl, events, propertyIds },
  };
}

function validateEndpointUrl(
  fields: Record<string, unknown>,
  checkUrl: (input: unknown) => EndpointUrlResult,
  issues: SubscriptionRequestIssue[],
): string | undefined {
  const value = ownField(fields, 'endpointUrl');
  if (value === UNREADABLE) {
    issues.push(unreadableIssue('/endpointUrl', 'endpointUrl must be a string (a URL)'));
    return undefined;
  }
  if (value === undefined) {
    issues.push({
      code: 'missing_field',
      path: '/endpointUrl',
      message: 'endpointUrl is required: the https URL to which webhook payloads are sent.',
    });
    return undefined;
  }
  if (typeof value !== 'string') {
    issues.push({
      code: 'wrong_type',
      path: '/endpointUrl',
      message: `endpointUrl must be a string (a URL); got ${describe(value)}.`,
    });
    return undefined;
  }
  const checked = checkUrl(value);
  if (checked.ok) return checked.value;
  for (const error of checked.errors) issues.push(issue(error.code, '/endpointUrl', error.message));
  return undefined;
}

// Validates an array of strings: presence, type, emptiness, bound, each element, duplicates.
function validateList(
  fields: Record<string, unknown>,
  name: 'events' | 'propertyIds',
  max: number,
  required: boolean,
  issues: SubscriptionRequestIssue[],
  elementIssue: (value: string, path: string) => SubscriptionRequestIssue | undefined,
): readonly string[] | undefined {
  const value = ownField(fields, name);
  const path = `/${name}`;
  const expected = `${name} must be an array of strings`;
  if (value === UNREADABLE) {
    issues.push(unreadableIssue(path, expected));
    return undefined;
  }
  if (value === undefined) {
    if (required) {
      issues.push({
        code: 'missing_field',
        path,
        message: `${name} is required: a list of at least one event kind such as "folio/created" or "reservation/*".`,
      });
    }
    return undefined;
  }
  if (!isArray(value)) {
    issues.push({ code: 'wrong_type', path, message: `${expected}; got ${describe(value)}.` });
    return undefined;
  }
  const length = readSafely(value, 'length');
  if (typeof length !== 'number') {
    issues.push(unreadableIssue(path, expected));
    return undefined;
  }
  if (length === 0) {
    const advice = required
      ? 'list at least one event kind'
      : 'list at least one property id, or omit propertyIds to cover every property';
    issues.push({ code: 'empty_array', path, message: `${name} is empty; ${advice}.` });
    return undefined;
  }
  if (length > max) {
    issues.push({
      code: 'too_many_elements',
      path,
      message: `${name} has ${length} elements; at most ${max} are allowed.`,
    });
    return undefined;
  }
  const before = issues.length;
  const firstIndex = new Map<string, number>();
  // The elements as read once: what is returned is exactly what was checked, even from an array
  // whose elements are getters that answer differently on a second read.
  const checked: string[] = [];
  for (let i = 0; i < length; i++) {
    const element = readSafely(value, i);
    const elementPath = `${path}/${i}`;
    if (element === UNREADABLE) {
      issues.push(unreadableIssue(elementPath, `${name} elements must be strings`));
      continue;
    }
    if (typeof element !== 'string') {
      issues.push({
        code: 'wrong_type',
        path: elementPath,
        message: `${name} elements must be strings; got ${describe(element)}.`,
      });
      continue;
    }
    checked.push(element);
    const issue = elementIssue(element, elementPath);
    if (issue !== undefined) {
      issues.push(issue);
      continue;
    }
    const first = firstIndex.get(element);
    if (first !== undefined) {
      issues.push({
        code: 'duplicate_element',
        path: elementPath,
        message: `"${element}" is already listed at ${path}/${first}; list each once.`,
      });
      continue;
    }
    firstIndex.set(element, i);
  }
  return issues.length === before ? Object.freeze(checked) : undefined;
}

function eventIssue(
  value: string,
  path: string,
  catalog: EventCatalog | undefined,
): SubscriptionRequestIssue | undefined {
  const parsed = parseEventPattern(value);
  if (!parsed.ok) return issue(parsed.error.code, path, parsed.error.message);
  const unknown = catalog?.check(parsed.value);
  if (unknown === undefined) return undefined;
  return { ...issue(unknown.code, path, unknown.message), suggestion: unknown.suggestion };
}

function propertyIdIssue(
  value: string,
  path: string,
  maxLength: number,
): SubscriptionRequestIssue | undefined {
  if (value.length === 0) {
    return { code: 'invalid_property_id', path, message: 'A property id cannot be empty.' };
  }
  if (value.length > maxLength) {
    return {
      code: 'property_id_too_long',
      path,
      message: `The property id has ${value.length} characters; at most ${maxLength} are allowed.`,
    };
  }
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c <= 0x20 || (c >= 0x7f && c <= 0x9f)) {
      return {
        code: 'invalid_property_id',
        path,
        message: `The property id contains a space or control character at position ${i}; remove it.`,
      };
    }
  }
  return undefined;
}

// One shape, one member order, for every issue.
function issue(
  code: SubscriptionRequestErrorCode,
  path: string,
  message: string,
): SubscriptionRequestIssue {
  return { code, path, message };
}

// RFC 6901: "~" is written "~0" and "/" is written "~1".
function pointer(key: string): string {
  return `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

// A body parsed from JSON has no getters and no Proxies; one that does is answered, not thrown.
const UNREADABLE_VALUE =
  'a value that cannot be read (a getter or Proxy that throws); send the parsed JSON';

function unreadableIssue(path: string, expected: string): SubscriptionRequestIssue {
  return { code: 'wrong_type', path, message: `${expected}; got ${UNREADABLE_VALUE}.` };
}

// The body's own keys, or undefined when they cannot be listed.
function ownKeys(fields: object): string[] | undefined {
  try {
    return Object.keys(fields);
  } catch {
    return undefined;
  }
}

// An own field, read once: undefined when absent (or inherited), UNREADABLE when a read throws.
function ownField(fields: object, name: string): unknown {
  let own: boolean;
  try {
    own = Object.hasOwn(fields, name);
  } catch {
    return UNREADABLE;
  }
  return own ? readSafely(fields, name) : undefined;
}

function checkBound(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(
      'invalid_limit',
      `${name} must be an integer of at least 1, got ${describeValue(value)}.`,
    );
  }
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(options).filter(([, v]) => v !== undefined),
  ) as Partial<T>;
}
