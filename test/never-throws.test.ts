/**
 * Every function documented as never throwing ("never throws", "nothing throws", "for any input"),
 * called with hostile values alone and nested inside otherwise valid inputs: each returns its typed
 * result, and a valid input in another form (frozen, null prototype, a transparent Proxy) gets the
 * answer the plain input gets.
 *
 * The catalogue, from the TSDoc and docs of src/:
 * - http: `rateLimitResponseParts`, `rateLimitResponse` and `admittedHeaders` for any decision of
 *   the right kind (docs/http.md: "for any input, even a hand-made decision"), `rateLimitFields`,
 *   `parseRetryAfter`, `parseHttpDate`, `isWellFormedTrackingId`;
 * - errors: `isApiConventionsError`, `isConfigurationError`, `isInvalidRequestError`,
 *   `isPaginationClientError`, `isWebhookApiError` ("anything caught");
 * - limits: `canonicalPath` and `RouteTable.match` for any request input, `MemoryStore.release`
 *   whatever the value, and the message helpers `describe` and `isArray` (internal);
 * - pagination: the validators of `pageNumberValidator` and `cursorValidator`, `CursorCodec.decode`,
 *   and the query readers they share (query-input.ts: "nothing here throws, whatever the input");
 * - webhooks: `validateSubscriptionRequest` and `createSubscription` for any body,
 *   `checkEndpointUrl`, `parseEventPattern`, `parseEventKind`, `SubscriptionIndex.match` and
 *   `verifyWebhook` for anything the request carries.
 * The gate's `release` and `fail` (src/http/rate-limit-gate.ts) are proved in their own tests, and
 * the Redis store's (it never throws or rejects for a plan the engine builds) in test/redis.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPaginationClientError, isWebhookApiError } from '../src/client/index.js';
import {
  admittedHeaders,
  canonicalPath,
  checkEndpointUrl,
  compileRoutes,
  concurrency,
  createCursorCodec,
  createLimiter,
  createSubscription,
  cursorValidator,
  endpointUrlErrorCodes,
  eventPatternErrorCodes,
  FakeClock,
  isApiConventionsError,
  isConfigurationError,
  isInvalidRequestError,
  isWellFormedTrackingId,
  MemoryStore,
  pageNumberValidator,
  paginationErrorCodes,
  parseEventKind,
  parseEventPattern,
  parseHttpDate,
  parseRetryAfter,
  rateLimitFields,
  rateLimitResponse,
  rateLimitResponseParts,
  SubscriptionIndex,
  signWebhook,
  subscriptionRequestErrorCodes,
  validateSubscriptionRequest,
  verifyWebhook,
  webhookVerificationErrorCodes,
  window,
} from '../src/index.js';
import { describe as describeValue, isArray } from '../src/internal/describe.js';
import { queryPairs, readParameter, toReadableQuery } from '../src/pagination/query-input.js';
import { equivalentVariant, Hostile, hostileValue, hostileVariant } from './support/hostile.js';

const RUNS = { numRuns: 300 };
const DELAY_SECONDS = /^[1-9][0-9]{0,14}$/;

// What a call answered: its result, or what it threw.
type Outcome = { returned: unknown } | { threw: unknown };

function outcome(call: () => unknown): Outcome {
  try {
    return { returned: call() };
  } catch (error) {
    return { threw: error };
  }
}

// The result, or a failure that names what was thrown (a TypeError or a hostile read's error).
function returned(call: () => unknown): unknown {
  const answer = outcome(call);
  if ('threw' in answer) {
    const error = answer.threw as { name?: unknown; message?: unknown };
    expect.fail(`threw ${String(error?.name)}: ${String(error?.message)}`);
  }
  return answer.returned;
}

// Thrown: the library's typed error for configuration, never a TypeError or a hostile read's error.
function expectConfigurationError(error: unknown): void {
  if (!isConfigurationError(error)) {
    const { name, message } = error as { name?: unknown; message?: unknown };
    expect.fail(`threw ${String(name)}: ${String(message)}`);
  }
}

function expectCodedMessage(issue: unknown, codes: readonly string[]): void {
  const { code, message } = issue as { code: unknown; message: unknown };
  expect(codes).toContain(code);
  expect(typeof message).toBe('string');
  expect((message as string).length).toBeGreaterThan(0);
}

// --- http -----------------------------------------------------------------------------------

const decisionClock = new FakeClock(1_700_000_000_000);
const limiter = createLimiter({
  policies: [window(1, '1s', { name: 'global: 1 per 1 s' }), concurrency(5)],
  clock: decisionClock,
  store: new MemoryStore(),
});
const request = { clientId: 'c', accountCode: 'ACME', method: 'GET', path: '/x' };
const admitted = limiter.check(request);
const refused = limiter.check(request);
if (!admitted.allowed || refused.allowed) throw new Error('the setup expects one admission');

// The decisions as plain data, so that any node of them can be made hostile.
const admittedData = {
  allowed: true,
  statuses: admitted.statuses.map((s) => ({ ...s })),
  now: admitted.now,
  release: () => {},
};
const refusedData = {
  allowed: false,
  retryAfterSeconds: refused.retryAfterSeconds,
  retryAt: refused.retryAt,
  policy: refused.policy,
  reason: refused.reason,
  statuses: refused.statuses.map((s) => ({ ...s })),
  now: refused.now,
};
const OPTIONS = { rateLimitHeaders: true, trackingId: 'req-1' } as const;

// `allowed` as read without a throw, or undefined.
function allowedOf(decision: unknown): unknown {
  try {
    return (decision as { allowed?: unknown }).allowed;
  } catch {
    return undefined;
  }
}

function expectRefusalParts(parts: unknown): void {
  const { status, headers, body } = parts as {
    status: unknown;
    headers: Record<string, unknown>;
    body: unknown;
  };
  expect(status).toBe(429);
  expect(headers['retry-after']).toMatch(DELAY_SECONDS);
  expect(headers['x-tracking'] ?? headers['service-tracking-id']).toBe('req-1');
  for (const value of Object.values(headers)) expect(typeof value).toBe('string');
  expect(typeof body).toBe('string');
}

// A decision of the right kind (`allowed` reads as it must) gives its parts whatever else it
// holds; one of the wrong kind is the documented ConfigurationError, never a TypeError.
function checkDecisionBuilder(decision: unknown, allowed: boolean, call: () => unknown): unknown {
  const answer = outcome(call);
  if ('threw' in answer) {
    expectConfigurationError(answer.threw);
    expect(allowedOf(decision) === allowed).toBe(false);
    return undefined;
  }
  return answer.returned;
}

describe('the 429 builders never throw for a decision of the right kind', () => {
  it('rateLimitResponseParts answers 429 for any refused decision, statuses missing or hostile', () => {
    fc.assert(
      fc.property(fc.oneof(hostileVariant(refusedData), hostileValue()), (decisionBox: Hostile) => {
        const decision = decisionBox.make();
        const parts = checkDecisionBuilder(decision, false, () =>
          rateLimitResponseParts(decision as never, OPTIONS),
        );
        if (parts !== undefined) expectRefusalParts(parts);
      }),
      RUNS,
    );
  });

  it('rateLimitResponse answers a 429 Response for any refused decision', () => {
    fc.assert(
      fc.property(hostileVariant(refusedData), (decisionBox: Hostile) => {
        const decision = decisionBox.make();
        const response = checkDecisionBuilder(decision, false, () =>
          rateLimitResponse(decision as never, OPTIONS),
        );
        if (response !== undefined) expect((response as Response).status).toBe(429);
      }),
      { numRuns: 100 },
    );
  });

  it('admittedHeaders answers string headers for any admitted decision', () => {
    fc.assert(
      fc.property(
        fc.oneof(hostileVariant(admittedData), hostileValue()),
        (decisionBox: Hostile) => {
          const decision = decisionBox.make();
          const headers = checkDecisionBuilder(decision, true, () =>
            admittedHeaders(decision as never, OPTIONS),
          );
          if (headers === undefined) return;
          for (const value of Object.values(headers as object)) expect(typeof value).toBe('string');
        },
      ),
      RUNS,
    );
  });

  it('rateLimitFields answers the two fields for any statuses', () => {
    fc.assert(
      fc.property(
        fc.oneof(hostileVariant(refusedData.statuses), hostileValue()),
        (statusesBox: Hostile) => {
          const statuses = statusesBox.make();
          const fields = returned(() => rateLimitFields(statuses as never)) as Record<
            string,
            unknown
          >;
          expect(typeof fields['ratelimit-policy']).toBe('string');
          expect(typeof fields.ratelimit).toBe('string');
        },
      ),
      RUNS,
    );
  });

  it('a valid decision in another form gets the same parts', () => {
    const plain = rateLimitResponseParts(refusedData as never, OPTIONS);
    fc.assert(
      fc.property(equivalentVariant(refusedData), (decisionBox: Hostile) => {
        const decision = decisionBox.make();
        expect(rateLimitResponseParts(decision as never, OPTIONS)).toEqual(plain);
      }),
      { numRuns: 100 },
    );
  });

  it('parseRetryAfter answers undefined or a whole number of ms', () => {
    fc.assert(
      fc.property(hostileValue(), hostileValue(), (valueBox: Hostile, nowBox: Hostile) => {
        const value = valueBox.make();
        const now = nowBox.make();
        for (const result of [
          returned(() => parseRetryAfter(value as never, now as never)),
          returned(() => parseRetryAfter(value as never, 0)),
        ]) {
          if (result !== undefined) expect(Number.isSafeInteger(result)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it('parseHttpDate answers undefined or a time', () => {
    fc.assert(
      fc.property(hostileValue(), (valueBox: Hostile) => {
        const result = returned(() => parseHttpDate(valueBox.make() as never));
        if (result !== undefined) expect(Number.isSafeInteger(result)).toBe(true);
      }),
      RUNS,
    );
  });

  const guards = {
    isWellFormedTrackingId,
    isApiConventionsError,
    isConfigurationError,
    isInvalidRequestError,
    isPaginationClientError,
    isWebhookApiError,
  };
  for (const [name, guard] of Object.entries(guards)) {
    it(`${name} answers a boolean for anything`, () => {
      fc.assert(
        fc.property(hostileValue(), (valueBox: Hostile) => {
          const value = valueBox.make();
          expect(typeof returned(() => guard(value))).toBe('boolean');
        }),
        RUNS,
      );
    });
  }
});

// --- limits ---------------------------------------------------------------------------------

describe('the route matchers never throw for any request input', () => {
  const table = compileRoutes([{ route: 'PATCH /booking/v*/bookings/{id}' }]);

  it('canonicalPath answers a path or undefined', () => {
    fc.assert(
      fc.property(hostileValue(), (rawBox: Hostile) => {
        const raw = rawBox.make();
        const path = returned(() => canonicalPath(raw));
        if (path !== undefined) expect(path).toMatch(/^\//);
      }),
      RUNS,
    );
  });

  it('RouteTable.match answers a list', () => {
    fc.assert(
      fc.property(hostileValue(), hostileValue(), (methodBox: Hostile, pathBox: Hostile) => {
        const method = methodBox.make();
        const path = pathBox.make();
        expect(Array.isArray(returned(() => table.match(method, path)))).toBe(true);
      }),
      RUNS,
    );
  });

  it('describe and isArray, which every message uses, answer for anything', () => {
    fc.assert(
      fc.property(hostileValue(), (valueBox: Hostile) => {
        const value = valueBox.make();
        expect(typeof returned(() => describeValue(value))).toBe('string');
        expect(typeof returned(() => isArray(value))).toBe('boolean');
      }),
      RUNS,
    );
  });

  it('MemoryStore.release ignores any value that is not its lease', () => {
    const store = new MemoryStore();
    fc.assert(
      fc.property(hostileValue(), (leaseBox: Hostile) => {
        const lease = leaseBox.make();
        expect(returned(() => store.release(lease as never))).toBeUndefined();
      }),
      RUNS,
    );
  });
});

// --- pagination -----------------------------------------------------------------------------

const codec = createCursorCodec<{ after: string }>({
  signingKey: 'k'.repeat(32),
  clock: new FakeClock(0),
});
const boundQuery = { status: 'open', limit: '5' };
const token = codec.encode({ after: 'a1' }, { query: boundQuery });

function expectValidation(result: unknown): void {
  const validation = result as { ok: unknown; value?: unknown; errors?: unknown[] };
  if (validation.ok === true) {
    expect(typeof validation.value).toBe('object');
    return;
  }
  expect(validation.ok).toBe(false);
  expect(validation.errors?.length).toBeGreaterThan(0);
  for (const issue of validation.errors ?? []) expectCodedMessage(issue, paginationErrorCodes);
}

const pageQuery = { pageNumber: '2', pageSize: '50', status: ['open', 'closed'] };
const cursorQuery = { ...boundQuery, cursor: token };

describe('the pagination validators never throw for any query', () => {
  const validators = {
    pageNumber: pageNumberValidator(),
    cursor: cursorValidator(),
    'cursor with a codec': cursorValidator({ codec }),
  };

  for (const [name, validate] of Object.entries(validators)) {
    it(`the ${name} validator answers a validation`, () => {
      const valid = name === 'pageNumber' ? pageQuery : cursorQuery;
      fc.assert(
        fc.property(fc.oneof(hostileValue(), hostileVariant(valid)), (queryBox: Hostile) => {
          const query = queryBox.make();
          expectValidation(returned(() => validate(query as never)));
        }),
        RUNS,
      );
    });

    it(`the ${name} validator gives a valid query in another form the same answer`, () => {
      const valid = name === 'pageNumber' ? pageQuery : cursorQuery;
      const plain = validate(valid);
      expect(plain.ok).toBe(true);
      fc.assert(
        fc.property(equivalentVariant(valid), (queryBox: Hostile) => {
          const query = queryBox.make();
          expect(validate(query as never)).toEqual(plain);
        }),
        { numRuns: 100 },
      );
    });
  }

  it('CursorCodec.decode answers a decoding for any token and options', () => {
    fc.assert(
      fc.property(
        fc.oneof(hostileValue(), fc.constant(new Hostile('the cursor', () => token))),
        fc.oneof(hostileValue(), hostileVariant({ query: boundQuery })),
        (candidateBox: Hostile, optionsBox: Hostile) => {
          const candidate = candidateBox.make();
          const options = optionsBox.make();
          const decoded = returned(() => codec.decode(candidate as never, options as never));
          if ((decoded as { ok: unknown }).ok !== true) {
            expectCodedMessage(decoded, paginationErrorCodes);
          }
        },
      ),
      RUNS,
    );
  });

  it('the query readers answer for any query', () => {
    fc.assert(
      fc.property(fc.oneof(hostileValue(), hostileVariant(pageQuery)), (queryBox: Hostile) => {
        const query = queryBox.make();
        const readable = returned(() => toReadableQuery(query));
        returned(() => readParameter(readable as never, 'pageSize'));
        const pairs = returned(() => queryPairs(query, new Set())) as { ok: unknown };
        expect(typeof pairs.ok).toBe('boolean');
      }),
      RUNS,
    );
  });
});

// --- webhooks -------------------------------------------------------------------------------

const body = {
  endpointUrl: 'https://hooks.example.com/in',
  events: ['folio/created', 'reservation/*'],
  propertyIds: ['p1', 'p2'],
};

describe('the webhook functions never throw for anything a request carries', () => {
  it('validateSubscriptionRequest answers the request or every issue', () => {
    fc.assert(
      fc.property(fc.oneof(hostileValue(), hostileVariant(body)), (candidateBox: Hostile) => {
        const candidate = candidateBox.make();
        const result = returned(() => validateSubscriptionRequest(candidate)) as {
          ok: unknown;
          issues?: unknown[];
        };
        if (result.ok === true) return;
        expect(result.ok).toBe(false);
        expect(result.issues?.length).toBeGreaterThan(0);
        for (const issue of result.issues ?? []) {
          expectCodedMessage(issue, subscriptionRequestErrorCodes);
          expect(typeof (issue as { path: unknown }).path).toBe('string');
        }
      }),
      RUNS,
    );
  });

  it('validateSubscriptionRequest gives a valid body in another form the same answer', () => {
    const plain = validateSubscriptionRequest(body);
    expect(plain.ok).toBe(true);
    fc.assert(
      fc.property(equivalentVariant(body), (candidateBox: Hostile) => {
        const candidate = candidateBox.make();
        expect(validateSubscriptionRequest(candidate)).toEqual(plain);
      }),
      { numRuns: 100 },
    );
  });

  it('createSubscription answers 201 or the refusal for any body', () => {
    fc.assert(
      fc.property(fc.oneof(hostileValue(), hostileVariant(body)), (candidateBox: Hostile) => {
        const outcome = returned(() => createSubscription(candidateBox.make(), 'acme')) as {
          status: unknown;
          response: { body: unknown };
        };
        expect([201, 400]).toContain(outcome.status);
        expect(typeof outcome.response.body).toBe('string');
      }),
      RUNS,
    );
  });

  it('checkEndpointUrl answers a result', () => {
    fc.assert(
      fc.property(hostileValue(), (inputBox: Hostile) => {
        const url = returned(() => checkEndpointUrl(inputBox.make())) as {
          ok: unknown;
          errors?: unknown[];
        };
        if (url.ok !== true) {
          for (const error of url.errors ?? []) expectCodedMessage(error, endpointUrlErrorCodes);
        }
      }),
      RUNS,
    );
  });

  for (const [name, parse] of Object.entries({ parseEventPattern, parseEventKind })) {
    it(`${name} answers a result`, () => {
      fc.assert(
        fc.property(hostileValue(), (inputBox: Hostile) => {
          const parsed = returned(() => parse(inputBox.make())) as { ok: unknown; error?: unknown };
          if (parsed.ok !== true) expectCodedMessage(parsed.error, eventPatternErrorCodes);
        }),
        RUNS,
      );
    });
  }

  it('SubscriptionIndex.match answers a list for any event', () => {
    const index = new SubscriptionIndex();
    index.add({
      id: 's1',
      accountCode: 'acme',
      endpointUrl: 'https://hooks.example.com/in',
      events: ['folio/created', 'reservation/*'],
      propertyIds: ['p1'],
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    const event = { accountCode: 'acme', kind: 'folio/created', propertyId: 'p1' };
    expect(index.match(event)).toHaveLength(1);
    fc.assert(
      fc.property(fc.oneof(hostileValue(), hostileVariant(event)), (candidateBox: Hostile) => {
        const candidate = candidateBox.make();
        expect(Array.isArray(returned(() => index.match(candidate as never)))).toBe(true);
      }),
      RUNS,
    );
  });

  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const T = 1_700_000_000;
  const verifyOptions = { secrets: secret, clock: new FakeClock(T * 1000) };
  const payload = '{"type":"folio/created"}';
  const headers = { ...signWebhook({ id: 'msg_1', timestamp: T, body: payload }, secret) };

  function expectVerification(result: unknown): void {
    if ((result as { ok: unknown }).ok === true) return;
    expectCodedMessage(result, webhookVerificationErrorCodes);
  }

  it('verifyWebhook answers a verification for any headers', () => {
    expect(verifyWebhook(payload, headers, verifyOptions).ok).toBe(true);
    fc.assert(
      fc.property(fc.oneof(hostileValue(), hostileVariant(headers)), (candidateBox: Hostile) => {
        const candidate = candidateBox.make();
        expectVerification(
          returned(() => verifyWebhook(payload, candidate as never, verifyOptions)),
        );
      }),
      RUNS,
    );
  });

  it('verifyWebhook answers a verification, or refuses a body that is not raw bytes with a ConfigurationError', () => {
    fc.assert(
      fc.property(hostileValue(), (candidateBox: Hostile) => {
        const candidate = candidateBox.make();
        const answer = outcome(() => verifyWebhook(candidate as never, headers, verifyOptions));
        if ('threw' in answer) expectConfigurationError(answer.threw);
        else expectVerification(answer.returned);
      }),
      RUNS,
    );
  });

  it('verifyWebhook gives valid headers in another form the same answer', () => {
    fc.assert(
      fc.property(equivalentVariant(headers), (candidateBox: Hostile) => {
        const candidate = candidateBox.make();
        expect(verifyWebhook(payload, candidate as never, verifyOptions)).toEqual({
          ok: true,
          id: 'msg_1',
          timestamp: T,
        });
      }),
      { numRuns: 100 },
    );
  });
});

// --- options: a typed error at worst -------------------------------------------------------

describe('options that cannot be read are a ConfigurationError, never a TypeError or a getter’s own error', () => {
  // Each call with options made hostile returns, or throws the library's ConfigurationError.
  function typedAtWorst(call: () => unknown): void {
    const answer = outcome(call);
    if ('threw' in answer) expectConfigurationError(answer.threw);
  }

  it('rateLimitResponseParts and admittedHeaders', () => {
    fc.assert(
      fc.property(hostileVariant(OPTIONS), (optionsBox: Hostile) => {
        typedAtWorst(() =>
          rateLimitResponseParts(refusedData as never, optionsBox.make() as never),
        );
        typedAtWorst(() => admittedHeaders(admittedData as never, optionsBox.make() as never));
      }),
      RUNS,
    );
  });

  it('validateSubscriptionRequest and checkEndpointUrl', () => {
    const options = {
      maxEvents: 10,
      maxPropertyIds: 10,
      maxPropertyIdLength: 20,
      endpointUrl: { allowHttp: false, maxLength: 500, allow: ['10.0.0.0/8'] },
    };
    fc.assert(
      fc.property(hostileVariant(options), (optionsBox: Hostile) => {
        const candidate = optionsBox.make() as { endpointUrl?: unknown };
        typedAtWorst(() => validateSubscriptionRequest(body, candidate as never));
        typedAtWorst(() => checkEndpointUrl(body.endpointUrl, readOrNothing(candidate) as never));
      }),
      RUNS,
    );
  });

  it('verifyWebhook', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const options = { secrets: [secret, secret], toleranceSeconds: 300 };
    fc.assert(
      fc.property(hostileVariant(options), (optionsBox: Hostile) => {
        typedAtWorst(() => verifyWebhook('x', {}, optionsBox.make() as never));
      }),
      RUNS,
    );
  });
});

// The endpointUrl member of hostile options, or the options themselves when it cannot be read.
function readOrNothing(options: { endpointUrl?: unknown }): unknown {
  try {
    return options.endpointUrl;
  } catch {
    return options;
  }
}
