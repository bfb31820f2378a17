/**
 * The typed client of the webhook service's API (docs/webhook-service.md, "Routes"): one method per
 * route, lists read to their end by the page iterators, `Retry-After` honoured, problems thrown
 * as `WebhookApiError`.
 * @module
 */
import { aFunction, INVALID, type Rule, readOptions, requiredValue } from '../internal/options.js';
import { cursorPages } from './cursor-iterator.js';
import { createRetryingFetch, type FetchFunction, type RetryingFetchOptions } from './fetch.js';
import { pageNumberPages } from './page-number-iterator.js';
import {
  type Exchange,
  jsonBody,
  type WebhookClientHeaders,
  webhookExchange,
} from './webhook-exchange.js';
import type {
  CreatedWebhookSubscription,
  CreateWebhookSubscription,
  RotatedWebhookSecret,
  UpdatedWebhookSubscription,
  UpdateWebhookSubscription,
  WebhookAttempt,
  WebhookAttemptPage,
  WebhookAttemptQuery,
  WebhookMessageReplay,
  WebhookSubscription,
  WebhookSubscriptionPage,
  WebhookSubscriptionReplay,
} from './webhook-types.js';

/** Options of {@link createWebhookClient}. */
export interface WebhookClientOptions {
  /**
   * Where the service is mounted: an absolute http(s) URL, with the service's `basePath` if it has
   * one (`https://api.example.com/webhooks`); the routes (`/v1/subscriptions`, ...) follow it.
   */
  baseUrl: string | URL;
  /**
   * Headers of every request, or a function that makes them for each request (a bearer token
   * that is renewed: `() => ({ authorization: \`Bearer ${token()}\` })`).
   */
  headers?: WebhookClientHeaders;
  /** The fetch that sends requests; wrapped to honour `Retry-After`. @defaultValue `globalThis.fetch` */
  fetch?: FetchFunction;
  /** How 429 answers are retried: the options of `createRetryingFetch` but `fetch`. @defaultValue its defaults */
  retry?: Omit<RetryingFetchOptions, 'fetch'>;
}

/** Options of one call. */
export interface WebhookCallOptions {
  /** Aborts the call; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Options of the subscription listing. */
export interface WebhookSubscriptionListOptions extends WebhookCallOptions {
  /** Subscriptions per page, 1 to 200. @defaultValue the service's (20) */
  pageSize?: number;
  /** The first page to read. @defaultValue 1 */
  startPage?: number;
}

/** Options of an attempt listing: its filters and paging. */
export interface WebhookAttemptListOptions extends WebhookAttemptQuery, WebhookCallOptions {}

/**
 * A list read to its end: `for await` gives every item across pages, in order, each once;
 * `pages()` gives the pages themselves (break after the first for a single page).
 */
export interface WebhookListing<T, P> extends AsyncIterable<T> {
  /** The pages, in order, each as the service answered it. */
  pages(): AsyncIterable<P>;
}

/** The client of the webhook service, made by {@link createWebhookClient}. */
export interface WebhookClient {
  /** The subscriptions of the account the headers identify. */
  readonly subscriptions: {
    /** `POST /v1/subscriptions`: the subscription made, with its `secret` shown this once. */
    create(
      body: CreateWebhookSubscription,
      options?: WebhookCallOptions,
    ): Promise<CreatedWebhookSubscription>;
    /** `GET /v1/subscriptions`: every subscription, page after page, in creation order. */
    list(
      options?: WebhookSubscriptionListOptions,
    ): WebhookListing<WebhookSubscription, WebhookSubscriptionPage>;
    /** `GET /v1/subscriptions/{id}`. */
    get(id: string, options?: WebhookCallOptions): Promise<WebhookSubscription>;
    /** `PATCH /v1/subscriptions/{id}`: the subscription after the change. */
    update(
      id: string,
      changes: UpdateWebhookSubscription,
      options?: WebhookCallOptions,
    ): Promise<UpdatedWebhookSubscription>;
    /** `DELETE /v1/subscriptions/{id}`. */
    delete(id: string, options?: WebhookCallOptions): Promise<void>;
    /** `POST /v1/subscriptions/{id}/secret/rotate`: the new secret or public key. */
    rotateSecret(id: string, options?: WebhookCallOptions): Promise<RotatedWebhookSecret>;
    /** `POST /v1/subscriptions/{id}/replay`: every message it failed since `since`, sent again. */
    replay(
      id: string,
      body: { since: string | Date },
      options?: WebhookCallOptions,
    ): Promise<WebhookSubscriptionReplay>;
    /** `GET /v1/subscriptions/{id}/attempts`: its attempts, newest first, page after page. */
    attempts(
      id: string,
      options?: WebhookAttemptListOptions,
    ): WebhookListing<WebhookAttempt, WebhookAttemptPage>;
  };
  /** Messages of the account. */
  readonly messages: {
    /** `POST /v1/messages/{messageId}/replay`: the message sent again to each subscription that failed it. */
    replay(messageId: string, options?: WebhookCallOptions): Promise<WebhookMessageReplay>;
  };
  /** `GET /v1/audit-logs`: every attempt of the account, newest first, page after page. */
  auditLogs(
    options?: WebhookAttemptListOptions,
  ): WebhookListing<WebhookAttempt, WebhookAttemptPage>;
}

const BASE_URL: Rule<URL> = {
  expected: "the service's absolute http(s) URL, such as https://api.example.com",
  read(value) {
    if (typeof value !== 'string' && !(value instanceof URL)) return INVALID;
    try {
      const url = new URL(value);
      return url.protocol === 'https:' || url.protocol === 'http:' ? url : INVALID;
    } catch {
      return INVALID;
    }
  },
};

const HEADERS: Rule<WebhookClientHeaders> = {
  expected: 'headers (an object, a Headers or [name, value] pairs) or a function that returns them',
  read: (value) =>
    typeof value === 'function' || (typeof value === 'object' && value !== null)
      ? (value as WebhookClientHeaders)
      : INVALID,
};

const CLIENT_RULES = {
  baseUrl: BASE_URL,
  headers: HEADERS,
  fetch: aFunction<FetchFunction>('sends a request as fetch does'),
  retry: {
    expected: 'the options of createRetryingFetch but fetch, such as { maxRetries: 5 }',
    read: (value) =>
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? (value as Omit<RetryingFetchOptions, 'fetch'>)
        : INVALID,
  } satisfies Rule<Omit<RetryingFetchOptions, 'fetch'>>,
};

/**
 * Make a client of the webhook service. Every call sends the client's headers, waits out a 429 as
 * its `Retry-After` asks (see `createRetryingFetch`), and throws a `WebhookApiError` for any
 * answer but a success: the service's problem `code`, `status` and each issue's JSON pointer.
 * @throws ConfigurationError `invalid_option` when `baseUrl` is not an absolute http(s) URL, or an
 * option is of the wrong shape; before any request
 * @example
 * ```ts
 * const webhooks = createWebhookClient({
 *   baseUrl: 'https://api.example.com',
 *   headers: () => ({ authorization: `Bearer ${session.token}` }),
 * });
 * const created = await webhooks.subscriptions.create({
 *   endpointUrl: 'https://hooks.example.com/in',
 *   events: ['reservation/*'],
 * });
 * for await (const attempt of webhooks.subscriptions.attempts(created.id, { outcome: 'failed' })) {
 *   console.log(attempt.id, attempt.status);
 * }
 * ```
 */
export function createWebhookClient(options: WebhookClientOptions): WebhookClient {
  const given = readOptions(options, 'createWebhookClient', CLIENT_RULES, {
    required: true,
    example: "{ baseUrl: 'https://api.example.com' }",
  });
  const baseUrl = requiredValue(BASE_URL, given.baseUrl, 'baseUrl');
  const base = `${baseUrl.origin}${baseUrl.pathname.replace(/\/+$/, '')}`;
  const send = createRetryingFetch({
    ...given.retry,
    ...(given.fetch === undefined ? {} : { fetch: given.fetch }),
  });
  const exchange = webhookExchange(send, given.headers);
  const at = (...segments: string[]) =>
    `${base}${segments.map((s, i) => (i % 2 === 1 ? encodeURIComponent(s) : s)).join('')}`;
  const subscription = (id: string, tail = '') => at('/v1/subscriptions/', id, tail);

  return {
    subscriptions: {
      create: (body, call) => callJson(exchange, 'POST', at('/v1/subscriptions'), call, body),
      list: (list = {}) => subscriptionListing(exchange, at('/v1/subscriptions'), list),
      get: (id, call) => callJson(exchange, 'GET', subscription(id), call),
      update: (id, changes, call) => callJson(exchange, 'PATCH', subscription(id), call, changes),
      delete: async (id, call) => {
        const response = await exchange(subscription(id), requestInit('DELETE', call));
        await response.body?.cancel().catch(() => undefined);
      },
      rotateSecret: (id, call) =>
        callJson(exchange, 'POST', subscription(id, '/secret/rotate'), call),
      replay: (id, { since }, call) =>
        callJson(exchange, 'POST', subscription(id, '/replay'), call, {
          since: since instanceof Date ? since.toISOString() : since,
        }),
      attempts: (id, query = {}) => attemptListing(exchange, subscription(id, '/attempts'), query),
    },
    messages: {
      replay: (messageId, call) =>
        callJson(exchange, 'POST', at('/v1/messages/', messageId, '/replay'), call),
    },
    auditLogs: (query = {}) => attemptListing(exchange, at('/v1/audit-logs'), query),
  };
}

function requestInit(method: string, call: WebhookCallOptions | undefined, body?: unknown) {
  const init: RequestInit = { method };
  if (call?.signal !== undefined) init.signal = call.signal;
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  return init;
}

async function callJson<T>(
  exchange: Exchange,
  method: string,
  url: string,
  call: WebhookCallOptions | undefined,
  body?: unknown,
): Promise<T> {
  const response = await exchange(url, requestInit(method, call, body));
  return jsonBody<T>(method, url, response);
}

// Each page through the exchange, so that an error answer is a WebhookApiError, not a bare status.
const pageFetch =
  (exchange: Exchange): FetchFunction =>
  (input, init) =>
    exchange(String(input), init ?? {});

function listing<T, P>(pages: () => AsyncGenerator<{ body: unknown }>): WebhookListing<T, P> {
  return {
    async *[Symbol.asyncIterator]() {
      for await (const page of pages()) yield* (page.body as { items: readonly T[] }).items;
    },
    async *pages() {
      for await (const page of pages()) yield page.body as P;
    },
  };
}

function subscriptionListing(
  exchange: Exchange,
  url: string,
  { pageSize, startPage, signal }: WebhookSubscriptionListOptions,
): WebhookListing<WebhookSubscription, WebhookSubscriptionPage> {
  return listing(() =>
    pageNumberPages<WebhookSubscription>({
      url,
      fetch: pageFetch(exchange),
      init: requestInit('GET', { ...(signal === undefined ? {} : { signal }) }),
      ...(pageSize === undefined ? {} : { pageSize }),
      ...(startPage === undefined ? {} : { startPage }),
    }),
  );
}

function attemptListing(
  exchange: Exchange,
  path: string,
  query: WebhookAttemptListOptions,
): WebhookListing<WebhookAttempt, WebhookAttemptPage> {
  const { outcome, since, until, limit, startCursor, signal } = query;
  const url = new URL(path);
  if (outcome !== undefined) {
    url.searchParams.set('outcome', typeof outcome === 'string' ? outcome : outcome.join(','));
  }
  if (since !== undefined) url.searchParams.set('since', instant(since));
  if (until !== undefined) url.searchParams.set('until', instant(until));
  return listing(() =>
    cursorPages<WebhookAttempt>({
      url,
      fetch: pageFetch(exchange),
      init: requestInit('GET', { ...(signal === undefined ? {} : { signal }) }),
      ...(limit === undefined ? {} : { limit }),
      ...(startCursor === undefined ? {} : { startCursor }),
    }),
  );
}

const instant = (value: string | Date) => (value instanceof Date ? value.toISOString() : value);
