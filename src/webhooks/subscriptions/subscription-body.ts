/** The body of a create-subscription request read field by field, every issue reported. @module */
import { isArray } from '../../internal/describe.js';
import { readSafely, UNREADABLE } from '../../internal/read-once.js';
import type { EventCatalog } from '../events/event-catalog.js';
import { parseEventPattern } from '../events/event-kind.js';
import {
  issue,
  kindOf,
  loneSurrogateIssue,
  ownField,
  ownKeys,
  pointer,
  UNREADABLE_VALUE,
  unreadableIssue,
} from './body-reading.js';
import type { EndpointUrlResult } from './endpoint-url.js';
import { readNewFields } from './subscription-fields.js';
import type {
  SubscriptionRequestIssue,
  SubscriptionRequestResult,
} from './subscription-request-result.js';

// Read by the PATCH validation and the service from here, beside the fields' own readers.
export { kindOf, ownField, ownKeys, pointer } from './body-reading.js';

/** What the body is checked against: the options, read once. @internal */
export interface BodySettings {
  readonly checkUrl: (input: unknown) => EndpointUrlResult;
  readonly catalog: EventCatalog | undefined;
  readonly maxEvents: number;
  readonly maxPropertyIds: number;
  readonly maxPropertyIdLength: number;
}

const FIELDS = [
  'endpointUrl',
  'events',
  'propertyIds',
  'description',
  'rateLimit',
  'headers',
  'metadata',
  'signatureType',
];

/** Validate a parsed body under settings already checked. @internal */
export function validateBody(body: unknown, settings: BodySettings): SubscriptionRequestResult {
  const { checkUrl, catalog } = settings;
  const issues: SubscriptionRequestIssue[] = [];
  if (typeof body !== 'object' || body === null || isArray(body)) {
    issues.push({
      code: 'body_not_object',
      path: '',
      message: `The body must be a JSON object with endpointUrl, events and optional propertyIds, description, rateLimit, headers, metadata and signatureType; got ${kindOf(body)}.`,
    });
    return { ok: false, issues };
  }
  const fields = body as Record<string, unknown>;
  const keys = ownKeys(fields);
  if (keys === undefined) {
    issues.push({
      code: 'body_not_object',
      path: '',
      message: `The body must be a JSON object with endpointUrl, events and optional propertyIds, description, rateLimit, headers, metadata and signatureType; got ${UNREADABLE_VALUE}.`,
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
  const more = readNewFields(fields, keys, issues);
  if (issues.length > 0 || endpointUrl === undefined || events === undefined)
    return { ok: false, issues };
  return {
    ok: true,
    value: {
      endpointUrl,
      events,
      ...(propertyIds === undefined ? {} : { propertyIds }),
      ...more,
    },
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
