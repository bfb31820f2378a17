/**
 * The operations of the webhook service's API on the repository: each takes the request of an
 * identified account and returns the response as parts.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { problemResponse } from '../../http/problem-details.js';
import { pageNumberNavigation } from '../../pagination/links.js';
import { generateWebhookSecret } from '../signing/signature.js';
import { createSubscription } from '../subscriptions/create-subscription.js';
import type { StoredSubscription } from '../subscriptions/subscription.js';
import { validateSubscriptionPatch } from '../subscriptions/subscription-patch.js';
import { auditLogs, subscriptionAttempts } from './attempts.js';
import type { OperationRequest, ServiceContext } from './context.js';
import { invalidBody, serviceProblem, subscriptionNotFound } from './problems.js';
import { replayMessage, replaySubscription } from './replay.js';
import { readJsonBody } from './request-body.js';
import type { Operation } from './routes.js';

type Handler = (context: ServiceContext, input: OperationRequest) => Promise<ResponseParts>;

/** The handler of each operation. @internal */
export const operations: Readonly<Record<Operation, Handler>> = {
  create,
  list,
  read,
  change,
  delete: remove,
  rotate,
  auditLogs,
  attempts: subscriptionAttempts,
  replaySubscription,
  replayMessage,
};

/** A subscription as the API shows it: never its account, revision or secrets. @internal */
export function subscriptionView(stored: StoredSubscription) {
  const { id, endpointUrl, events, propertyIds, status, createdAt, updatedAt } = stored;
  const { disabledReason, disabledAt, description, rateLimit, headers, metadata } = stored;
  return {
    id,
    endpointUrl,
    events,
    // Left out when it covers every property: the specification's "omission acts as a wildcard".
    ...(propertyIds === undefined ? {} : { propertyIds }),
    // The optional settings, each when set.
    ...(description === undefined ? {} : { description }),
    ...(rateLimit === undefined ? {} : { rateLimit }),
    ...(headers === undefined ? {} : { headers }),
    ...(metadata === undefined ? {} : { metadata }),
    signatureType: stored.signatureType,
    status,
    // Why and when, while disabled.
    ...(status === 'disabled' && disabledReason !== undefined ? { disabledReason } : {}),
    ...(status === 'disabled' && disabledAt !== undefined ? { disabledAt } : {}),
    createdAt,
    updatedAt,
  };
}

async function create(context: ServiceContext, input: OperationRequest): Promise<ResponseParts> {
  const body = await readJsonBody(input.request, context.maxBodyBytes);
  if (!body.ok) return body.response;
  const outcome = createSubscription(body.value, input.accountCode, context.create);
  if (!outcome.ok) return outcome.response;
  const secret = generateWebhookSecret();
  const stored = await context.repository.create(outcome.subscription, secret, {
    at: Date.parse(outcome.subscription.createdAt),
    maxPerAccount: context.maxPerAccount,
  });
  if (stored === undefined) {
    return serviceProblem(409, 'subscription_limit_reached', 'Too many subscriptions', {
      detail: `This account holds ${context.maxPerAccount} subscriptions, the most it may; delete one it no longer needs first.`,
    });
  }
  await context.settle(stored);
  return json(
    201,
    { ...subscriptionView(stored), secret },
    {
      location: `${context.collectionPath}/${encodeURIComponent(stored.id)}`,
      'cache-control': 'no-store',
    },
  );
}

async function list(context: ServiceContext, input: OperationRequest): Promise<ResponseParts> {
  const query = context.pages(input.url.searchParams);
  if (!query.ok) return problemResponse(query.problem);
  const { pageNumber, pageSize } = query.value;
  const page = await context.repository.list(input.accountCode, {
    offset: (pageNumber - 1) * pageSize,
    limit: pageSize,
  });
  const { totalItems } = page;
  const nav = pageNumberNavigation({ url: input.url, pageNumber, pageSize, totalItems });
  return json(
    200,
    {
      items: page.items.map(subscriptionView),
      pageNumber,
      pageSize,
      totalItems,
      endOfData: nav.endOfData,
      links: nav.links,
    },
    nav.linkHeader === '' ? {} : { link: nav.linkHeader },
  );
}

async function read(context: ServiceContext, input: OperationRequest): Promise<ResponseParts> {
  const stored = await context.repository.get(input.accountCode, input.id);
  return stored === undefined
    ? subscriptionNotFound(input.id)
    : json(200, subscriptionView(stored));
}

async function change(context: ServiceContext, input: OperationRequest): Promise<ResponseParts> {
  const body = await readJsonBody(input.request, context.maxBodyBytes);
  if (!body.ok) return body.response;
  const patch = validateSubscriptionPatch(body.value, context.body);
  if (!patch.ok) {
    return invalidBody('invalid_subscription_change', 'Invalid subscription change', patch.issues);
  }
  const { repository, clock } = context;
  const stored = await repository.update(input.accountCode, input.id, patch.value, clock.now());
  if (stored === undefined) return subscriptionNotFound(input.id);
  await context.settle(stored);
  return json(200, subscriptionView(stored));
}

async function remove(context: ServiceContext, input: OperationRequest): Promise<ResponseParts> {
  const { repository, clock } = context;
  if (!(await repository.delete(input.accountCode, input.id, clock.now()))) {
    return subscriptionNotFound(input.id);
  }
  await context.settle();
  return { status: 204, headers: {}, body: '' };
}

async function rotate(context: ServiceContext, input: OperationRequest): Promise<ResponseParts> {
  const secret = generateWebhookSecret();
  const at = context.clock.now();
  const rotated = await context.repository.rotateSecret(input.accountCode, input.id, secret, {
    at,
    graceMs: context.graceMs,
  });
  if (!rotated) return subscriptionNotFound(input.id);
  // A rotation is a change: applied before the answer, so that this instance signs with the new
  // secret from its next attempt on.
  await context.settle();
  const previousSecretsExpireAt = new Date(at + context.graceMs).toISOString();
  return json(200, { secret, previousSecretsExpireAt }, { 'cache-control': 'no-store' });
}

function json(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): ResponseParts {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(body),
  };
}
