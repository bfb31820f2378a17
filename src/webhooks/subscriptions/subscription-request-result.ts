/**
 * What validating a subscription request answers: the request, or every issue found, each with a
 * stable code. In a file of its own so that `subscription-body.ts`, which finds the issues, need
 * not import `subscription-request.ts`, which calls it.
 * @module
 */

import type { EventCatalogErrorCode } from '../events/event-catalog.js';
import { eventCatalogErrorCodes } from '../events/event-catalog.js';
import type { EventPatternErrorCode } from '../events/event-kind.js';
import { eventPatternErrorCodes } from '../events/event-kind.js';
import type { EndpointUrlErrorCode } from './endpoint-url.js';
import { endpointUrlErrorCodes } from './endpoint-url.js';
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
  'lone_surrogate',
  'nul_character',
  'description_too_long',
  'invalid_rate_limit',
  'too_many_headers',
  'invalid_header_name',
  'forbidden_header',
  'duplicate_header',
  'invalid_header_value',
  'headers_too_large',
  'invalid_metadata_key',
  'metadata_too_large',
  'invalid_signature_type',
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
