/** The error the webhook service's client throws: the service's problem, or why none came. @module */
import { ApiConventionsError, type ErrorOptions, errorName } from './index.js';

/**
 * The client's own codes, for failures with no problem from the service. A test pins this list.
 * Any other `code` of a {@link WebhookApiError} is the problem code the service answered
 * (docs/webhook-service.md, "Problem codes").
 */
export const webhookApiErrorCodes = [
  // The request was not answered: fetch rejected (connection refused, DNS, CORS, abort).
  'network_error',
  // An answer the client cannot read: an error status without a problem body, or a success
  // whose body is not the JSON expected.
  'invalid_response',
  // A 429 that was still a 429 once the retries Retry-After asked for were spent.
  'rate_limited',
] as const;

/** A code of the client itself; see {@link webhookApiErrorCodes}. */
export type WebhookApiClientErrorCode = (typeof webhookApiErrorCodes)[number];

/** One issue of a problem: its code, the JSON pointer of the offending member, and what to change. */
export interface WebhookApiIssue {
  /** Stable code of the issue (`wrong_type`, `forbidden_header`, ...). */
  readonly code: string;
  /** The JSON pointer of the member in the request body (`/headers/X-Foo`; `""` for the body). */
  readonly path: string;
  /** What is wrong with it. */
  readonly message: string;
}

/** What a {@link WebhookApiError} carries besides its code and message. */
export interface WebhookApiErrorDetails {
  /** The method and URL of the request. */
  readonly method: string;
  /** The request's URL. */
  readonly url: string;
  /** The HTTP status; `undefined` when no answer came. */
  readonly status?: number | undefined;
  /** The problem's `title`. */
  readonly title?: string | undefined;
  /** The problem's `detail`. */
  readonly detail?: string | undefined;
  /** The query parameter a problem names (`parameter` of `invalid_query`). */
  readonly parameter?: string | undefined;
  /** Each issue of the problem, with its JSON pointer. */
  readonly errors?: readonly WebhookApiIssue[] | undefined;
  /** The whole problem body, as answered. */
  readonly problem?: Readonly<Record<string, unknown>> | undefined;
}

/** Thrown by the webhook service's client for every answer that is not a success. */
export class WebhookApiError extends ApiConventionsError {
  /** The service's problem code, or one of {@link webhookApiErrorCodes}. */
  declare readonly code: string;
  /** The request's method. */
  readonly method: string;
  /** The request's URL. */
  readonly url: string;
  /** The HTTP status; `undefined` for `network_error`. */
  readonly status: number | undefined;
  /** The problem's `title`. */
  readonly title: string | undefined;
  /** The problem's `detail`. */
  readonly detail: string | undefined;
  /** The query parameter the problem names, if any. */
  readonly parameter: string | undefined;
  /** Each issue of the problem, with its JSON pointer; empty when it lists none. */
  readonly errors: readonly WebhookApiIssue[];
  /** The problem body as answered, if any. */
  readonly problem: Readonly<Record<string, unknown>> | undefined;

  /** @param details - the request and what the service answered of it */
  constructor(
    code: string,
    message: string,
    details: WebhookApiErrorDetails,
    options?: ErrorOptions,
  ) {
    super(code, message, options);
    this.name = 'WebhookApiError';
    this.method = details.method;
    this.url = details.url;
    this.status = details.status;
    this.title = details.title;
    this.detail = details.detail;
    this.parameter = details.parameter;
    this.errors = details.errors ?? [];
    this.problem = details.problem;
  }
}

/** True for a {@link WebhookApiError}, also from another copy of the package. */
export function isWebhookApiError(value: unknown): value is WebhookApiError {
  return errorName(value) === 'WebhookApiError';
}
