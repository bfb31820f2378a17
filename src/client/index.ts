/**
 * The integrator's client: `import { createRetryingFetch, cursorItems } from 'api-conventions/client'`.
 * A `fetch` that honours `Retry-After` on 429, async iterators that read a paged list to its end,
 * and the typed client of the webhook service (`createWebhookClient`).
 * @module
 */

export type { PaginationClientErrorCode } from '../errors/pagination-client-error.js';
export {
  isPaginationClientError,
  PaginationClientError,
  paginationClientErrorCodes,
} from '../errors/pagination-client-error.js';
export type {
  WebhookApiClientErrorCode,
  WebhookApiErrorDetails,
  WebhookApiIssue,
} from '../errors/webhook-api-error.js';
export {
  isWebhookApiError,
  WebhookApiError,
  webhookApiErrorCodes,
} from '../errors/webhook-api-error.js';
export type { Sleep } from '../internal/timers.js';
export { timerSleep } from '../internal/timers.js';
export type { CursorIteratorOptions, CursorPage } from './cursor-iterator.js';
export { bodyNextCursor, cursorItems, cursorPages } from './cursor-iterator.js';
export type { FetchFunction, RetryEvent, RetryingFetchOptions } from './fetch.js';
export { createRetryingFetch } from './fetch.js';
export type { PacedRequest, Pacer, PacerOptions } from './pacer.js';
export { createPacer } from './pacer.js';
export type { NumberedPage, PageNumberIteratorOptions } from './page-number-iterator.js';
export { bodySaysLastPage, pageNumberItems, pageNumberPages } from './page-number-iterator.js';
export type { ItemsReader, Page, PageRequestOptions } from './page-request.js';
export { defaultItems } from './page-request.js';
export type {
  WebhookAttemptListOptions,
  WebhookCallOptions,
  WebhookClient,
  WebhookClientOptions,
  WebhookListing,
  WebhookSubscriptionListOptions,
} from './webhook-client.js';
export { createWebhookClient } from './webhook-client.js';
export type { WebhookClientHeaders, WebhookHeaderValues } from './webhook-exchange.js';
export type {
  CreatedWebhookSubscription,
  CreateWebhookSubscription,
  RotatedWebhookSecret,
  UpdatedWebhookSubscription,
  UpdateWebhookSubscription,
  WebhookAttempt,
  WebhookAttemptOutcome,
  WebhookAttemptPage,
  WebhookAttemptQuery,
  WebhookDeliveryFailure,
  WebhookDisabledReason,
  WebhookMessageReplay,
  WebhookPageLinks,
  WebhookSignatureType,
  WebhookSubscription,
  WebhookSubscriptionPage,
  WebhookSubscriptionReplay,
} from './webhook-types.js';
// abortableSleep, requestPage and the option checks are internal: the iterators, the fetch wrapper
// and the pacer use them; so is the webhook client's exchange (webhookExchange, jsonBody).
