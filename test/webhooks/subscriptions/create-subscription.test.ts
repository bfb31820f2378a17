// The create operation: 201 with the stored subscription, or problem details with every error.
import { describe, expect, it } from 'vitest';
import {
  createSubscription,
  DEFAULT_PROBLEM_TYPE_BASE,
  FakeClock,
  INVALID_SUBSCRIPTION_REQUEST,
  isConfigurationError,
  SubscriptionIndex,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

const body = {
  endpointUrl: 'https://hooks.example.com/in',
  events: ['reservation/*', 'folio/created', 'folio/charges-changed'],
};

function ids(start = 1): () => string {
  let next = start;
  return () => `sub-${next++}`;
}

describe('createSubscription', () => {
  it('answers 201 with the stored subscription, its location, id and creation time, and stores it', () => {
    const index = new SubscriptionIndex();
    const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5));
    const outcome = createSubscription(body, 'ACME', { index, clock, generateId: ids() });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    const expected = {
      id: 'sub-1',
      accountCode: 'ACME',
      endpointUrl: 'https://hooks.example.com/in',
      events: ['reservation/*', 'folio/created', 'folio/charges-changed'],
      createdAt: '2026-01-02T03:04:05.000Z',
    };
    expect(outcome.subscription).toEqual(expected);
    expect(outcome.response.status).toBe(201);
    expect(outcome.response.headers).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      location: '/v1/subscriptions/sub-1',
    });
    expect(JSON.parse(outcome.response.body)).toEqual(expected);
    expect(index.get('sub-1')).toBe(outcome.subscription);
    expect(
      index.match({ accountCode: 'ACME', kind: 'reservation/created', propertyId: 'BER' }),
    ).toEqual([outcome.subscription]);
  });

  it('keeps propertyIds when given and omits them when not', () => {
    const outcome = createSubscription({ ...body, propertyIds: ['BER'] }, 'ACME', {
      generateId: ids(),
    });
    expect(outcome.ok && outcome.subscription.propertyIds).toEqual(['BER']);
    const without = createSubscription(body, 'ACME', { generateId: ids() });
    expect(without.ok && 'propertyIds' in without.subscription).toBe(false);
  });

  it('assigns a UUID by default', () => {
    const outcome = createSubscription(body, 'ACME');
    expect(outcome.ok && outcome.subscription.id).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  it('answers 400 problem details listing every error, and stores nothing', () => {
    const index = new SubscriptionIndex();
    const outcome = createSubscription({ endpointUrl: 'http://127.0.0.1/', events: [] }, 'ACME', {
      index,
    });
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.status).toBe(400);
    expect(outcome.response.headers['content-type']).toBe(
      'application/problem+json; charset=utf-8',
    );
    const problem = JSON.parse(outcome.response.body);
    expect(problem).toMatchObject({
      type: `${DEFAULT_PROBLEM_TYPE_BASE}${INVALID_SUBSCRIPTION_REQUEST}`,
      status: 400,
      code: INVALID_SUBSCRIPTION_REQUEST,
    });
    expect(problem.errors.map((e: { path: string; code: string }) => [e.path, e.code])).toEqual([
      ['/endpointUrl', 'url_scheme_not_allowed'],
      ['/endpointUrl', 'url_forbidden_address'],
      ['/events', 'empty_array'],
    ]);
    expect(problem.detail).toMatch(/^3 errors: \/endpointUrl: /);
    expect(index.size).toBe(0);
  });

  it('uses the configured status, problem type base and collection path', () => {
    const refused = createSubscription(null, 'ACME', {
      errorStatus: 422,
      problemTypeBase: 'https://docs.example.com/p/',
    });
    expect(refused.status).toBe(422);
    expect(!refused.ok && refused.problem.type).toBe(
      'https://docs.example.com/p/invalid_subscription_request',
    );
    expect(!refused.ok && refused.problem.detail).toMatch(/^1 error: \(body\): /);
    const created = createSubscription(body, 'ACME', {
      collectionPath: '/hooks',
      generateId: () => 'a b',
    });
    expect(created.response.headers.location).toBe('/hooks/a%20b');
  });

  it.each([
    [{ errorStatus: 500 }, 'ACME', 'errorStatus must be a 4xx status from 400 to 499, got 500.'],
    [{ errorStatus: 399 }, 'ACME', 'errorStatus must be a 4xx status from 400 to 499, got 399.'],
    [
      { errorStatus: Number.NaN },
      'ACME',
      'errorStatus must be a 4xx status from 400 to 499, got NaN.',
    ],
    [{}, '', 'accountCode must be the non-empty code of the authenticated account, got "".'],
    [{ generateId: () => '' }, 'ACME', 'generateId() must be a non-empty string, got "".'],
    [{ generateId: () => 7 }, 'ACME', 'generateId() must be a non-empty string, got 7.'],
    [
      { endpointUrl: { maxLenght: 10 } },
      'ACME',
      'endpointUrl has no option "maxLenght"; did you mean "maxLength"? Its options are allow, maxLength, allowHttp.',
    ],
    [
      { endpointUrl: [] },
      'ACME',
      "endpointUrl must be an object such as { allowHttp: true, allow: ['10.0.0.0/8'] }, got an array.",
    ],
  ])('throws a ConfigurationError for %j with account %j', (options, account, message) => {
    const caught = thrown(() => createSubscription(body, account, options as never));
    expect(isConfigurationError(caught)).toBe(true);
    expect((caught as Error).message).toBe(message);
  });

  it('throws a ConfigurationError for options that are null, and for a bad option whatever the body', () => {
    const nullOptions = thrown(() => createSubscription(body, 'ACME', null as never));
    expect(isConfigurationError(nullOptions) && nullOptions.code).toBe('invalid_option');
    for (const request of [body, {}, null]) {
      const caught = thrown(() =>
        createSubscription(request, 'ACME', { endpointUrl: { allow: '10.0.0.0/8' as never } }),
      );
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_address_allow_list');
    }
  });

  it('throws a ConfigurationError and stores nothing for a clock whose time no Date can hold', () => {
    for (const [time, got] of [
      [Number.NaN, 'NaN'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
      [1e20, '100000000000000000000'],
      ['0', '"0"'],
    ] as const) {
      const index = new SubscriptionIndex();
      const caught = thrown(() =>
        createSubscription(body, 'ACME', { index, clock: { now: () => time as number } }),
      );
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_option');
      expect((caught as Error).message).toBe(
        `clock.now() must be a time in ms that a Date can hold (a finite number within ±8.64e15), got ${got}.`,
      );
      expect(index.size).toBe(0);
    }
  });
});
