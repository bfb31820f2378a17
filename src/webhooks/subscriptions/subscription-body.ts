/** The body of a create-subscription request read field by field, every issue reported. @module */
import { isArray } from '../../internal/describe.js';
import { LONE_SURROGATE } from '../../internal/lone-surrogate.js';
import { readSafely, UNREADABLE } from '../../internal/read-once.js';
import type { EventCatalog } from '../events/event-catalog.js';
import { parseEventPattern } from '../events/event-kind.js';
import type { EndpointUrlResult } from './endpoint-url.js';
import type {
  SubscriptionRequestErrorCode,
  SubscriptionRequestIssue,
  SubscriptionRequestResult,
} from './subscription-request-result.js';

/** What the body is checked against: the options, read once. @internal */
export interface BodySettings {
  readonly checkUrl: (input: unknown) => EndpointUrlResult;
  readonly catalog: EventCatalog | undefined;
  readonly maxEvents: number;
  readonly maxPropertyIds: number;
  readonly maxPropertyIdLength: number;
}

const FIELDS = ['endpointUrl', 'events', 'propertyIds'];

/** Validate a parsed body under settings already checked. @internal */
export function validateBody(body: unknown, settings: BodySettings): SubscriptionRequestResult {
  const { checkUrl, catalog } = settings;
  const issues: SubscriptionRequestIssue[] = [];
  if (typeof body !== 'object' || body === null || isArray(body)) {
    issues.push({
      code: 'body_not_object',
      path: '',
      message: `The body must be a JSON object with endpointUrl, events and optional propertyIds; got ${kindOf(body)}.`,
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
  for (const key of keys) if (!FIELDS.includes(key)) issues.push(unknownField(key));
  const endpointUrl = validateEndpointUrl(fields, checkUrl, issues);
  const events = validateList(fields, 'events', settings.maxEvents, true, issues, (value, path) =>
    eventIssue(value, path, catalog),
  );
  const propertyIds = validateList(
    fields,
    'propertyIds',
    settings.maxPropertyIds,
    false,
    issues,
    (value, path) => propertyIdIssue(value, path, settings.maxPropertyIdLength),
  );
  if (issues.length > 0 || endpointUrl === undefined || events === undefined)
    return { ok: false, issues };
  return {
    ok: true,
    value:
      propertyIds === undefined ? { endpointUrl, events } : { endpointUrl, events, propertyIds },
  };
}

/** `endpointUrl` of a body, checked as on create; `undefined` when it has an issue. @internal */
export function readEndpointUrlField(
  fields: Record<string, unknown>,
  settings: BodySettings,
  issues: SubscriptionRequestIssue[],
): string | undefined {
  return validateEndpointUrl(fields, settings.checkUrl, issues);
}

/** `events` of a body, checked as on create (required). @internal */
export function readEventsField(
  fields: Record<string, unknown>,
  settings: BodySettings,
  issues: SubscriptionRequestIssue[],
): readonly string[] | undefined {
  return validateList(fields, 'events', settings.maxEvents, true, issues, (value, path) =>
    eventIssue(value, path, settings.catalog),
  );
}

/** `propertyIds` of a body, checked as on create (optional). @internal */
export function readPropertyIdsField(
  fields: Record<string, unknown>,
  settings: BodySettings,
  issues: SubscriptionRequestIssue[],
): readonly string[] | undefined {
  return validateList(
    fields,
    'propertyIds',
    settings.maxPropertyIds,
    false,
    issues,
    (value, path) => propertyIdIssue(value, path, settings.maxPropertyIdLength),
  );
}

function unknownField(key: string): SubscriptionRequestIssue {
  return {
    code: 'unknown_field',
    path: pointer(key),
    message: `Unknown field "${key}"; the body has only ${FIELDS.join(', ')} (check the spelling).`,
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
      message: `endpointUrl must be a string (a URL); got ${kindOf(value)}.`,
    });
    return undefined;
  }
  const unpaired = loneSurrogateIssue(value, '/endpointUrl', 'endpointUrl');
  if (unpaired !== undefined) {
    issues.push(unpaired);
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
    issues.push({ code: 'wrong_type', path, message: `${expected}; got ${kindOf(value)}.` });
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
  // Read once: what is returned is what was checked, even from getters that change their answer.
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
        message: `${name} elements must be strings; got ${kindOf(element)}.`,
      });
      continue;
    }
    checked.push(element);
    const issue =
      loneSurrogateIssue(element, elementPath, `${name} elements`) ??
      elementIssue(element, elementPath);
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

// A lone UTF-16 surrogate is refused: UTF-8 cannot carry it, so the backends would disagree
// (memory keeps it, PostgreSQL and PGlite store U+FFFD) and a URL would be rewritten silently.
function loneSurrogateIssue(
  value: string,
  path: string,
  what: string,
): SubscriptionRequestIssue | undefined {
  const found = LONE_SURROGATE.exec(value);
  if (found === null) return undefined;
  const unit = value.charCodeAt(found.index).toString(16).toUpperCase();
  return {
    code: 'lone_surrogate',
    path,
    message: `${what} must be well-formed Unicode; this one has half of a surrogate pair (\\u${unit}) alone at position ${found.index}: send the whole character or remove it.`,
  };
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

/** RFC 6901: "~" is written "~0" and "/" is written "~1". @internal */
export function pointer(key: string): string {
  return `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/** The kind of a value, never the value itself: the message goes back to its sender. @internal */
export function kindOf(value: unknown): string {
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

/** The own keys of a parsed body, or `undefined` when listing them throws. @internal */
export function ownKeys(fields: object): string[] | undefined {
  try {
    return Object.keys(fields);
  } catch {
    return undefined;
  }
}

/** An own field, read once: undefined when absent (or inherited), UNREADABLE when a read throws. @internal */
export function ownField(fields: object, name: string): unknown {
  let own: boolean;
  try {
    own = Object.hasOwn(fields, name);
  } catch {
    return UNREADABLE;
  }
  return own ? readSafely(fields, name) : undefined;
}
