/**
 * Validation of a PATCH body: each field checked by the create rules, every issue reported with
 * its JSON pointer; nothing throws on bad input.
 * @module
 */
import { isArray } from '../../internal/describe.js';
import { UNREADABLE } from '../../internal/read-once.js';
import type { SubscriptionChanges, SubscriptionStatus } from './subscription.js';
import {
  type BodySettings,
  kindOf,
  ownField,
  ownKeys,
  pointer,
  readEndpointUrlField,
  readEventsField,
  readPropertyIdsField,
} from './subscription-body.js';
import { readNewChanges } from './subscription-fields.js';
import type {
  SubscriptionRequestErrorCode,
  SubscriptionRequestIssue,
} from './subscription-request-result.js';

/** Codes a change has beside those of the create validation. */
export const subscriptionPatchErrorCodes = ['empty_change', 'invalid_status'] as const;

/** One thing wrong with a PATCH body. */
export interface SubscriptionPatchIssue {
  /** Stable code: one of the create validation's, or of {@link subscriptionPatchErrorCodes}. */
  readonly code: SubscriptionRequestErrorCode | (typeof subscriptionPatchErrorCodes)[number];
  /** JSON pointer (RFC 6901) to the offending value, `''` for the whole body. */
  readonly path: string;
  /** What is wrong and what to change. */
  readonly message: string;
  /** The nearest known event pattern, when a catalog refused one. */
  readonly suggestion?: string;
}

/** The changes asked for, or every issue found. @internal */
export type SubscriptionPatchResult =
  | { readonly ok: true; readonly value: SubscriptionChanges }
  | { readonly ok: false; readonly issues: readonly SubscriptionPatchIssue[] };

const FIELDS = [
  'endpointUrl',
  'events',
  'propertyIds',
  'status',
  'description',
  'rateLimit',
  'headers',
  'metadata',
  'signatureType',
];
const STATUSES: readonly SubscriptionStatus[] = ['enabled', 'disabled'];

/**
 * Validate a parsed PATCH body: an object with at least one of endpointUrl, events, propertyIds
 * (`null`: every property again), status (`enabled` or `disabled`), description, rateLimit,
 * headers, metadata (each `null` to remove it) and signatureType.
 * @internal
 */
export function validateSubscriptionPatch(
  body: unknown,
  settings: BodySettings,
): SubscriptionPatchResult {
  const keys =
    typeof body === 'object' && body !== null && !isArray(body) ? ownKeys(body) : undefined;
  if (keys === undefined) {
    return fail({
      code: 'body_not_object',
      path: '',
      message: `The body must be a JSON object with one or more of ${FIELDS.join(', ')}; got ${kindOf(body)}.`,
    });
  }
  if (keys.length === 0) {
    return fail({
      code: 'empty_change',
      path: '',
      message: `The body changes nothing; send one or more of ${FIELDS.join(', ')}.`,
    });
  }
  const fields = body as Record<string, unknown>;
  const issues: SubscriptionPatchIssue[] = [];
  // The create rules' issues, in field order after the unknown fields.
  const fieldIssues: SubscriptionRequestIssue[] = [];
  for (const key of keys) {
    if (!FIELDS.includes(key)) {
      issues.push({
        code: 'unknown_field',
        path: pointer(key),
        message: `Unknown field "${key}"; a change has only ${FIELDS.join(', ')} (check the spelling).`,
      });
    }
  }
  const changes: {
    -readonly [K in keyof SubscriptionChanges]: SubscriptionChanges[K];
  } = {};
  if (keys.includes('endpointUrl')) {
    const url = readEndpointUrlField(fields, settings, fieldIssues);
    if (url !== undefined) changes.endpointUrl = url;
  }
  if (keys.includes('events')) {
    const events = readEventsField(fields, settings, fieldIssues);
    if (events !== undefined) changes.events = events;
  }
  if (keys.includes('propertyIds')) {
    if (ownField(fields, 'propertyIds') === null) changes.propertyIds = null;
    else {
      const ids = readPropertyIdsField(fields, settings, fieldIssues);
      if (ids !== undefined) changes.propertyIds = ids;
    }
  }
  Object.assign(changes, readNewChanges(fields, keys, fieldIssues));
  issues.push(...fieldIssues);
  if (keys.includes('status')) {
    const status = ownField(fields, 'status');
    if (status === UNREADABLE || !STATUSES.includes(status as SubscriptionStatus)) {
      issues.push({
        code: typeof status === 'string' ? 'invalid_status' : 'wrong_type',
        path: '/status',
        message: `status must be "enabled" or "disabled"; got ${typeof status === 'string' ? JSON.stringify(status.slice(0, 40)) : kindOf(status)}.`,
      });
    } else changes.status = status as SubscriptionStatus;
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: changes };
}

const fail = (issue: SubscriptionPatchIssue): SubscriptionPatchResult => ({
  ok: false,
  issues: [issue],
});
