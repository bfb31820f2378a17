/**
 * The operations of the webhook service's API on the repository: each takes the request of an
 * identified account and returns the response as parts.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { problemResponse } from '../../http/problem-details.js';
import { pageNumberNavigation } from '../../pagination/links.js';
import { generateWebhookSecret } from '../signing/signature.js';
import { generateWebhookKeyPairAsync } from '../signing/signing-key.js';
import { createSubscription } from '../subscriptions/create-subscription.js';
import type { SignatureType, StoredSubscription } from '../subscriptions/subscription.js';
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
  rotate: rotateSecret,
  auditLogs,
  attempts: subscriptionAttempts,
  replaySubscription,
  replayMessage,
  openApi: async (context) => ({
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: context.openApi(),
  }),
};

/**
 * A subscription as the API shows it: never its account, revision or secrets; the public key of an
 * ed25519 one, which is no secret.
 * @internal
 */
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
    ...(stored.publicKey === undefined ? {} : { publicKey: stored.publicKey }),
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
  const key = await newSecret(outcome.subscription.signatureType ?? 'hmac-sha256');
  const stored = await context.repository.create(outcome.subscription, key.secret, {
    at: Date.parse(outcome.subscription.createdAt),
    maxPerAccount: context.maxPerAccount,
    publicKey: key.publicKey,
  });
  if (stored === undefined) {
    return serviceProblem(409, 'subscription_limit_reached', 'Too many subscriptions', {
      detail: `This account holds ${context.maxPerAccount} subscriptions, the most it may; delete one it no longer needs first.`,
    });
  }
  await context.settle(stored);
  // An ed25519 subscription's view shows its public key; its signing key never leaves the service.
  return json(
    201,
    { ...subscriptionView(stored), ...key.shown },
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
  const { accountCode, id } = input;
  const at = clock.now();
  // The type is never changed alone: a change of type is a rotation to a secret of the new type
  // (the old one signs on through the grace, so receivers can move), a change to the same type
  // changes nothing.
  const { signatureType, ...others } = patch.value;
  let current: StoredSubscription | undefined;
  let rotated: Rotation | undefined;
  if (signatureType !== undefined) {
    current = await repository.get(accountCode, id);
    if (current === undefined) return subscriptionNotFound(id);
    if (current.signatureType !== signatureType) {
      rotated = await rotate(context, accountCode, id, signatureType, at);
      if (rotated === undefined) return subscriptionNotFound(id);
    }
  }
  // Nothing else to change: the subscription as read, unless a rotation changed it since.
  const stored =
    Object.keys(others).length > 0
      ? await repository.update(accountCode, id, others, at)
      : rotated === undefined && current !== undefined
        ? current
        : await repository.get(accountCode, id);
  if (stored === undefined) return subscriptionNotFound(id);
  await context.settle(stored);
  if (rotated === undefined) return json(200, subscriptionView(stored));
  return json(200, { ...subscriptionView(stored), ...rotated }, { 'cache-control': 'no-store' });
}

async function remove(context: ServiceContext, input: OperationRequest): Promise<ResponseParts> {
  const { repository, clock } = context;
  if (!(await repository.delete(input.accountCode, input.id, clock.now()))) {
    return subscriptionNotFound(input.id);
  }
  await context.settle();
  return { status: 204, headers: {}, body: '' };
}

async function rotateSecret(
  context: ServiceContext,
  input: OperationRequest,
): Promise<ResponseParts> {
  const { accountCode, id } = input;
  // A new secret of the subscription's type: an HMAC secret, or an ed25519 key pair.
  const current = await context.repository.get(accountCode, id);
  const rotated =
    current === undefined
      ? undefined
      : await rotate(context, accountCode, id, current.signatureType, context.clock.now());
  if (rotated === undefined) return subscriptionNotFound(id);
  // A rotation is a change: applied before the answer, so that this instance signs with the new
  // secret from its next attempt on.
  await context.settle();
  return json(200, rotated, { 'cache-control': 'no-store' });
}

/** What a rotation answers once: the new secret or public key, and the end of the old ones. */
type Rotation = NewSecret['shown'] & { readonly previousSecretsExpireAt: string };

/**
 * Rotate the subscription to a new secret of `type` (which it takes): its secrets so far sign on
 * until the grace ends.
 * @returns what to answer, or `undefined` when there is no such subscription
 */
async function rotate(
  context: ServiceContext,
  accountCode: string,
  id: string,
  type: SignatureType,
  at: number,
): Promise<Rotation | undefined> {
  const key = await newSecret(type);
  const rotated = await context.repository.rotateSecret(accountCode, id, key.secret, {
    at,
    graceMs: context.graceMs,
    publicKey: key.publicKey,
    signatureType: type,
  });
  if (!rotated) return undefined;
  return { ...key.shown, previousSecretsExpireAt: new Date(at + context.graceMs).toISOString() };
}

/** A new secret: what the repository keeps, and what the answer shows once. */
interface NewSecret {
  /** An HMAC secret (`whsec_…`) or an ed25519 signing key (`whsk_…`): kept, encrypted at rest. */
  readonly secret: string;
  /** The public key of a signing key (`whpk_…`), kept beside it. */
  readonly publicKey: string | undefined;
  /** The HMAC secret, or the public key: never the signing key. */
  readonly shown: { readonly secret: string } | { readonly publicKey: string };
}

// The key pair through WebCrypto where the runtime has no node:crypto.
async function newSecret(type: SignatureType): Promise<NewSecret> {
  if (type === 'hmac-sha256') {
    const secret = generateWebhookSecret();
    return { secret, publicKey: undefined, shown: { secret } };
  }
  const { signingKey, publicKey } = await generateWebhookKeyPairAsync();
  return { secret: signingKey, publicKey, shown: { publicKey } };
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
