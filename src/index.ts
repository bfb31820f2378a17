/**
 * api-conventions: rate limits, concurrency throttling, per-resource limits, the 429 response,
 * pagination and webhook subscriptions, as one tested implementation.
 * @module
 */

export type { Clock } from './clock.js';
// Time
export { FakeClock, systemClock } from './clock.js';
export type { ConfigurationErrorCode, ErrorOptions } from './errors.js';
// Errors
export {
  ApiConventionsError,
  ConfigurationError,
  configurationErrorCodes,
  isApiConventionsError,
  isConfigurationError,
} from './errors.js';
export type { ProblemDetails, ProblemInit, ResponseParts } from './http/problem-details.js';
// HTTP
export {
  DEFAULT_PROBLEM_TYPE_BASE,
  PROBLEM_CONTENT_TYPE,
  problemDetails,
  problemResponse,
} from './http/problem-details.js';
// Webhooks
export type {
  CreateSubscriptionOptions,
  CreateSubscriptionOutcome,
} from './webhooks/create-subscription.js';
export {
  createSubscription,
  INVALID_SUBSCRIPTION_REQUEST,
} from './webhooks/create-subscription.js';
export type {
  EndpointUrlError,
  EndpointUrlErrorCode,
  EndpointUrlOptions,
  EndpointUrlResult,
} from './webhooks/endpoint-url.js';
export {
  checkEndpointUrl,
  DEFAULT_MAX_ENDPOINT_URL_LENGTH,
  endpointUrlErrorCodes,
} from './webhooks/endpoint-url.js';
export type {
  EventCatalog,
  EventCatalogDefinition,
  EventCatalogError,
  EventCatalogErrorCode,
} from './webhooks/event-catalog.js';
export {
  defineEventCatalog,
  eventCatalogErrorCodes,
  exampleEventCatalog,
} from './webhooks/event-catalog.js';
export type {
  EventKindPattern,
  EventPattern,
  EventPatternError,
  EventPatternErrorCode,
  EventPatternResult,
  TopicWildcardPattern,
} from './webhooks/event-kind.js';
export {
  eventPatternErrorCodes,
  MAX_EVENT_PART_LENGTH,
  MAX_EVENT_PATTERN_LENGTH,
  parseEventKind,
  parseEventPattern,
  patternSelects,
} from './webhooks/event-kind.js';
export { forbiddenAddressRange } from './webhooks/forbidden-address.js';
// nearest-name.ts and subscription-leaf.ts are internal: the catalog and the index use them.
export type { Subscription, SubscriptionRequest } from './webhooks/subscription.js';
export type { SubscriptionEvent, SubscriptionIndexStats } from './webhooks/subscription-index.js';
export { SubscriptionIndex } from './webhooks/subscription-index.js';
export type {
  SubscriptionRequestErrorCode,
  SubscriptionRequestIssue,
  SubscriptionRequestOptions,
  SubscriptionRequestResult,
} from './webhooks/subscription-request.js';
export {
  subscriptionBodyErrorCodes,
  subscriptionRequestDefaults,
  subscriptionRequestErrorCodes,
  validateSubscriptionRequest,
} from './webhooks/subscription-request.js';
