/**
 * The webhook service's replays: `POST /v1/messages/{id}/replay` sends one message again to each
 * subscription that failed it; `POST /v1/subscriptions/{id}/replay` with `{ "since": … }` sends
 * every message a subscription failed since a time. Both keep the message's `webhook-id`; a
 * replay beyond a subscription's inline allowance is accepted and paced, per subscription across
 * calls and instances (see ReplayPlan).
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import type { ReplayResult } from '../store/repository.js';
import { pointer } from '../subscriptions/subscription-body.js';
import { parseDateTime } from './attempts.js';
import type { OperationRequest, ServiceContext } from './context.js';
import { messageNotFound, serviceProblem, subscriptionNotFound } from './problems.js';
import { readJsonBody } from './request-body.js';

/** `POST /v1/messages/{id}/replay`: a body, if any, is not read. @internal */
export async function replayMessage(
  context: ServiceContext,
  input: OperationRequest,
): Promise<ResponseParts> {
  const result = await context.replay(input.accountCode, { messageId: input.id });
  if (!result.found) return messageNotFound(input.id);
  return accepted(context, { messageId: input.id }, result);
}

/** `POST /v1/subscriptions/{id}/replay` with `{ "since": "<RFC 3339>" }`. @internal */
export async function replaySubscription(
  context: ServiceContext,
  input: OperationRequest,
): Promise<ResponseParts> {
  const body = await readJsonBody(input.request, context.maxBodyBytes);
  if (!body.ok) return body.response;
  const since = readSince(body.value, context.clock.now());
  if (typeof since !== 'number') return since;
  const held = await context.repository.get(input.accountCode, input.id);
  if (held === undefined) return subscriptionNotFound(input.id);
  if (held.status !== 'enabled') {
    return serviceProblem(409, 'subscription_disabled', 'Subscription disabled', {
      detail: `The subscription is disabled (${held.disabledReason ?? 'requested'}); enable it first with PATCH {"status":"enabled"}, then replay its failed messages.`,
    });
  }
  const result = await context.replay(input.accountCode, { subscriptionId: input.id, since });
  return accepted(
    context,
    { subscriptionId: input.id, since: new Date(since).toISOString() },
    result,
  );
}

/** `since` of the body as ms, or the 400 that says what to send. */
function readSince(value: unknown, now: number): number | ResponseParts {
  const example = '{"since":"2026-01-01T00:00:00Z"}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return invalidReplay('invalid_type', '', `The body must be a JSON object like ${example}.`);
  }
  const unknown = Object.keys(value).filter((key) => key !== 'since');
  if (unknown.length > 0) {
    return invalidReplay(
      'unknown_member',
      pointer(unknown[0] as string),
      `Unknown member ${JSON.stringify(unknown[0]?.slice(0, 40))}; the body takes only since, like ${example}.`,
    );
  }
  const { since } = value as { since?: unknown };
  if (since === undefined) {
    return invalidReplay(
      'required',
      '/since',
      `since is required: the time from which failed messages are sent again, like ${example}.`,
    );
  }
  const ms = typeof since === 'string' ? parseDateTime(since) : Number.NaN;
  if (Number.isNaN(ms)) {
    return invalidReplay(
      'invalid_date_time',
      '/since',
      `since must be an RFC 3339 date-time with a time zone, like ${example}.`,
    );
  }
  if (ms > now) {
    return invalidReplay(
      'in_future',
      '/since',
      'since is in the future: no message failed after it yet; give an earlier time.',
    );
  }
  return ms;
}

function accepted(
  context: ServiceContext,
  selection: Record<string, string>,
  result: ReplayResult,
): ResponseParts {
  const paced = result.total - result.due.length;
  // The repository tells when the last paced one is due (its pacing spans calls); one that does
  // not is taken to pace this call's alone.
  const pacedUntil = result.pacedUntil ?? context.clock.now() + paced * context.replayPaceMs;
  return {
    status: 202,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({
      ...selection,
      deliveries: result.total,
      queued: result.due.length,
      paced,
      ...(paced > 0 ? { pacedUntil: new Date(pacedUntil).toISOString() } : {}),
    }),
  };
}

/** The codes of a replay body's issues. @internal */
export const replayIssueCodes = [
  'invalid_type',
  'unknown_member',
  'required',
  'invalid_date_time',
  'in_future',
] as const;

type ReplayIssueCode = (typeof replayIssueCodes)[number];

function invalidReplay(code: ReplayIssueCode, pointer: string, message: string): ResponseParts {
  return serviceProblem(400, 'invalid_replay', 'Invalid replay', {
    detail: `1 error: ${pointer || '(body)'}: ${message}`,
    extensions: { errors: [{ code, path: pointer, message }] },
  });
}
