// Validation of the create-subscription body: a table of malformed bodies with their codes, and properties.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  defineEventCatalog,
  exampleEventCatalog,
  isConfigurationError,
  subscriptionRequestErrorCodes,
  validateSubscriptionRequest,
} from '../../../src/index.js';
import { revokedProxy, throwingGetters, throwingProxy } from '../../support/hostile.js';
import { thrown } from '../../support/thrown.js';

const URL_OK = 'https://hooks.example.com/in';
const ok = { endpointUrl: URL_OK, events: ['folio/created'] };
const issuesOf = (body: unknown, options = {}) => {
  const result = validateSubscriptionRequest(body, options);
  return result.ok ? [] : result.issues.map((i) => [i.path, i.code]);
};

// Each malformed body with every [JSON pointer, code] it must be refused with, in order.
const malformed: [string, unknown, [string, string][]][] = [
  ['null', null, [['', 'body_not_object']]],
  ['a string', 'folio/created', [['', 'body_not_object']]],
  ['a number', 42, [['', 'body_not_object']]],
  ['an array', [ok], [['', 'body_not_object']]],
  ['undefined', undefined, [['', 'body_not_object']]],
  [
    'an empty object',
    {},
    [
      ['/endpointUrl', 'missing_field'],
      ['/events', 'missing_field'],
    ],
  ],
  ['no endpointUrl', { events: ['folio/created'] }, [['/endpointUrl', 'missing_field']]],
  ['no events', { endpointUrl: URL_OK }, [['/events', 'missing_field']]],
  ['endpointUrl a number', { ...ok, endpointUrl: 443 }, [['/endpointUrl', 'wrong_type']]],
  ['endpointUrl null', { ...ok, endpointUrl: null }, [['/endpointUrl', 'wrong_type']]],
  ['events a string', { ...ok, events: 'folio/created' }, [['/events', 'wrong_type']]],
  ['events an object', { ...ok, events: { 0: 'folio/created' } }, [['/events', 'wrong_type']]],
  ['events empty', { ...ok, events: [] }, [['/events', 'empty_array']]],
  [
    'events with non-strings',
    { ...ok, events: ['folio/created', 7, null, ['x']] },
    [
      ['/events/1', 'wrong_type'],
      ['/events/2', 'wrong_type'],
      ['/events/3', 'wrong_type'],
    ],
  ],
  [
    'events with a duplicate',
    { ...ok, events: ['folio/created', 'reservation/*', 'folio/created'] },
    [['/events/2', 'duplicate_element']],
  ],
  [
    'events too many',
    { ...ok, events: Array.from({ length: 101 }, (_, i) => `t/e${i}`) },
    [['/events', 'too_many_elements']],
  ],
  ['event empty', { ...ok, events: [''] }, [['/events/0', 'pattern_empty']]],
  ['event "*"', { ...ok, events: ['*'] }, [['/events/0', 'pattern_wildcard_topic']]],
  [
    'event "*/created"',
    { ...ok, events: ['*/created'] },
    [['/events/0', 'pattern_wildcard_topic']],
  ],
  [
    'event without slash',
    { ...ok, events: ['reservation'] },
    [['/events/0', 'pattern_missing_slash']],
  ],
  [
    'event with three parts',
    { ...ok, events: ['a/b/c'] },
    [['/events/0', 'pattern_too_many_segments']],
  ],
  [
    'event with empty topic',
    { ...ok, events: ['/created'] },
    [['/events/0', 'pattern_empty_topic']],
  ],
  ['event with empty event', { ...ok, events: ['folio/'] }, [['/events/0', 'pattern_empty_event']]],
  [
    'event in upper case',
    { ...ok, events: ['Folio/Created'] },
    [['/events/0', 'pattern_invalid_topic']],
  ],
  [
    'event with a space',
    { ...ok, events: ['folio/ created'] },
    [['/events/0', 'pattern_invalid_event']],
  ],
  [
    'event overlong',
    { ...ok, events: [`folio/${'e'.repeat(200)}`] },
    [['/events/0', 'pattern_too_long']],
  ],
  ['propertyIds a string', { ...ok, propertyIds: 'BER' }, [['/propertyIds', 'wrong_type']]],
  ['propertyIds null', { ...ok, propertyIds: null }, [['/propertyIds', 'wrong_type']]],
  ['propertyIds empty', { ...ok, propertyIds: [] }, [['/propertyIds', 'empty_array']]],
  [
    'propertyIds with a number',
    { ...ok, propertyIds: ['BER', 5] },
    [['/propertyIds/1', 'wrong_type']],
  ],
  [
    'propertyIds with a duplicate',
    { ...ok, propertyIds: ['BER', 'MUC', 'BER'] },
    [['/propertyIds/2', 'duplicate_element']],
  ],
  [
    'propertyIds with an empty id',
    { ...ok, propertyIds: [''] },
    [['/propertyIds/0', 'invalid_property_id']],
  ],
  [
    'propertyIds with a space',
    { ...ok, propertyIds: ['B ER'] },
    [['/propertyIds/0', 'invalid_property_id']],
  ],
  [
    'propertyIds with a control character beyond ASCII',
    { ...ok, propertyIds: ['BER\u0085'] },
    [['/propertyIds/0', 'invalid_property_id']],
  ],
  [
    'propertyIds overlong',
    { ...ok, propertyIds: ['p'.repeat(129)] },
    [['/propertyIds/0', 'property_id_too_long']],
  ],
  [
    'propertyIds too many',
    { ...ok, propertyIds: Array.from({ length: 1001 }, (_, i) => `p${i}`) },
    [['/propertyIds', 'too_many_elements']],
  ],
  ['a misspelt field', { ...ok, propertyId: ['BER'] }, [['/propertyId', 'unknown_field']]],
  ['a field with "/" and "~"', { ...ok, 'a/b~c': 1 }, [['/a~1b~0c', 'unknown_field']]],
  ['endpointUrl relative', { ...ok, endpointUrl: '/hooks' }, [['/endpointUrl', 'url_invalid']]],
  [
    'endpointUrl http',
    { ...ok, endpointUrl: 'http://hooks.example.com/' },
    [['/endpointUrl', 'url_scheme_not_allowed']],
  ],
  [
    'endpointUrl loopback in hex',
    { ...ok, endpointUrl: 'https://0x7f.1/' },
    [['/endpointUrl', 'url_forbidden_address']],
  ],
  [
    'endpointUrl overlong',
    { ...ok, endpointUrl: `${URL_OK}/${'a'.repeat(2100)}` },
    [['/endpointUrl', 'url_too_long']],
  ],
  [
    'everything wrong at once',
    {
      endpointUrl: 'http://u@10.0.0.1/#x',
      events: ['folio/created', '*', 'folio/created', 3],
      propertyIds: [],
      extra: true,
    },
    [
      ['/extra', 'unknown_field'],
      ['/endpointUrl', 'url_scheme_not_allowed'],
      ['/endpointUrl', 'url_has_userinfo'],
      ['/endpointUrl', 'url_has_fragment'],
      ['/endpointUrl', 'url_forbidden_address'],
      ['/events/1', 'pattern_wildcard_topic'],
      ['/events/2', 'duplicate_element'],
      ['/events/3', 'wrong_type'],
      ['/propertyIds', 'empty_array'],
    ],
  ],
];

describe('create-subscription request validation', () => {
  it('has a table of at least 30 malformed bodies', () => {
    expect(malformed.length).toBeGreaterThanOrEqual(30);
  });

  it.each(malformed)('refuses %s', (_, body, expected) => {
    const result = validateSubscriptionRequest(body);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((i) => [i.path, i.code])).toEqual(expected);
    for (const issue of result.issues) expect(issue.message.length).toBeGreaterThan(15);
  });

  it('accepts the specification’s example and normalises the URL', () => {
    const result = validateSubscriptionRequest({
      endpointUrl: 'https://Hooks.Example.com/in',
      events: ['reservation/*', 'folio/created', 'folio/charges-changed'],
    });
    expect(result).toEqual({
      ok: true,
      value: {
        endpointUrl: 'https://hooks.example.com/in',
        events: ['reservation/*', 'folio/created', 'folio/charges-changed'],
      },
    });
  });

  it('keeps propertyIds when given, and accepts a wildcard beside a kind of the same topic', () => {
    const result = validateSubscriptionRequest({
      ...ok,
      events: ['folio/*', 'folio/created'],
      propertyIds: ['BER'],
    });
    expect(result.ok && result.value).toEqual({
      ...ok,
      events: ['folio/*', 'folio/created'],
      propertyIds: ['BER'],
    });
  });

  it('refuses unknown kinds with a suggestion when a catalog is given', () => {
    const result = validateSubscriptionRequest(
      { ...ok, events: ['folio/created', 'folio/craeted', 'reservatoin/*'] },
      { catalog: exampleEventCatalog },
    );
    expect(result.ok ? [] : result.issues).toEqual([
      expect.objectContaining({
        path: '/events/1',
        code: 'unknown_event',
        suggestion: 'folio/created',
      }),
      expect.objectContaining({
        path: '/events/2',
        code: 'unknown_topic',
        suggestion: 'reservation/*',
      }),
    ]);
  });

  it('applies configured bounds and the http switch', () => {
    const options = {
      maxEvents: 2,
      maxPropertyIds: 1,
      maxPropertyIdLength: 3,
      endpointUrl: { allowHttp: true },
    };
    expect(
      issuesOf(
        { endpointUrl: 'http://hooks.example.com/', events: ['a/b', 'a/c'], propertyIds: ['abc'] },
        options,
      ),
    ).toEqual([]);
    expect(
      issuesOf({ ...ok, events: ['a/b', 'a/c', 'a/d'], propertyIds: ['abcd'] }, options),
    ).toEqual([
      ['/events', 'too_many_elements'],
      ['/propertyIds/0', 'property_id_too_long'],
    ]);
  });

  it.each([
    { maxEvents: 0 },
    { maxPropertyIds: 1.5 },
    { maxPropertyIdLength: -1 },
    { endpointUrl: { maxLength: 0 } },
  ])('throws a ConfigurationError for the bound %j', (options) => {
    const caught = thrown(() => validateSubscriptionRequest(ok, options));
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_limit');
  });

  const CATALOG =
    "catalog must be an event catalog made by defineEventCatalog(), such as defineEventCatalog({ folio: ['created'] }) (leave it out to accept any well-formed kind)";
  const ALLOW =
    "endpointUrl.allow must be an array of addresses and CIDR ranges, such as ['127.0.0.1', '10.0.0.0/8'], even for one entry";
  it.each([
    [
      'options null',
      null,
      'invalid_option',
      'validateSubscriptionRequest options must be an object such as { maxEvents: 100 }, or left out, got null.',
    ],
    [
      'endpointUrl null',
      { endpointUrl: null },
      'invalid_option',
      "endpointUrl must be an object such as { allowHttp: true, allow: ['10.0.0.0/8'] }, got null.",
    ],
    [
      'endpointUrl as a string',
      { endpointUrl: 'https://hooks.example.com' },
      'invalid_option',
      'endpointUrl must be an object such as { allowHttp: true, allow: [\'10.0.0.0/8\'] }, got "https://hooks.example.com".',
    ],
    [
      'a misspelt endpointUrl option',
      { endpointUrl: { alowHttp: true } },
      'invalid_option',
      'endpointUrl has no option "alowHttp"; did you mean "allowHttp"? Its options are allow, maxLength, allowHttp.',
    ],
    [
      'an allowHttp that is a string',
      { endpointUrl: { allowHttp: 'yes' } },
      'invalid_option',
      'endpointUrl.allowHttp must be true or false, got "yes".',
    ],
    [
      'a maxLength of NaN',
      { endpointUrl: { maxLength: Number.NaN } },
      'invalid_limit',
      'endpointUrl.maxLength must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER), got NaN.',
    ],
    [
      'an allow-list written as a string',
      { endpointUrl: { allow: '10.0.0.0/8' } },
      'invalid_address_allow_list',
      `${ALLOW}, got "10.0.0.0/8".`,
    ],
    [
      'an allow-list entry that is no address',
      { endpointUrl: { allow: ['intranet'] } },
      'invalid_address_allow_list',
      'endpointUrl.allow[0] must be an IP address or CIDR range such as 127.0.0.1 or 10.0.0.0/8, got "intranet".',
    ],
    [
      'a catalog not made by defineEventCatalog',
      { catalog: {} },
      'invalid_event_catalog',
      `${CATALOG}, got an object.`,
    ],
    [
      'a catalog definition in place of a catalog',
      { catalog: { folio: ['created'] } },
      'invalid_event_catalog',
      `${CATALOG}, got an object.`,
    ],
  ])(
    'refuses %s with a ConfigurationError before reading the body, whatever it holds',
    (_, options, code, message) => {
      const bodyArb = fc.oneof(
        fc.constant(ok),
        fc.constant({ endpointUrl: URL_OK }),
        fc.constant({ events: ['a/b'] }),
        fc.anything(),
      );
      fc.assert(
        fc.property(bodyArb, (body) => {
          const caught = thrown(() => validateSubscriptionRequest(body, options as never));
          expect(isConfigurationError(caught) && caught.code).toBe(code);
          expect((caught as Error).message).toBe(message);
        }),
        { numRuns: 50 },
      );
    },
  );

  it('accepts a catalog made by defineEventCatalog and an allow-list array', () => {
    const options = {
      catalog: defineEventCatalog({ folio: ['created'] }),
      endpointUrl: { allow: ['10.0.0.0/8'] },
    };
    expect(
      issuesOf({ endpointUrl: 'https://10.1.2.3/in', events: ['folio/created'] }, options),
    ).toEqual([]);
    expect(
      issuesOf({ endpointUrl: 'https://10.1.2.3/in', events: ['folio/closed'] }, options),
    ).toEqual([['/events/0', 'unknown_event']]);
  });

  it('never throws, and every issue has a known code and a JSON pointer, for any body', () => {
    const bodyArb = fc.oneof(
      fc.anything(),
      fc.record(
        {
          endpointUrl: fc.oneof(fc.webUrl(), fc.string(), fc.anything()),
          events: fc.oneof(fc.array(fc.oneof(fc.string(), fc.anything())), fc.anything()),
          propertyIds: fc.oneof(fc.array(fc.oneof(fc.string(), fc.anything())), fc.anything()),
        },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(bodyArb, (body) => {
        const result = validateSubscriptionRequest(body);
        if (result.ok) return;
        expect(result.issues.length).toBeGreaterThan(0);
        for (const issue of result.issues) {
          expect(subscriptionRequestErrorCodes).toContain(issue.code);
          expect(issue.path).toMatch(/^(|\/.*)$/);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('returns exactly the elements it checked, even when an element answers differently on a second read', () => {
    // Arrange: arrays whose first element is valid when read once, and malformed afterwards.
    const shifty = (valid: string, invalid: string): string[] => {
      let reads = 0;
      const list: string[] = [];
      Object.defineProperty(list, 0, {
        get: () => (reads++ === 0 ? valid : invalid),
        enumerable: true,
      });
      return list;
    };
    // Act
    const result = validateSubscriptionRequest({
      endpointUrl: 'https://hooks.example.com/in',
      events: shifty('folio/created', '*'),
      propertyIds: shifty('BER', 'a b'),
    });
    // Assert
    expect(result).toEqual({
      ok: true,
      value: {
        endpointUrl: 'https://hooks.example.com/in',
        events: ['folio/created'],
        propertyIds: ['BER'],
      },
    });
  });

  it('pins the catalogue of request error codes', () => {
    expect([...subscriptionRequestErrorCodes]).toEqual([
      'body_not_object',
      'unknown_field',
      'missing_field',
      'wrong_type',
      'empty_array',
      'too_many_elements',
      'duplicate_element',
      'invalid_property_id',
      'property_id_too_long',
      'lone_surrogate',
      'nul_character',
      'description_too_long',
      'invalid_rate_limit',
      'too_many_headers',
      'invalid_header_name',
      'forbidden_header',
      'duplicate_header',
      'invalid_header_value',
      'headers_too_large',
      'invalid_metadata_key',
      'metadata_too_large',
      'invalid_signature_type',
      'pattern_not_string',
      'pattern_empty',
      'pattern_too_long',
      'pattern_missing_slash',
      'pattern_too_many_segments',
      'pattern_empty_topic',
      'pattern_empty_event',
      'pattern_wildcard_topic',
      'pattern_wildcard_kind',
      'pattern_invalid_topic',
      'pattern_invalid_event',
      'unknown_topic',
      'unknown_event',
      'url_too_long',
      'url_invalid',
      'url_scheme_not_allowed',
      'url_has_userinfo',
      'url_has_fragment',
      'url_forbidden_address',
      'url_forbidden_host',
    ]);
  });

  it('reports a body, field or element that cannot be read, with its path, instead of throwing', () => {
    // Arrange: valid bodies with one member made a getter that throws, or a Proxy.
    const events = ['folio/created', 'reservation/*', 'unit/created'];
    Object.defineProperty(events, 1, {
      get() {
        throw new Error('hostile element');
      },
    });
    const endpoint = throwingGetters(['endpointUrl'], { events: ['folio/created'] });
    const cases: [unknown, [string, string][]][] = [
      [{ ...ok, events }, [['/events/1', 'wrong_type']]],
      [endpoint, [['/endpointUrl', 'wrong_type']]],
      [{ ...ok, events: throwingProxy(['get'], ['folio/created']) }, [['/events', 'wrong_type']]],
      [{ ...ok, propertyIds: revokedProxy([]) }, [['/propertyIds', 'wrong_type']]],
      [revokedProxy({}), [['', 'body_not_object']]],
      [throwingProxy(['ownKeys'], { ...ok }), [['', 'body_not_object']]],
    ];
    for (const [body, expected] of cases) {
      // Act and assert
      expect(issuesOf(body)).toEqual(expected);
    }
  });
});
