import { describe, expect, it } from 'vitest';
import { MemorySubscriptionRepository } from '../../../src/index.js';
import {
  call,
  closingSetup,
  repositoryWith,
  subscriptionBody,
} from '../../support/webhook-service.js';

const setup = closingSetup();

/** A body streamed in chunks, without Content-Length; counts the chunks pulled. */
function chunked(
  chunk: Uint8Array,
  count: number,
): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === count) controller.close();
      else {
        pulled += 1;
        controller.enqueue(chunk);
      }
    },
  });
  return { stream, pulled: () => pulled };
}

describe('createWebhookService: nasty input gets problem details', () => {
  it('answers 415 unless the content type is JSON, and accepts application/json, +json and any charset', async () => {
    const { service } = setup();
    const raw = JSON.stringify(subscriptionBody());
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'json',
      'application/jsonx',
      'application/+json',
    ]) {
      const answer = await call(service, 'POST', '/v1/subscriptions', {
        raw,
        headers: { 'content-type': type },
      });
      expect(answer.status, type).toBe(415);
      expect(answer.body.code).toBe('unsupported_media_type');
    }
    expect((await call(service, 'POST', '/v1/subscriptions', { raw })).status).toBe(415);
    for (const type of [
      'application/json',
      'Application/JSON; charset=UTF-8',
      'application/merge-patch+json',
      'application/json;charset=latin1',
    ]) {
      const answer = await call(service, 'POST', '/v1/subscriptions', {
        raw,
        headers: { 'content-type': type },
      });
      expect(answer.status, type).toBe(201);
    }
    const patch = await call(service, 'PATCH', '/v1/subscriptions/x', {
      raw: '{}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(patch.status).toBe(415);
  });

  it('answers 400 invalid_json with pointer "" for bodies that are not JSON or not UTF-8', async () => {
    const { service } = setup();
    const json = { 'content-type': 'application/json' };
    for (const raw of [
      '',
      '{',
      '{"endpointUrl":}',
      'nul',
      '[1,]',
      new Uint8Array([0x7b, 0xff, 0x7d]),
    ]) {
      const answer = await call(service, 'POST', '/v1/subscriptions', { raw, headers: json });
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('invalid_json');
      expect(answer.body.errors).toEqual([
        expect.objectContaining({ code: 'invalid_json', path: '' }),
      ]);
    }
  });

  it('answers 400 with every error of the create body and its JSON pointer', async () => {
    const { service } = setup();
    const answer = await call(service, 'POST', '/v1/subscriptions', {
      body: {
        endpointUrl: 'http://x.example.com',
        events: ['nope', 'reservation/*', 'reservation/*'],
        propertyIds: [''],
        extra: 1,
        __proto__x: 2,
      },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('invalid_subscription_request');
    const paths = answer.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual([
      '/extra',
      '/__proto__x',
      '/endpointUrl',
      '/events/0',
      '/events/2',
      '/propertyIds/0',
    ]);
    for (const body of [null, [], 'text', 42, { ['__proto__']: {} }]) {
      const refused = await call(service, 'POST', '/v1/subscriptions', { body });
      expect(refused.status).toBe(400);
    }
    const proto = await call(service, 'POST', '/v1/subscriptions', {
      raw: '{"__proto__":{"status":"x"},"endpointUrl":"https://a.example.com","events":["a/b"]}',
      headers: { 'content-type': 'application/json' },
    });
    expect(proto.status).toBe(400);
    expect(proto.body.errors[0]).toMatchObject({ code: 'unknown_field', path: '/__proto__' });
  });

  it('answers 413 over maxBodyBytes: by Content-Length before reading, and by counting a chunked body', async () => {
    const { service } = setup({ maxBodyBytes: 1024 });
    const big = JSON.stringify(
      subscriptionBody({ propertyIds: Array.from({ length: 200 }, (_, i) => `P${i}`) }),
    );
    const sized = await call(service, 'POST', '/v1/subscriptions', {
      raw: big,
      headers: { 'content-type': 'application/json' },
    });
    expect(sized.status).toBe(413);
    expect(sized.body.code).toBe('body_too_large');
    // A huge declared length is refused from the header: the body is never read.
    const { stream, pulled } = chunked(new Uint8Array(10), 5);
    const declared = await call(service, 'POST', '/v1/subscriptions', {
      raw: stream,
      headers: { 'content-type': 'application/json', 'content-length': '99999999999999999999' },
    });
    expect(declared.status).toBe(413);
    expect(pulled()).toBeLessThanOrEqual(1);
    // Without a length, reading stops at the first chunk past the limit.
    const endless = chunked(new Uint8Array(256).fill(0x20), 1_000_000);
    const streamed = await call(service, 'POST', '/v1/subscriptions', {
      raw: endless.stream,
      headers: { 'content-type': 'application/json' },
    });
    expect(streamed.status).toBe(413);
    expect(endless.pulled()).toBeLessThan(10);
    const exact = JSON.stringify(subscriptionBody());
    const fits = chunked(new TextEncoder().encode(exact), 1);
    const ok = await call(service, 'POST', '/v1/subscriptions', {
      raw: fits.stream,
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status).toBe(201);
  });

  it('ids: unicode, %2F, malformed escapes, U+0000 and very long ids are 404s; an id with a slash round-trips through location', async () => {
    const ids = ['a/b', 'ünï-çødé', '☃'];
    let next = 0;
    // As PostgreSQL does, the repository fails a look-up of an id with U+0000 in it.
    const inner = new MemorySubscriptionRepository();
    const refuseNul =
      (name: 'get' | 'update' | 'delete' | 'rotateSecret' | 'replay') =>
      (account: string, id: unknown, ...rest: unknown[]) => {
        if (typeof id === 'string' && id.includes('\u0000')) {
          throw new Error('invalid byte sequence for encoding "UTF8": 0x00');
        }
        return (inner[name] as (...args: unknown[]) => unknown).call(inner, account, id, ...rest);
      };
    const repository = repositoryWith(inner, {
      get: refuseNul('get'),
      update: refuseNul('update'),
      delete: refuseNul('delete'),
      rotateSecret: refuseNul('rotateSecret'),
      replay: refuseNul('replay'),
    });
    const { service, errors } = setup({ repository, generateId: () => ids[next++] as string });
    for (const _ of ids) {
      const created = await call(service, 'POST', '/v1/subscriptions', {
        body: subscriptionBody(),
      });
      const location = created.headers.get('location') as string;
      const read = await call(service, 'GET', location);
      expect(read.status).toBe(200);
      expect(read.body.id).toBe(created.body.id);
    }
    expect((await call(service, 'GET', '/v1/subscriptions/a%2Fb')).body.id).toBe('a/b');
    expect((await call(service, 'GET', '/v1/subscriptions/a/b')).status).toBe(404);
    for (const id of [
      '%E2%98',
      '%ZZ',
      'x'.repeat(5000),
      encodeURIComponent('é'.repeat(300)),
      '%00',
      'ünï',
    ]) {
      const answer = await call(service, 'GET', `/v1/subscriptions/${id}`);
      expect(answer.status).toBe(404);
      expect(answer.headers.get('content-type')).toMatch(/problem\+json/);
      const patched = await call(service, 'PATCH', `/v1/subscriptions/${id}`, {
        body: { status: 'enabled' },
      });
      expect(patched.status).toBe(404);
    }
    for (const [method, path] of [
      ['DELETE', '/v1/subscriptions/%00'],
      ['POST', '/v1/subscriptions/a%00b/secret/rotate'],
      ['GET', '/v1/subscriptions/%00/attempts'],
      ['POST', '/v1/messages/msg_%00/replay'],
    ] as const) {
      const answer = await call(service, method, path);
      expect([path, answer.status]).toEqual([path, 404]);
    }
    const replayed = await call(service, 'POST', '/v1/subscriptions/%00/replay', {
      body: { since: '2020-01-01T00:00:00Z' },
    });
    expect([replayed.status, replayed.body.code]).toEqual([404, 'subscription_not_found']);
    expect(errors).toEqual([]);
  });

  it('page parameters: pageSize 201, pageNumber 0, repeated and malformed parameters are 400s', async () => {
    const { service } = setup();
    const cases: Array<[string, string]> = [
      ['pageSize=201', 'page_size_too_large'],
      ['pageNumber=0', 'page_number_too_small'],
      ['pageSize=0', 'page_size_too_small'],
    ];
    for (const [query, code] of cases) {
      const answer = await call(service, 'GET', `/v1/subscriptions?${query}`);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe(code);
    }
    for (const query of [
      'pageNumber=1&pageNumber=2',
      'pageSize=abc',
      'pageNumber=-1',
      'pageNumber=1e3',
      'pageSize=20.5',
      'pageNumber=99999999999999999999',
    ]) {
      const answer = await call(service, 'GET', `/v1/subscriptions?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/problem\+json/);
    }
    const far = await call(service, 'GET', '/v1/subscriptions?pageNumber=1000000&pageSize=200');
    expect(far.status).toBe(200);
    expect(far.body.items).toEqual([]);
    const repeated = await call(service, 'GET', '/v1/audit-logs?limit=1&limit=2');
    expect(repeated.status).toBe(400);
  });

  it('a repository that rejects is answered 500 with problem details and reported; nothing crashes and the service goes on', async () => {
    const repository = new MemorySubscriptionRepository();
    const failure = new Error('database down');
    const broken = repositoryWith(repository, {
      list: () => Promise.reject(failure),
      get: () => {
        throw failure;
      },
      create: () => Promise.reject(failure),
    });
    const { service, errors } = setup({ repository: broken });
    for (const [method, path, body] of [
      ['GET', '/v1/subscriptions', undefined],
      ['GET', '/v1/subscriptions/x', undefined],
      ['POST', '/v1/subscriptions', subscriptionBody()],
    ] as const) {
      const answer = await call(service, method, path, body === undefined ? {} : { body });
      expect(answer.status).toBe(500);
      expect(answer.body.code).toBe('internal_error');
      expect(answer.text).not.toContain('database down');
    }
    expect(errors.filter((e) => e === failure)).toHaveLength(3);
    expect((await call(service, 'GET', '/v1/audit-logs')).status).toBe(200);
  });

  it('a repository whose first load fails answers 503, reports it, and starts on a later request', async () => {
    const repository = new MemorySubscriptionRepository();
    let failures = 1;
    const flaky = repositoryWith(repository, {
      changesSince: (revision: number, limit: number) =>
        failures-- > 0
          ? Promise.reject(new Error('not yet'))
          : repository.changesSince(revision, limit),
    });
    const { service, errors } = setup({ repository: flaky });
    const first = await call(service, 'GET', '/v1/subscriptions');
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('1');
    expect(errors).toHaveLength(1);
    expect((await call(service, 'GET', '/v1/subscriptions')).status).toBe(200);
  });

  it('publish refuses bad events as input (InvalidRequestError invalid_event) with the pointer of the field at fault', async () => {
    const { service } = setup();
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const EVENT = 'event must be an object { accountCode, kind, propertyId?, data? } of plain data';
    const ACCOUNT =
      'event.accountCode must be the non-empty code of the account the event belongs to (well-formed Unicode, no NUL character)';
    const KIND =
      'event.kind must be an event kind <topic>/<event> of lower-case letters, digits and inner hyphens, such as folio/created (no wildcard; well-formed Unicode)';
    const PROPERTY =
      'event.propertyId must be a non-empty string (well-formed Unicode, no NUL character), or left out for an account-level event';
    const DATA =
      'event.data must be a JSON value (no cycle, no BigInt, no getter that throws), or left out';
    const cases: Array<[unknown, string, string]> = [
      [null, '', `${EVENT}, got null.`],
      [42, '', `${EVENT}, got 42.`],
      [['ACME'], '', `${EVENT}, got an array.`],
      [{ accountCode: '', kind: 'a/b' }, '/accountCode', `${ACCOUNT}, got "".`],
      [{ accountCode: 7, kind: 'a/b' }, '/accountCode', `${ACCOUNT}, got 7.`],
      [
        { accountCode: 'AC\uD800ME', kind: 'a/b' },
        '/accountCode',
        `${ACCOUNT}, got "AC\\ud800ME".`,
      ],
      [
        { accountCode: 'AC\u0000ME', kind: 'a/b' },
        '/accountCode',
        `${ACCOUNT}, got "AC\\u0000ME".`,
      ],
      [
        { accountCode: 'ACME', kind: 'a/b', propertyId: 'MUC\u0000' },
        '/propertyId',
        `${PROPERTY}, got "MUC\\u0000".`,
      ],
      [{ accountCode: 'ACME', kind: 'not a kind' }, '/kind', `${KIND}, got "not a kind".`],
      [{ accountCode: 'ACME', kind: 'a/*' }, '/kind', `${KIND}, got "a/*".`],
      [{ accountCode: 'ACME' }, '/kind', `${KIND}, got undefined.`],
      [{ accountCode: 'ACME', kind: 'a/b', propertyId: '' }, '/propertyId', `${PROPERTY}, got "".`],
      [{ accountCode: 'ACME', kind: 'a/b', propertyId: 5 }, '/propertyId', `${PROPERTY}, got 5.`],
      [
        { accountCode: 'ACME', kind: 'a/b', propertyId: '\uDC00' },
        '/propertyId',
        `${PROPERTY}, got "\\udc00".`,
      ],
      [{ accountCode: 'ACME', kind: 'a/b', data: 10n }, '/data', `${DATA}, got 10n.`],
      [{ accountCode: 'ACME', kind: 'a/b', data: cycle }, '/data', `${DATA}, got an object.`],
    ];
    for (const [event, pointer, message] of cases) {
      await expect(service.publish(event as never)).rejects.toMatchObject({
        name: 'InvalidRequestError',
        code: 'invalid_event',
        pointer,
        message,
      });
    }
  });

  it('refuses bad options with ConfigurationError', () => {
    const repository = new MemorySubscriptionRepository();
    const identify = () => undefined;
    for (const options of [
      undefined,
      {},
      { repository },
      { identify },
      { repository: {}, identify },
      { repository, identify, basePath: 'x' },
      { repository, identify, basePath: '/x/' },
      // A URL's path never holds a dot segment (they are resolved): no request would match.
      { repository, identify, basePath: '/.' },
      { repository, identify, basePath: '/a/..' },
      { repository, identify, basePath: '/%2E/b' },
      { repository, identify, basePath: '/.%2e' },
      { repository, identify, maxBodyBytes: 0 },
      { repository, identify, cursorKey: 'short' },
      { repository, identify, pollIntervalMs: -1 },
      { repository, identify, delivery: { timeoutMs: 0 } },
      { repository, identify, colour: 'red' },
    ]) {
      expect(() => serviceSetupUnchecked(options)).toThrow(
        expect.objectContaining({ name: 'ConfigurationError' }),
      );
    }
  });

  const throwingGetter = (key: string, fields: object = {}) =>
    Object.defineProperty({ ...fields }, key, {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
  const ENDPOINT_URL =
    "endpointUrl must be an object such as { allowHttp: true, allow: ['10.0.0.0/8'] }";
  const DELIVERY = 'delivery must be an object such as { transport, timeoutMs: 15000 }';
  const CURSOR_KEY =
    'cursorKey must be a string or Uint8Array of at least 32 bytes (leave it out for a random one)';
  const HEADER_VALUE = 'must be a string without control characters (CR, LF, NUL)';

  it.each([
    [
      'a misspelt endpointUrl option',
      { endpointUrl: { allowHttp: true, alowList: [] } },
      'invalid_option',
      'endpointUrl has no option "alowList"; did you mean "allow"? Its options are allow, maxLength, allowHttp.',
    ],
    [
      'a misspelt delivery option',
      { delivery: { timeout: 5000 } },
      'invalid_option',
      'delivery has no option "timeout"; did you mean "timeoutMs"? Its options are transport, schedule, maxEndpointPauseMs, timeoutMs, headers, onAttempt, random, rateLimitStore.',
    ],
    [
      'a misspelt schedule option in delivery',
      { delivery: { schedule: { maxAttemps: 3 } } },
      'invalid_option',
      'delivery.schedule has no option "maxAttemps"; did you mean "maxAttempts"? Its options are initialDelayMs, factor, maxDelayMs, maxAttempts, maxAgeMs, jitter.',
    ],
    [
      'endpointUrl as an array',
      { endpointUrl: [] },
      'invalid_option',
      `${ENDPOINT_URL}, got an array.`,
    ],
    [
      'endpointUrl as a string',
      { endpointUrl: 'https://hooks.example.com' },
      'invalid_option',
      `${ENDPOINT_URL}, got "https://hooks.example.com".`,
    ],
    ['endpointUrl as null', { endpointUrl: null }, 'invalid_option', `${ENDPOINT_URL}, got null.`],
    [
      'an endpointUrl maxLength of NaN',
      { endpointUrl: { maxLength: Number.NaN } },
      'invalid_limit',
      'endpointUrl.maxLength must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER), got NaN.',
    ],
    [
      'an endpointUrl allow-list entry that is no address',
      { endpointUrl: { allow: ['127.0.0.1', 'intranet'] } },
      'invalid_address_allow_list',
      'endpointUrl.allow[1] must be an IP address or CIDR range such as 127.0.0.1 or 10.0.0.0/8, got "intranet".',
    ],
    [
      'an endpointUrl whose getter throws',
      { endpointUrl: throwingGetter('allowHttp') },
      'invalid_option',
      'endpointUrl options must be plain data, got an object that threw when read.',
    ],
    ['delivery as an array', { delivery: [] }, 'invalid_option', `${DELIVERY}, got an array.`],
    ['delivery as null', { delivery: null }, 'invalid_option', `${DELIVERY}, got null.`],
    [
      'a delivery timeout of NaN',
      { delivery: { timeoutMs: Number.NaN } },
      'invalid_option',
      'delivery.timeoutMs must be a whole number from 1 to 2147483647, got NaN.',
    ],
    [
      'a delivery header name with a space',
      { delivery: { headers: { 'user agent': 'acme' } } },
      'invalid_option',
      'delivery.headers name must be an HTTP header name (letters, digits and !#$%&\'*+-.^_`|~) such as user-agent, got "user agent".',
    ],
    [
      'a delivery header value with a line break',
      { delivery: { headers: { 'user-agent': 'acme\r\nx-injected: 1' } } },
      'invalid_option',
      `delivery.headers.user-agent ${HEADER_VALUE}, got "acme\\r\\nx-injected: 1".`,
    ],
    [
      'a delivery header whose getter throws',
      { delivery: { headers: throwingGetter('user-agent') } },
      'invalid_option',
      "delivery.headers must be an object of HTTP header names and string values, such as { 'user-agent': 'acme-webhooks/1.0' }, got an object that threw when read.",
    ],
    [
      'a short cursorKey',
      { cursorKey: 'short' },
      'invalid_option',
      `${CURSOR_KEY}, got a string of 5 bytes.`,
    ],
    [
      'a cursorKey of 16 bytes',
      { cursorKey: new Uint8Array(16) },
      'invalid_option',
      `${CURSOR_KEY}, got 16 bytes.`,
    ],
    [
      'a cursorKey that is a number',
      { cursorKey: 42 },
      'invalid_option',
      `${CURSOR_KEY}, got a number.`,
    ],
    ['a cursorKey that is null', { cursorKey: null }, 'invalid_option', `${CURSOR_KEY}, got null.`],
    [
      'limits without a limiter',
      { limits: { rateLimitHeaders: true } },
      'invalid_option',
      'limits must be given only with a limiter (pass limiter: createLimiter({ ... }) as well, or leave limits out), got an object.',
    ],
  ])('refuses %s, naming the nested option, in the one wording', (_, options, code, message) => {
    const error = thrown(() =>
      serviceSetupUnchecked({
        repository: new MemorySubscriptionRepository(),
        identify: () => undefined,
        ...options,
      }),
    );
    expect(isConfigurationError(error) && error.code).toBe(code);
    expect((error as Error).message).toBe(message);
  });

  it('refuses a misspelt limits option with the nearest name, with a limiter', () => {
    const error = thrown(() =>
      serviceSetupUnchecked({
        repository: new MemorySubscriptionRepository(),
        identify: () => undefined,
        limiter: createLimiter({ policies: [window(3, '60s')] }),
        limits: { rateLimitHeader: true },
      }),
    );
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(
      'limits has no option "rateLimitHeader"; did you mean "rateLimitHeaders"? Its options are rateLimitHeaders, trackingIdOnAdmitted, trackingIds, trackingIdHeader, failure, failureRetryAfterSeconds.',
    );
  });

  it('never shows a cursorKey it refuses', () => {
    const key = 'a secret that is too short';
    const error = thrown(() =>
      serviceSetupUnchecked({
        repository: new MemorySubscriptionRepository(),
        identify: () => undefined,
        cursorKey: key,
      }),
    );
    expect(isConfigurationError(error)).toBe(true);
    expect((error as Error).message).not.toContain(key);
  });
});

import {
  createLimiter,
  createWebhookService,
  isConfigurationError,
  window,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

function serviceSetupUnchecked(options: unknown) {
  return createWebhookService(options as never);
}
