/** Validation of the create-subscription request body; nothing throws on bad input. @module */
import {
  anything,
  INVALID,
  type Rule,
  type Rules,
  readOptions,
  wholeNumber,
  worded,
} from '../internal/options.js';
import { readSafely } from '../internal/read-once.js';
import type { EndpointUrlErrorCode, EndpointUrlOptions } from './endpoint-url.js';
import { endpointUrlErrorCodes, endpointUrlPolicy } from './endpoint-url.js';
import type { EventCatalog, EventCatalogErrorCode } from './event-catalog.js';
import { eventCatalogErrorCodes } from './event-catalog.js';
import type { EventPatternErrorCode } from './event-kind.js';
import { eventPatternErrorCodes } from './event-kind.js';
import type { SubscriptionRequest } from './subscription.js';
import { validateBody } from './subscription-body.js';

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
  'lone_surrogate',
] as const;

/**
 * The codes a {@link SubscriptionRequestIssue} carries: the body's, the pattern parser's, the
 * catalog's and the endpointUrl policy's. A test pins it: renaming one is a breaking change.
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

const BOUND = worded(wholeNumber(), wholeNumber().expected, 'invalid_limit');

/** The rules of {@link SubscriptionRequestOptions}. @internal */
export const SUBSCRIPTION_RULES = {
  // Read by endpointUrlPolicy, which refuses a bad maxLength or allow-list.
  endpointUrl: anything('endpointUrl options') as Rule<EndpointUrlOptions>,
  catalog: {
    expected:
      "an event catalog made by defineEventCatalog(), such as defineEventCatalog({ folio: ['created'] }) (leave it out to accept any well-formed kind)",
    code: 'invalid_event_catalog',
    read: (value: unknown) =>
      typeof value === 'object' &&
      value !== null &&
      typeof readSafely(value, 'check') === 'function'
        ? (value as EventCatalog)
        : INVALID,
  },
  maxEvents: BOUND,
  maxPropertyIds: BOUND,
  maxPropertyIdLength: BOUND,
} satisfies Rules;

/**
 * Validate a create-subscription request body (already parsed from JSON).
 * Duplicates are refused, not normalised away; a list over its bound is reported once and its
 * elements are not checked.
 * @param body - the parsed JSON body; anything
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
  // Options checked before the body: a bad one throws on the first request, whatever it holds.
  const read = readOptions(options, 'validateSubscriptionRequest', SUBSCRIPTION_RULES, {
    defaults: subscriptionRequestDefaults,
    example: '{ maxEvents: 100 }',
  });
  return validateBody(body, { ...read, checkUrl: endpointUrlPolicy(read.endpointUrl) });
}
