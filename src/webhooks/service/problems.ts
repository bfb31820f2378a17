/** The problem details answers of the webhook service (see docs/webhook-service.md). @module */
import { problemDetails, problemResponse, type ResponseParts } from '../../http/problem-details.js';
import type { SubscriptionPatchIssue } from '../subscriptions/subscription-patch.js';

/**
 * The problem codes the webhook service answers with, besides those of the pagination validators
 * (`page_size_too_large`, `cursor_invalid_signature`, ...) and of the create validation
 * (`invalid_subscription_request`).
 */
export const webhookServiceProblemCodes = [
  'unauthenticated',
  'request_not_attributed',
  'portal_token_invalid',
  'portal_token_expired',
  'portal_read_only',
  'route_not_found',
  'method_not_allowed',
  'unsupported_media_type',
  'body_too_large',
  'invalid_json',
  'invalid_subscription_change',
  'invalid_query',
  'cursor_account_mismatch',
  'subscription_not_found',
  'subscription_limit_reached',
  'subscription_disabled',
  'message_not_found',
  'invalid_replay',
  'service_unavailable',
  'internal_error',
] as const;

/** A code of {@link webhookServiceProblemCodes}. */
export type WebhookServiceProblemCode = (typeof webhookServiceProblemCodes)[number];

/** One answer as problem details. @internal */
export function serviceProblem(
  status: number,
  code: WebhookServiceProblemCode,
  title: string,
  more: {
    readonly detail: string;
    readonly headers?: Readonly<Record<string, string>>;
    readonly extensions?: Record<string, unknown>;
  },
): ResponseParts {
  const parts = problemResponse(
    problemDetails({
      code,
      title,
      status,
      detail: more.detail,
      ...(more.extensions === undefined ? {} : { extensions: more.extensions }),
    }),
  );
  return { ...parts, headers: { ...parts.headers, ...more.headers } };
}

/** 404 for an id the account does not hold (another account's id reads the same). @internal */
export function subscriptionNotFound(id: string): ResponseParts {
  const shown = id.length > 64 ? `${id.slice(0, 64)}…` : id;
  return serviceProblem(404, 'subscription_not_found', 'Subscription not found', {
    detail: `This account has no subscription with id ${JSON.stringify(shown)}; list them with GET /v1/subscriptions.`,
  });
}

/** 404 for a message id the account does not hold. @internal */
export function messageNotFound(id: string): ResponseParts {
  const shown = id.length > 64 ? `${id.slice(0, 64)}…` : id;
  return serviceProblem(404, 'message_not_found', 'Message not found', {
    detail: `This account has no message with id ${JSON.stringify(shown)} on record (messages are kept as long as their attempts); the id is the webhook-id header of its deliveries.`,
  });
}

/** 400 with every issue of a body and its JSON pointer. @internal */
export function invalidBody(
  code: 'invalid_subscription_change',
  title: string,
  issues: readonly SubscriptionPatchIssue[],
): ResponseParts {
  const count = `${issues.length} ${issues.length === 1 ? 'error' : 'errors'}`;
  return serviceProblem(400, code, title, {
    detail: `${count}: ${issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join(' ')}`,
    extensions: { errors: issues },
  });
}

/** 500: the service failed; the cause went to `onError`, never to the client. @internal */
export function internalError(): ResponseParts {
  return serviceProblem(500, 'internal_error', 'Internal error', {
    detail: 'The service failed to answer this request; it was reported. Try again later.',
  });
}
