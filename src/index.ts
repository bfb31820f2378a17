/**
 * api-conventions: rate limits, concurrency throttling, per-resource limits, the 429 response,
 * pagination and webhook subscriptions, as one tested implementation.
 * @module
 */

export type { Clock } from './clock.js';
// Time
export { FakeClock, systemClock } from './clock.js';
export type { DataFolderErrorCode, DataFolderErrorOptions } from './errors/data-folder-error.js';
export { DataFolderError, dataFolderErrorCodes } from './errors/data-folder-error.js';
export type { DeliveryQueueErrorCode } from './errors/delivery-queue-error.js';
export { DeliveryQueueError, deliveryQueueErrorCodes } from './errors/delivery-queue-error.js';
export type { DeliveryTransportErrorCode } from './errors/delivery-transport-error.js';
export {
  DeliveryTransportError,
  deliveryTransportErrorCodes,
} from './errors/delivery-transport-error.js';
export { ForbiddenAddressError } from './errors/forbidden-address-error.js';
export type {
  ConfigurationErrorCode,
  ErrorOptions,
  InvalidRequestErrorCode,
  InvalidRequestErrorOptions,
} from './errors/index.js';
// Errors
export {
  ApiConventionsError,
  ConfigurationError,
  configurationErrorCodes,
  InvalidRequestError,
  invalidRequestErrorCodes,
  isApiConventionsError,
  isConfigurationError,
  isInvalidRequestError,
} from './errors/index.js';
export type {
  SecretCipherErrorCode,
  SecretCipherErrorOptions,
} from './errors/secret-cipher-error.js';
export {
  isSecretCipherError,
  SecretCipherError,
  secretCipherErrorCodes,
} from './errors/secret-cipher-error.js';
export type { AnonymousNetworkKeyOptions } from './http/anonymous-key.js';
// The key anonymous requests are counted by; networkKey and the rule stay internal.
export { anonymousNetworkKey } from './http/anonymous-key.js';
export { formatHttpDate } from './http/http-date.js';
export type { ProblemDetails, ProblemInit, ResponseParts } from './http/problem-details.js';
// HTTP
export {
  DEFAULT_PROBLEM_TYPE_BASE,
  PROBLEM_CONTENT_TYPE,
  problemDetails,
  problemResponse,
} from './http/problem-details.js';
export type { RateLimitFieldPolicies, RateLimitFields } from './http/rate-limit-fields.js';
export { rateLimitFields } from './http/rate-limit-fields.js';
export type {
  AnonymousOptions,
  CheckingLimiter,
  FailureMode,
  FailureOutcome,
  GatePhase,
  GateVerdict,
  IdentifyErrorMode,
  Identity,
  RateLimitErrorEvent,
  RateLimitGate,
  RateLimitOptions,
  TrackingIdReader,
} from './http/rate-limit-gate.js';
// The gate behind every adapter; the adapters themselves are subpaths (`/node`, `/express`, ...).
export { ANONYMOUS_CLIENT_ID, createRateLimitGate } from './http/rate-limit-gate.js';
export type { RateLimitResponseOptions } from './http/rate-limit-response.js';
// refusalParts and admittedParts stay internal: the gate calls them with checked options.
export {
  admittedHeaders,
  rateLimitResponse,
  rateLimitResponseParts,
} from './http/rate-limit-response.js';
export { parseHttpDate, parseRetryAfter } from './http/retry-after.js';
export type { TrackingIdSource } from './http/tracking-id.js';
// checkHeaderName stays internal.
export {
  DEFAULT_TRACKING_ID_HEADER,
  isWellFormedTrackingId,
  randomTrackingId,
  resolveTrackingId,
} from './http/tracking-id.js';
export type { CanonicalPathOptions } from './limits/canonical-path.js';
// Limits: routes. The scanner behind canonicalPath is internal; the table wraps it.
export {
  canonicalPath,
  DEFAULT_MAX_PATH_LENGTH,
  RAW_PER_CANONICAL,
  VERSION_SEGMENT_PATTERN,
} from './limits/canonical-path.js';
export type {
  DecisionMessage,
  DecisionOutcome,
  DecisionRequest,
  LeaseExpiryMessage,
  LeaseReleaseMessage,
  StoreFailureMessage,
} from './limits/channels.js';
// Observability: the diagnostics channels' names; the publishers are internal.
export { limitsChannels } from './limits/channels.js';
export type { Duration, DurationUnit } from './limits/duration.js';
// Limits
export { formatDuration, toMilliseconds } from './limits/duration.js';
export type { LimitRule, ResourceRulesOptions } from './limits/limit-rule.js';
export {
  exemptionRules,
  ROUTE_EFFECT_CACHE_SIZE,
  resourceRules,
} from './limits/limit-rule.js';
export type {
  AccountTypeOf,
  AdmittedDecision,
  CheckOptions,
  Decision,
  Limiter,
  LimiterOptions,
  LimitRequest,
  OutageEvent,
  OutageMode,
  PeekOptions,
  PolicySource,
  RefusedDecision,
  ResetRequest,
  ShadowOption,
  ShadowRefusal,
} from './limits/limiter.js';
export { createLimiter } from './limits/limiter.js';
export type { MemoryStoreOptions } from './limits/memory/store.js';
export { MemoryStore } from './limits/memory/store.js';
export type {
  LimitOverride,
  MemoryOverridesOptions,
  OverrideEntry,
  OverrideSource,
  OverrideTarget,
} from './limits/overrides.js';
export { MAX_MULTIPLIER, MemoryOverrides } from './limits/overrides.js';
export type {
  ConcurrencyOptions,
  ConcurrencyPolicy,
  Policy,
  PolicyOptions,
  RatePolicy,
  WindowPolicy,
} from './limits/policy.js';
export {
  checkPolicies,
  concurrency,
  DEFAULT_CONCURRENCY_RETRY_AFTER_MS,
  DEFAULT_LEASE_TTL_MS,
  rate,
  window,
} from './limits/policy.js';
export type { AccountPresets, AccountType, LimitPreset, PresetOptions } from './limits/presets.js';
export {
  DEFAULT_DEVELOPMENT_CONCURRENCY,
  DEFAULT_LIVE_CONCURRENCY,
  developmentPreset,
  livePreset,
  presets,
  trialPreset,
} from './limits/presets.js';
export type { ResourceLimitRow } from './limits/resource-tables.js';
export {
  developmentResourceLimits,
  liveResourceLimits,
  liveThrottleExemptRoutes,
} from './limits/resource-tables.js';
export type { RoutePattern, RouteSegment } from './limits/route-pattern.js';
export { parseRoutePattern } from './limits/route-pattern.js';
export type { RouteMatch, RouteRule, RouteTable, RouteTableOptions } from './limits/route-table.js';
export { compileRoutes } from './limits/route-table.js';
export type {
  AdmittedOutcome,
  AsyncLimitStore,
  LeaseToken,
  LimitStore,
  LimitStoreBase,
  OutcomeStatuses,
  Plan,
  PlanScope,
  PolicyStatus,
  RefusalReason,
  RefusedOutcome,
  ResetOutcome,
  ResetScope,
  ShadowOutcome,
  StoreOutcome,
  SyncLimitStore,
} from './limits/store.js';
export { retryAfterSeconds } from './limits/store.js';
export type {
  CursorBindingOptions,
  CursorCodec,
  CursorCodecOptions,
  CursorDecoding,
  CursorErrorCode,
  CursorSecret,
} from './pagination/cursor-codec.js';
// Pagination
export { createCursorCodec } from './pagination/cursor-codec.js';
export type { CursorQuery, CursorValidatorOptions } from './pagination/cursor-validator.js';
export { cursorValidator } from './pagination/cursor-validator.js';
export type {
  CursorNavigation,
  CursorPageInput,
  PageLinks,
  PageNumberNavigation,
  PageNumberPageInput,
} from './pagination/links.js';
export { cursorNavigation, formatLinkHeader, pageNumberNavigation } from './pagination/links.js';
export type {
  PageNumberQuery,
  PageNumberValidatorOptions,
} from './pagination/page-number-validator.js';
export { pageNumberValidator } from './pagination/page-number-validator.js';
export type { PageSizeLimits, PageSizePresets } from './pagination/page-size-presets.js';
export { pageSizePresets } from './pagination/page-size-presets.js';
export type {
  PaginationErrorCode,
  PaginationIssue,
  PaginationValidation,
  ProblemOptions,
} from './pagination/pagination-error.js';
export { paginationErrorCodes, paginationProblem } from './pagination/pagination-error.js';
// The query readers stay internal: validators take the query as frameworks hand it over.
export type { QueryInput } from './pagination/query-input.js';
export type { AddressAllowList } from './webhooks/delivery/address-allow-list.js';
// Webhook delivery
export { addressAllowList } from './webhooks/delivery/address-allow-list.js';
export type {
  AttemptOutcome,
  DeliveryAttempt,
  DeliveryFailure,
} from './webhooks/delivery/attempt.js';
export type {
  DeliveryAttemptMessage,
  DeliveryEndMessage,
  DeliveryEndOutcome,
} from './webhooks/delivery/channels.js';
export { webhookChannels } from './webhooks/delivery/channels.js';
export { createDeliverer, deliver, deliveryJob } from './webhooks/delivery/create-deliverer.js';
export {
  type FetchTransportOptions,
  fetchTransport,
} from './webhooks/delivery/fetch-transport.js';
export { forbiddenAddressRange } from './webhooks/delivery/forbidden-address.js';
export type {
  HttpTransportOptions,
  TransportRequest,
  TransportResponse,
  WebhookTransport,
} from './webhooks/delivery/http-transport.js';
export { httpTransport, RESPONSE_BODY_CAP } from './webhooks/delivery/http-transport.js';
export type { DeliveryJob } from './webhooks/delivery/job.js';
export type { MemoryDeliveryQueueOptions } from './webhooks/delivery/memory-queue.js';
export { MemoryDeliveryQueue } from './webhooks/delivery/memory-queue.js';
export type { DeliveryOptions } from './webhooks/delivery/options.js';
export type { DeliveryQueue, EnqueueOptions } from './webhooks/delivery/queue.js';
export type {
  FailedAttempt,
  RetryDecision,
  RetrySchedule,
  RetryScheduleOptions,
} from './webhooks/delivery/retry-schedule.js';
export { backoffDelay, nextAttempt, retrySchedule } from './webhooks/delivery/retry-schedule.js';
export type {
  ConnectLookup,
  DnsLookup,
  SsrfGuard,
  SsrfGuardOptions,
} from './webhooks/delivery/ssrf-guard.js';
export { literalHostRefusal, ssrfGuard } from './webhooks/delivery/ssrf-guard.js';
export type { AttemptOptions, Deliverer, DeliveryStep } from './webhooks/delivery/step.js';
export type {
  EventCatalog,
  EventCatalogDefinition,
  EventCatalogError,
  EventCatalogErrorCode,
} from './webhooks/events/event-catalog.js';
export {
  defineEventCatalog,
  eventCatalogErrorCodes,
  exampleEventCatalog,
} from './webhooks/events/event-catalog.js';
export type {
  EventKindPattern,
  EventPattern,
  EventPatternError,
  EventPatternErrorCode,
  EventPatternResult,
  TopicWildcardPattern,
} from './webhooks/events/event-kind.js';
export {
  eventPatternErrorCodes,
  MAX_EVENT_PART_LENGTH,
  MAX_EVENT_PATTERN_LENGTH,
  parseEventKind,
  parseEventPattern,
  patternSelects,
} from './webhooks/events/event-kind.js';
export type {
  AttemptExhaustedData,
  AttemptFailingData,
  AttemptRecoveredData,
  OperationalEventKind,
  SubscriptionDisabledData,
} from './webhooks/events/operational-events.js';
// withOperationalTopic and the message ids of operational events are the service's internals.
export {
  OPERATIONAL_TOPIC,
  operationalEventKinds,
} from './webhooks/events/operational-events.js';
export type {
  WebhookEnvelope,
  WebhookEvent,
  WebhookMessage,
  WebhookMessageOptions,
} from './webhooks/events/payload.js';
export { createWebhookMessage, defaultEnvelope } from './webhooks/events/payload.js';
export type { NodeWebhookListener } from './webhooks/receiver/node-handler.js';
export type {
  ReceivedWebhook,
  WebhookReceiverErrorEvent,
  WebhookReceiverOptions,
  WebhookReceiverPhase,
  WebhookReceiverProblemCode,
} from './webhooks/receiver/receive.js';
export {
  webhookReceiverDefaults,
  webhookReceiverProblemCodes,
} from './webhooks/receiver/receive.js';
export type {
  MemorySeenStoreOptions,
  WebhookClaim,
  WebhookSeenStore,
} from './webhooks/receiver/seen-store.js';
export { memorySeenStore, memorySeenStoreDefaults } from './webhooks/receiver/seen-store.js';
// fetch-handler.ts and node-handler.ts serve the receiver: createWebhookReceiver is the API.
export type { WebhookReceiver } from './webhooks/receiver/webhook-receiver.js';
export { createWebhookReceiver } from './webhooks/receiver/webhook-receiver.js';
export {
  type OpenApiDocument,
  type WebhookServiceOpenApiOptions,
  webhookServiceOpenApi,
} from './webhooks/service/openapi.js';
// plain-changes.ts, request-body.ts, service-deliverer.ts, service-handlers.ts, service-routes.ts
// and subscription-mirror.ts are the service's internals: createWebhookService is the API.
export type {
  WebhookServiceDeliveryOptions,
  WebhookServiceDisabled,
  WebhookServiceLimits,
  WebhookServiceOptions,
} from './webhooks/service/options.js';
export { webhookServiceDefaults } from './webhooks/service/options.js';
export type { PortalToken, PortalTokenRequest } from './webhooks/service/portal-token.js';
export type { WebhookServiceProblemCode } from './webhooks/service/problems.js';
export { webhookServiceProblemCodes } from './webhooks/service/problems.js';
export { createWebhookService } from './webhooks/service/webhook-service.js';
export type {
  PublishEvent,
  PublishOptions,
  PublishResult,
  WebhookService,
  WebhookServiceStats,
} from './webhooks/service/webhook-service-types.js';
export type {
  AesGcmSecretCipherOptions,
  AsyncSecretCipher,
  SecretCipher,
  SecretKey,
  SyncSecretCipher,
} from './webhooks/signing/secret-cipher.js';
export { aesGcmSecretCipher, aesGcmSecretCipherAsync } from './webhooks/signing/secret-cipher.js';
export type { SignInput, WebhookHeaders } from './webhooks/signing/signature.js';
// signatureDigest stays internal: sign and verify are the API.
export {
  generateWebhookSecret,
  signWebhook,
  signWebhookAsync,
  WEBHOOK_SECRET_BYTES,
  WEBHOOK_SECRET_PREFIX,
  webhookSecretKey,
} from './webhooks/signing/signature.js';
export type { WebhookKeyPair } from './webhooks/signing/signing-key.js';
// ed25519Signature, isEd25519Signature and signedContent stay internal: sign and verify are the API.
export {
  generateWebhookKeyPair,
  generateWebhookKeyPairAsync,
  WEBHOOK_PUBLIC_KEY_PREFIX,
  WEBHOOK_SIGNING_KEY_PREFIX,
  webhookPublicKeyOf,
  webhookPublicKeyOfAsync,
} from './webhooks/signing/signing-key.js';
export type {
  HeaderSource,
  VerifyWebhookOptions,
  WebhookVerification,
  WebhookVerificationErrorCode,
} from './webhooks/signing/verify.js';
export {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  verifyWebhook,
  verifyWebhookAsync,
  webhookVerificationErrorCodes,
} from './webhooks/signing/verify.js';
// nearest-name.ts and subscription-leaf.ts are internal: the catalog, the index and the memory
// store's option check use them.
export { MemorySubscriptionRepository } from './webhooks/store/memory-repository.js';
export type {
  AttemptQuery,
  AttemptRecord,
  ChangeListener,
  DeliveryClaim,
  DeliveryKey,
  DeliveryLogEntry,
  DeliveryStatus,
  EndpointHealth,
  KeptMessage,
  MessageKey,
  OutboxDelivery,
  OutboxMessage,
  PendingDelivery,
  ReplayPlan,
  ReplayResult,
  ReplaySelection,
  RotateSecretOptions,
  SigningSecretsOptions,
  StoreSubscriptionOptions,
  SubscriptionPage,
  SubscriptionRepository,
} from './webhooks/store/repository.js';
// Webhooks
export type {
  CreateSubscriptionOptions,
  CreateSubscriptionOutcome,
} from './webhooks/subscriptions/create-subscription.js';
export {
  createSubscription,
  INVALID_SUBSCRIPTION_REQUEST,
} from './webhooks/subscriptions/create-subscription.js';
export type {
  EndpointUrlError,
  EndpointUrlErrorCode,
  EndpointUrlOptions,
  EndpointUrlResult,
} from './webhooks/subscriptions/endpoint-url.js';
export {
  checkEndpointUrl,
  DEFAULT_MAX_ENDPOINT_URL_LENGTH,
  endpointUrlErrorCodes,
} from './webhooks/subscriptions/endpoint-url.js';
export type {
  DisabledReason,
  SignatureType,
  StoredSubscription,
  Subscription,
  SubscriptionChange,
  SubscriptionChanges,
  SubscriptionRequest,
  SubscriptionStatus,
} from './webhooks/subscriptions/subscription.js';
export { signatureTypes } from './webhooks/subscriptions/subscription.js';
export { subscriptionFieldLimits } from './webhooks/subscriptions/subscription-fields.js';
export type {
  MatchOptions,
  SubscriptionEvent,
  SubscriptionIndexStats,
} from './webhooks/subscriptions/subscription-index.js';
export { SubscriptionIndex } from './webhooks/subscriptions/subscription-index.js';
export type { SubscriptionPatchIssue } from './webhooks/subscriptions/subscription-patch.js';
export { subscriptionPatchErrorCodes } from './webhooks/subscriptions/subscription-patch.js';
export type { SubscriptionRequestOptions } from './webhooks/subscriptions/subscription-request.js';
export {
  subscriptionRequestDefaults,
  validateSubscriptionRequest,
} from './webhooks/subscriptions/subscription-request.js';
export type {
  SubscriptionRequestErrorCode,
  SubscriptionRequestIssue,
  SubscriptionRequestResult,
} from './webhooks/subscriptions/subscription-request-result.js';
export {
  subscriptionBodyErrorCodes,
  subscriptionRequestErrorCodes,
} from './webhooks/subscriptions/subscription-request-result.js';
