/** The error thrown for a programmer mistake in configuration. @module */
import { ApiConventionsError, type ErrorOptions, errorName } from './api-conventions-error.js';

/** Codes of {@link ConfigurationError}; a test pins them (removing one breaks the API). */
export const configurationErrorCodes = [
  'invalid_limit',
  'invalid_duration',
  'invalid_rate',
  'invalid_policy',
  'duplicate_policy_name',
  'invalid_option',
  // src/limits/cost.ts: a check's cost, and a cost no policy of the request could ever admit
  'invalid_cost',
  'cost_above_limit',
  // src/limits/overrides.ts: an override that is not one preset or one multiplier, or a preset
  // name the overrides source does not have
  'invalid_override',
  'unknown_preset',
  // src/limits/route-pattern.ts and src/limits/route-table.ts
  'invalid_route_pattern',
  'invalid_route_rule',
  // pagination: a cursor state that JSON cannot represent
  'invalid_cursor_state',
  // webhooks
  'invalid_event_catalog',
  'invalid_subscription',
  'duplicate_subscription_id',
  // src/http/tracking-id.ts: the tracking id header and source of the 429 and the middleware
  'invalid_header_name',
  'invalid_tracking_id',
  // src/redis: a Redis client without the commands the store needs
  'invalid_redis_client',
  // src/webhooks: delivery (a malformed whsec_ secret, a bad SSRF allow-list entry)
  'invalid_webhook_secret',
  'invalid_address_allow_list',
  // src/webhooks/signing/signing-key.ts: a malformed whsk_ signing key or whpk_ public key
  'invalid_webhook_signing_key',
  'invalid_webhook_public_key',
  // src/internal/node-builtin.ts: a synchronous form that needs a module of Node's on a runtime
  // without it (the asynchronous form, through WebCrypto, runs there)
  'unsupported_runtime',
] as const;

/** A code of {@link ConfigurationError}. */
export type ConfigurationErrorCode = (typeof configurationErrorCodes)[number];

/**
 * Thrown when the library is configured wrongly (a limit of 0, a negative duration, two policies
 * with the same name). The message says what to change.
 */
export class ConfigurationError extends ApiConventionsError {
  declare readonly code: ConfigurationErrorCode;

  /** @param message - what to change */
  constructor(code: ConfigurationErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'ConfigurationError';
  }
}

/** True for a {@link ConfigurationError}, also from another copy of the package. */
export function isConfigurationError(value: unknown): value is ConfigurationError {
  return errorName(value) === 'ConfigurationError';
}
