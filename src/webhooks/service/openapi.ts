/**
 * The webhook service's OpenAPI 3.1 document, made from the route table the service matches
 * requests with and from the limits, page sizes and codes its validators apply: a route, a
 * parameter limit or a problem code added to the service is in the document with no second edit.
 * @module
 */
import { PROBLEM_CONTENT_TYPE } from '../../http/problem-details.js';
import {
  type PaginationErrorCode,
  paginationErrorCodes,
} from '../../pagination/pagination-error.js';
import { subscriptionPatchErrorCodes } from '../subscriptions/subscription-patch.js';
import { subscriptionRequestErrorCodes } from '../subscriptions/subscription-request-result.js';
import { type DocumentSettings, parameters, ref, schemas } from './openapi-schemas.js';
import { readOpenApiOptions, type WebhookServiceOptions } from './options.js';
import type { WebhookServiceProblemCode } from './problems.js';
import { replayIssueCodes } from './replay.js';
import { isReading, type Route, type RouteAnswer, routeTable } from './routes.js';

/** An OpenAPI 3.1 document, as JSON. */
export type OpenApiDocument = Readonly<Record<string, unknown>>;

/** The options the document reads: the service's, repository and identify not needed. */
export type WebhookServiceOpenApiOptions = Partial<WebhookServiceOptions>;

/**
 * The webhook service's OpenAPI 3.1 document for these options: the one the service serves,
 * without authentication, at `GET {basePath}/v1/openapi.json`. Every route, its parameters with
 * their limits, its request and response bodies and every problem `code` it can answer; the base
 * path as the server URL, the catalog's event patterns as the `events` values, the 429 of a
 * `limiter` when one is given.
 * @param options - the options given to `createWebhookService` (repository and identify may be
 *   left out)
 * @throws ConfigurationError `invalid_option` for a bad option, as `createWebhookService` refuses it
 * @example
 * ```ts
 * const document = webhookServiceOpenApi({ basePath: '/webhooks' });
 * document.openapi; // '3.1.0'
 * ```
 */
export function webhookServiceOpenApi(options: WebhookServiceOpenApiOptions = {}): OpenApiDocument {
  return openApiDocument(readOpenApiOptions(options));
}

/** The status of each problem code the service answers. */
const STATUS: Readonly<
  Record<WebhookServiceProblemCode | PaginationErrorCode | ExtraCode, number>
> = {
  unauthenticated: 401,
  portal_token_invalid: 401,
  portal_token_expired: 401,
  portal_read_only: 403,
  request_not_attributed: 500,
  route_not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  body_too_large: 413,
  invalid_json: 400,
  invalid_subscription_change: 400,
  invalid_subscription_request: 400,
  invalid_query: 400,
  cursor_account_mismatch: 400,
  subscription_not_found: 404,
  subscription_limit_reached: 409,
  subscription_disabled: 409,
  message_not_found: 404,
  invalid_replay: 400,
  service_unavailable: 503,
  rate_limit_unavailable: 503,
  internal_error: 500,
  ...Object.fromEntries(paginationErrorCodes.map((code) => [code, 400])),
} as Record<WebhookServiceProblemCode | PaginationErrorCode | ExtraCode, number>;

/** Codes answered by the create validation and by a limiter's gate. */
type ExtraCode = 'invalid_subscription_request' | 'rate_limit_unavailable';
type Code = keyof typeof STATUS;

/** What every request can be answered, whatever its route (a limiter adds its own). */
const EVERY_REQUEST: readonly Code[] = [
  'unauthenticated',
  'portal_token_invalid',
  'portal_token_expired',
  'request_not_attributed',
  'internal_error',
  'service_unavailable',
];
const LIMITER: readonly Code[] = ['rate_limit_unavailable'];

/** The codes of each query kind: those of the validator the route pages with. */
const QUERY_CODES: Readonly<Record<NonNullable<Route['query']>, readonly Code[]>> = {
  pageNumber: paginationErrorCodes.filter(
    (code) => !code.startsWith('limit_') && !code.startsWith('cursor_'),
  ),
  attempts: [
    ...paginationErrorCodes.filter((code) => !code.startsWith('page_')),
    'invalid_query',
    'cursor_account_mismatch',
  ],
};

const BODY_CODES: readonly Code[] = ['unsupported_media_type', 'body_too_large', 'invalid_json'];
const BODY_PROBLEM: Readonly<Record<NonNullable<Route['body']>, Code>> = {
  subscriptionRequest: 'invalid_subscription_request',
  subscriptionChange: 'invalid_subscription_change',
  replaySince: 'invalid_replay',
};

/** The issue codes a problem's `errors` carry, by problem code. */
const ISSUE_CODES: Partial<Record<Code, readonly string[]>> = {
  invalid_json: ['invalid_json'],
  invalid_subscription_request: subscriptionRequestErrorCodes,
  invalid_subscription_change: [...subscriptionRequestErrorCodes, ...subscriptionPatchErrorCodes],
  invalid_replay: replayIssueCodes,
};

/** Every problem code a route can answer, in the order of their statuses. @internal */
export function routeProblemCodes(route: Route, settings: DocumentSettings): Code[] {
  if (route.anonymous === true) return ['internal_error'];
  const codes: Code[] = [...EVERY_REQUEST, ...(settings.limiter === undefined ? [] : LIMITER)];
  if (route.query !== undefined) codes.push(...QUERY_CODES[route.query]);
  if (route.body !== undefined) codes.push(...BODY_CODES, BODY_PROBLEM[route.body]);
  // A portal token that only reads is refused every change.
  if (!isReading(route.method)) codes.push('portal_read_only');
  codes.push(...route.problems);
  return [...new Set(codes)].sort((a, b) => STATUS[a] - STATUS[b]);
}

/** The document for settings read as the service reads its options. @internal */
export function openApiDocument(settings: DocumentSettings): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routeTable) {
    const item = paths[route.path] ?? {};
    if (route.path.includes('{id}')) item.parameters = [{ $ref: '#/components/parameters/id' }];
    item[route.method.toLowerCase()] = operationOf(route, settings);
    paths[route.path] = item;
  }
  const limited = settings.limiter !== undefined;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Webhook subscriptions',
      version: '1',
      description:
        "Subscriptions to the platform's events, their delivery attempts and replays. Every route but this document needs an identified account. Every error is problem details (RFC 9457) with a stable `code`. A path not listed is answered 404 `route_not_found`, a method a path does not list 405 `method_not_allowed` with `Allow` (`x-every-request-responses`). HEAD is answered as GET, without a body.",
    },
    servers: [{ url: settings.basePath === '' ? '/' : settings.basePath }],
    security: [{ account: [] }],
    paths,
    'x-every-request-responses': {
      '401': { $ref: '#/components/responses/unauthenticated' },
      '404': { $ref: '#/components/responses/route_not_found' },
      '405': { $ref: '#/components/responses/method_not_allowed' },
      ...(limited ? { '429': { $ref: '#/components/responses/rate_limited' } } : {}),
      '500': { $ref: '#/components/responses/failed' },
      '503': { $ref: '#/components/responses/unavailable' },
    },
    components: {
      securitySchemes: {
        account: {
          type: 'http',
          scheme: 'bearer',
          description:
            "The credentials the deployment's `identify` reads to tell the account of a request (a request it names no account for is answered 401 `unauthenticated`), or a portal token (`Authorization: Bearer portal.…`, minted by `portalToken`: 401 `portal_token_invalid` or `portal_token_expired` when it does not hold, 403 `portal_read_only` for a change with a read-only one).",
        },
      },
      parameters: parameters(),
      schemas: schemas(settings),
      responses: {
        unauthenticated: problemAnswer('Not identified', [
          'unauthenticated',
          'portal_token_invalid',
          'portal_token_expired',
        ]),
        route_not_found: problemAnswer('No such path', ['route_not_found']),
        method_not_allowed: {
          ...problemAnswer('The path does not answer this method', ['method_not_allowed']),
          headers: { Allow: { schema: { type: 'string' }, description: 'The methods it answers' } },
        },
        failed: problemAnswer('The service failed', ['request_not_attributed', 'internal_error']),
        unavailable: problemAnswer(
          'Not started, shutting down, or the limiter failed',
          limited ? ['service_unavailable', 'rate_limit_unavailable'] : ['service_unavailable'],
        ),
        ...(limited ? { rate_limited: rateLimited() } : {}),
      },
    },
  };
}

function operationOf(route: Route, settings: DocumentSettings): Record<string, unknown> {
  const responses: Record<string, unknown> = { ...success(route.answer) };
  const byStatus = new Map<number, Code[]>();
  for (const code of routeProblemCodes(route, settings)) {
    byStatus.set(STATUS[code], [...(byStatus.get(STATUS[code]) ?? []), code]);
  }
  for (const [status, codes] of byStatus) {
    responses[String(status)] = problemAnswer(`Problem: ${codes.join(', ')}`, codes);
  }
  if (settings.limiter !== undefined && route.anonymous !== true) {
    responses['429'] = { $ref: '#/components/responses/rate_limited' };
  }
  return {
    operationId: route.operation,
    summary: route.summary,
    ...(route.anonymous === true
      ? { security: [], description: 'Answered without identify, and not counted by the limiter.' }
      : {}),
    ...(route.query === undefined ? {} : { parameters: QUERY_PARAMETERS[route.query] }),
    ...(route.body === undefined
      ? {}
      : {
          requestBody: {
            required: true,
            description: `JSON (application/json or any +json type), at most ${settings.maxBodyBytes} bytes.`,
            content: { 'application/json': { schema: ref(BODY_SCHEMA[route.body]) } },
          },
        }),
    responses,
  };
}

const BODY_SCHEMA: Readonly<Record<NonNullable<Route['body']>, string>> = {
  subscriptionRequest: 'SubscriptionRequest',
  subscriptionChange: 'SubscriptionChange',
  replaySince: 'ReplayRequest',
};

const QUERY_PARAMETERS: Readonly<Record<NonNullable<Route['query']>, readonly unknown[]>> = {
  pageNumber: [
    { $ref: '#/components/parameters/pageNumber' },
    { $ref: '#/components/parameters/pageSize' },
  ],
  attempts: ['limit', 'cursor', 'outcome', 'since', 'until'].map((name) => ({
    $ref: `#/components/parameters/${name}`,
  })),
};

const NO_STORE = {
  'Cache-Control': { schema: { const: 'no-store' }, description: 'The secret is shown once' },
};
const LINK = {
  Link: { schema: { type: 'string' }, description: 'The neighbouring pages (RFC 8288)' },
};

function json(description: string, schema: unknown, headers?: unknown) {
  return {
    description,
    ...(headers === undefined ? {} : { headers }),
    content: { 'application/json': { schema } },
  };
}

function success(answer: RouteAnswer): Record<string, unknown> {
  switch (answer) {
    case 'subscriptionCreated':
      return {
        '201': json('Created; `secret` (HMAC) is shown only here', ref('SubscriptionCreated'), {
          Location: { schema: { type: 'string' }, description: 'The subscription' },
          ...NO_STORE,
        }),
      };
    case 'subscriptionPage':
      return { '200': json('One page, in creation order', ref('SubscriptionPage'), LINK) };
    case 'subscription':
      return { '200': json('The subscription', ref('Subscription')) };
    case 'subscriptionChanged':
      return {
        '200': json(
          'The subscription after the change; with the new secret or public key when signatureType changed',
          ref('SubscriptionChanged'),
        ),
      };
    case 'noContent':
      return { '204': { description: 'Deleted' } };
    case 'rotation':
      return { '200': json('The new secret or public key', ref('Rotation'), NO_STORE) };
    case 'attemptPage':
      return { '200': json('One page, newest first', ref('AttemptPage'), LINK) };
    case 'subscriptionReplay':
      return {
        '202': json('Accepted; beyond the inline allowance, paced', ref('SubscriptionReplay')),
      };
    case 'messageReplay':
      return { '202': json('Accepted; beyond the inline allowance, paced', ref('MessageReplay')) };
    case 'openApiDocument':
      return {
        '200': json('This document', {
          type: 'object',
          required: ['openapi', 'info', 'paths'],
          properties: { openapi: { const: '3.1.0' } },
        }),
      };
  }
}

function problemAnswer(description: string, codes: readonly Code[]) {
  const statuses = [...new Set(codes.map((code) => STATUS[code]))];
  const issues = [...new Set(codes.flatMap((code) => ISSUE_CODES[code] ?? []))];
  const paginated = codes.some((code) =>
    (paginationErrorCodes as readonly string[]).includes(code),
  );
  return {
    description,
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: {
          type: 'object',
          required: ['type', 'title', 'status', 'code'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: statuses.length === 1 ? { const: statuses[0] } : { enum: statuses },
            code: { enum: codes },
            detail: { type: 'string' },
            instance: { type: 'string' },
            parameter: { type: 'string' },
            retryAfterSeconds: { type: 'integer', minimum: 0 },
            ...(issues.length === 0 && !paginated
              ? {}
              : {
                  errors: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['code'],
                      properties: {
                        code: paginated ? { type: 'string' } : { enum: issues },
                        path: { type: 'string' },
                        parameter: { type: 'string' },
                        message: { type: 'string' },
                        detail: { type: 'string' },
                        suggestion: { type: 'string' },
                      },
                      additionalProperties: false,
                    },
                  },
                }),
          },
          additionalProperties: false,
        },
      },
    },
  };
}

function rateLimited() {
  return {
    description: 'Rate limit exceeded (behind a limiter)',
    headers: {
      'Retry-After': { schema: { type: 'string' }, description: 'Seconds to wait' },
    },
    content: { 'text/plain': { schema: { type: 'string' } } },
  };
}
