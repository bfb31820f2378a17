/** The create-subscription operation: 201 with the subscription, or every error. @module */
import { aClock, type Clock, systemClock } from '../../clock.js';
import type { ProblemDetails, ResponseParts } from '../../http/problem-details.js';
import { problemDetails, problemResponse } from '../../http/problem-details.js';
import {
  aFunction,
  aString,
  checkValue,
  readOptions,
  wholeNumber,
  withMethods,
  worded,
} from '../../internal/options.js';
import { DATE_TIME } from '../events/payload.js';
import type { Subscription } from './subscription.js';
import type { SubscriptionIndex } from './subscription-index.js';
import type { SubscriptionRequestOptions } from './subscription-request.js';
import { SUBSCRIPTION_RULES, validateSubscriptionRequest } from './subscription-request.js';
import type { SubscriptionRequestIssue } from './subscription-request-result.js';

/** The problem code of a refused create request. */
export const INVALID_SUBSCRIPTION_REQUEST = 'invalid_subscription_request';

/** How the create operation behaves. */
export interface CreateSubscriptionOptions extends SubscriptionRequestOptions {
  /** Where the creation time comes from. @defaultValue {@link systemClock} */
  clock?: Clock;
  /** Makes subscription ids. @defaultValue `crypto.randomUUID` */
  generateId?: () => string;
  /** Where the subscription is stored once valid; leave out to store it yourself. */
  index?: Pick<SubscriptionIndex, 'add'>;
  /** The status of a refusal, a 4xx. @defaultValue 400 */
  errorStatus?: number;
  /** Prefix of the problem `type`. @defaultValue {@link DEFAULT_PROBLEM_TYPE_BASE} */
  problemTypeBase?: string;
  /** The collection path; the `location` header is this plus `/` and the id. @defaultValue `/v1/subscriptions` */
  collectionPath?: string;
}

/** What the handler answers: the stored subscription, or every issue. */
export type CreateSubscriptionOutcome =
  | {
      /** Created. */
      readonly ok: true;
      /** 201 Created. */
      readonly status: 201;
      /** The stored subscription. */
      readonly subscription: Subscription;
      /** 201, `location` and the subscription as JSON. */
      readonly response: ResponseParts;
    }
  | {
      /** Refused. */
      readonly ok: false;
      /** The configured 4xx (400 by default). */
      readonly status: number;
      /** Every issue found, each with its JSON pointer. */
      readonly issues: readonly SubscriptionRequestIssue[];
      /** The problem details body, with the issues in its `errors` member. */
      readonly problem: ProblemDetails;
      /** The status, `application/problem+json` and the body. */
      readonly response: ResponseParts;
    };

const CREATE_RULES = {
  ...SUBSCRIPTION_RULES,
  clock: aClock,
  generateId: aFunction<() => string>('returns a new id'),
  index: withMethods<Pick<SubscriptionIndex, 'add'>>(['add'], 'a SubscriptionIndex'),
  errorStatus: worded(wholeNumber(400, 499), 'a 4xx status from 400 to 499'),
  problemTypeBase: worded(
    aString(Number.MAX_SAFE_INTEGER, 0),
    'a string (the prefix of the problem type)',
  ),
  collectionPath: worded(aString(Number.MAX_SAFE_INTEGER, 0), 'a path such as /v1/subscriptions'),
};

const NEW_ID = worded(aString(Number.MAX_SAFE_INTEGER), 'a non-empty string');

const ACCOUNT_CODE = worded(
  aString(Number.MAX_SAFE_INTEGER),
  'the non-empty code of the authenticated account',
);

/**
 * Create a subscription for an account from a request body.
 * @param accountCode - the authenticated account the subscription belongs to
 * @throws ConfigurationError when `options` is not an object or an option is wrong (as for
 *   {@link validateSubscriptionRequest}), the id source returns no string, or the
 *   clock returns no time a Date can hold
 * @example
 * ```ts
 * const outcome = createSubscription(
 *   { endpointUrl: 'https://hooks.example.com/in', events: ['reservation/*', 'folio/created'] },
 *   'ACME',
 *   { index },
 * );
 * res.writeHead(outcome.response.status, outcome.response.headers).end(outcome.response.body);
 * ```
 */
export function createSubscription(
  body: unknown,
  accountCode: string,
  options: CreateSubscriptionOptions = {},
): CreateSubscriptionOutcome {
  const read = readOptions(options, 'createSubscription', CREATE_RULES, {
    defaults: {
      errorStatus: 400,
      generateId: () => globalThis.crypto.randomUUID(),
      clock: systemClock,
      collectionPath: '/v1/subscriptions',
    },
    example: '{ index }',
  });
  const { errorStatus, generateId, clock, index, problemTypeBase, collectionPath } = read;
  checkValue(ACCOUNT_CODE, accountCode, 'accountCode');
  const { endpointUrl, catalog, maxEvents, maxPropertyIds, maxPropertyIdLength } = read;
  const validated = validateSubscriptionRequest(body, {
    endpointUrl,
    catalog,
    maxEvents,
    maxPropertyIds,
    maxPropertyIdLength,
  } as SubscriptionRequestOptions);
  if (!validated.ok) {
    const { issues } = validated;
    const problem = problemDetails({
      code: INVALID_SUBSCRIPTION_REQUEST,
      title: 'Invalid subscription request',
      status: errorStatus,
      detail: `${issues.length} ${issues.length === 1 ? 'error' : 'errors'}: ${issues.map((i) => `${i.path || '(body)'}: ${i.message}`).join(' ')}`,
      ...(problemTypeBase === undefined ? {} : { typeBase: problemTypeBase }),
      extensions: { errors: issues },
    });
    return { ok: false, status: errorStatus, issues, problem, response: problemResponse(problem) };
  }
  const id = checkValue(NEW_ID, generateId(), 'generateId()');
  const createdAt = new Date(checkValue(DATE_TIME, clock.now(), 'clock.now()'));
  const subscription: Subscription = Object.freeze({
    id,
    accountCode,
    ...validated.value,
    createdAt: createdAt.toISOString(),
  });
  index?.add(subscription);
  return {
    ok: true,
    status: 201,
    subscription,
    response: {
      status: 201,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        location: `${collectionPath}/${encodeURIComponent(id)}`,
        'cache-control': 'no-store',
      },
      body: JSON.stringify(subscription),
    },
  };
}
