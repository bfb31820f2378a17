/** Validation of the create-subscription request body; nothing throws on bad input. @module */
import { INVALID, type Rules, readOptions, wholeNumber, worded } from '../../internal/options.js';
import { readSafely } from '../../internal/read-once.js';
import type { EventCatalog } from '../events/event-catalog.js';
import type { EndpointUrlOptions } from './endpoint-url.js';
import { ENDPOINT_URL_OPTION, endpointUrlPolicy } from './endpoint-url.js';
import { validateBody } from './subscription-body.js';
import type { SubscriptionRequestResult } from './subscription-request-result.js';

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
  // Its keys read as endpointUrlPolicy reads them, so that a misspelt one is refused here too.
  endpointUrl: ENDPOINT_URL_OPTION,
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
