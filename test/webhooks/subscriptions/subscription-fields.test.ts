// The optional fields of a subscription (description, rateLimit, headers, metadata,
// signatureType) on create and on PATCH: each bad input a 400 issue at its JSON pointer, never a throw.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateSubscriptionRequest } from '../../../src/index.js';
import { endpointUrlPolicy } from '../../../src/webhooks/subscriptions/endpoint-url.js';
import type { BodySettings } from '../../../src/webhooks/subscriptions/subscription-body.js';
import { validateSubscriptionPatch } from '../../../src/webhooks/subscriptions/subscription-patch.js';
import { revokedProxy, throwingGetters, throwingProxy } from '../../support/hostile.js';
import { forbiddenHeaderName, validHeaders } from '../../support/webhook-arbitraries.js';

const ok = { endpointUrl: 'https://hooks.example.com/in', events: ['folio/created'] };
const issuesOf = (body: unknown) => {
  const result = validateSubscriptionRequest(body);
  return result.ok ? [] : result.issues.map((i) => [i.path, i.code]);
};

const SETTINGS: BodySettings = {
  checkUrl: endpointUrlPolicy({}),
  catalog: undefined,
  maxEvents: 100,
  maxPropertyIds: 1000,
  maxPropertyIdLength: 128,
};
const patchIssuesOf = (body: unknown) => {
  const result = validateSubscriptionPatch(body, SETTINGS);
  return result.ok ? [] : result.issues.map((i) => [i.path, i.code]);
};

const manyHeaders = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']));

// Each bad create body with every [JSON pointer, code] it must be refused with, in order.
const malformed: [string, unknown, [string, string][]][] = [
  ['description a number', { ...ok, description: 1 }, [['/description', 'wrong_type']]],
  ['description null', { ...ok, description: null }, [['/description', 'wrong_type']]],
  [
    'description of 257 characters',
    { ...ok, description: 'd'.repeat(257) },
    [['/description', 'description_too_long']],
  ],
  [
    'description of a million characters',
    { ...ok, description: 'd'.repeat(1_000_000) },
    [['/description', 'description_too_long']],
  ],
  ['description with NUL', { ...ok, description: 'a\0b' }, [['/description', 'nul_character']]],
  [
    'description with a lone surrogate',
    { ...ok, description: 'a\uD800b' },
    [['/description', 'lone_surrogate']],
  ],
  ['rateLimit 0', { ...ok, rateLimit: 0 }, [['/rateLimit', 'invalid_rate_limit']]],
  ['rateLimit 10001', { ...ok, rateLimit: 10_001 }, [['/rateLimit', 'invalid_rate_limit']]],
  ['rateLimit 1.5', { ...ok, rateLimit: 1.5 }, [['/rateLimit', 'invalid_rate_limit']]],
  ['rateLimit -3', { ...ok, rateLimit: -3 }, [['/rateLimit', 'invalid_rate_limit']]],
  [
    'rateLimit Infinity (1e400 parsed)',
    { ...ok, rateLimit: Number.POSITIVE_INFINITY },
    [['/rateLimit', 'invalid_rate_limit']],
  ],
  ['rateLimit a string', { ...ok, rateLimit: '10' }, [['/rateLimit', 'wrong_type']]],
  ['rateLimit null on create', { ...ok, rateLimit: null }, [['/rateLimit', 'wrong_type']]],
  ['headers an array', { ...ok, headers: [['X-A', '1']] }, [['/headers', 'wrong_type']]],
  ['headers a string', { ...ok, headers: 'X-A: 1' }, [['/headers', 'wrong_type']]],
  ['headers null on create', { ...ok, headers: null }, [['/headers', 'wrong_type']]],
  ['21 headers', { ...ok, headers: manyHeaders(21) }, [['/headers', 'too_many_headers']]],
  [
    'a header name with a space',
    { ...ok, headers: { 'X Foo': 'v' } },
    [['/headers/X Foo', 'invalid_header_name']],
  ],
  ['an empty header name', { ...ok, headers: { '': 'v' } }, [['/headers/', 'invalid_header_name']]],
  [
    'a header name with a slash (escaped in the pointer)',
    { ...ok, headers: { 'a/b': 'v' } },
    [['/headers/a~1b', 'invalid_header_name']],
  ],
  [
    'a non-ASCII header name',
    { ...ok, headers: { 'X-É': 'v' } },
    [['/headers/X-É', 'invalid_header_name']],
  ],
  ['Host', { ...ok, headers: { Host: 'x' } }, [['/headers/Host', 'forbidden_header']]],
  [
    'CONTENT-LENGTH',
    { ...ok, headers: { 'CONTENT-LENGTH': '1' } },
    [['/headers/CONTENT-LENGTH', 'forbidden_header']],
  ],
  [
    'content-type',
    { ...ok, headers: { 'content-type': 'text/plain' } },
    [['/headers/content-type', 'forbidden_header']],
  ],
  [
    'Connection',
    { ...ok, headers: { Connection: 'close' } },
    [['/headers/Connection', 'forbidden_header']],
  ],
  [
    'Transfer-Encoding',
    { ...ok, headers: { 'Transfer-Encoding': 'chunked' } },
    [['/headers/Transfer-Encoding', 'forbidden_header']],
  ],
  [
    'Webhook-Signature',
    { ...ok, headers: { 'Webhook-Signature': 'v1,x' } },
    [['/headers/Webhook-Signature', 'forbidden_header']],
  ],
  [
    'webhook-anything',
    { ...ok, headers: { 'webhook-anything': 'x' } },
    [['/headers/webhook-anything', 'forbidden_header']],
  ],
  [
    'one name twice in two cases',
    { ...ok, headers: { 'X-Team': 'a', 'x-team': 'b' } },
    [['/headers/x-team', 'duplicate_header']],
  ],
  ['a header value a number', { ...ok, headers: { 'X-A': 1 } }, [['/headers/X-A', 'wrong_type']]],
  ['a header value null', { ...ok, headers: { 'X-A': null } }, [['/headers/X-A', 'wrong_type']]],
  [
    'a header value with CR LF',
    { ...ok, headers: { 'X-A': 'a\r\nInjected: yes' } },
    [['/headers/X-A', 'invalid_header_value']],
  ],
  [
    'a header value with NUL',
    { ...ok, headers: { 'X-A': 'a\0b' } },
    [['/headers/X-A', 'invalid_header_value']],
  ],
  [
    'a header value with DEL',
    { ...ok, headers: { 'X-A': 'a\u007fb' } },
    [['/headers/X-A', 'invalid_header_value']],
  ],
  [
    'a header value with a non-ASCII character',
    { ...ok, headers: { 'X-A': 'café' } },
    [['/headers/X-A', 'invalid_header_value']],
  ],
  [
    'a header value with a lone surrogate',
    { ...ok, headers: { 'X-A': '\uDC00' } },
    [['/headers/X-A', 'invalid_header_value']],
  ],
  [
    'a header value with a leading space',
    { ...ok, headers: { 'X-A': ' a' } },
    [['/headers/X-A', 'invalid_header_value']],
  ],
  [
    'a header value with a trailing tab',
    { ...ok, headers: { 'X-A': 'a\t' } },
    [['/headers/X-A', 'invalid_header_value']],
  ],
  [
    'headers over 4 KiB together',
    { ...ok, headers: { 'X-A': 'a'.repeat(2048), 'X-B': 'b'.repeat(2048) } },
    [['/headers', 'headers_too_large']],
  ],
  [
    'every bad header reported',
    { ...ok, headers: { Host: 'x', 'X-A': 'a\n', 'X B': 'v' } },
    [
      ['/headers/Host', 'forbidden_header'],
      ['/headers/X-A', 'invalid_header_value'],
      ['/headers/X B', 'invalid_header_name'],
    ],
  ],
  ['metadata an array', { ...ok, metadata: ['a'] }, [['/metadata', 'wrong_type']]],
  ['metadata a number', { ...ok, metadata: 3 }, [['/metadata', 'wrong_type']]],
  ['metadata null on create', { ...ok, metadata: null }, [['/metadata', 'wrong_type']]],
  ['a metadata value a number', { ...ok, metadata: { a: 1 } }, [['/metadata/a', 'wrong_type']]],
  [
    'a metadata value an object',
    { ...ok, metadata: { a: { b: 'c' } } },
    [['/metadata/a', 'wrong_type']],
  ],
  [
    'an empty metadata key',
    { ...ok, metadata: { '': 'x' } },
    [['/metadata/', 'invalid_metadata_key']],
  ],
  [
    'a metadata value with NUL',
    { ...ok, metadata: { a: '\0' } },
    [['/metadata/a', 'nul_character']],
  ],
  [
    'a metadata key with NUL',
    { ...ok, metadata: { 'a\0': 'x' } },
    [['/metadata/a\0', 'nul_character']],
  ],
  [
    'a metadata value with a lone surrogate',
    { ...ok, metadata: { a: '\uD83D' } },
    [['/metadata/a', 'lone_surrogate']],
  ],
  [
    'metadata over 4 KiB in UTF-8 (2,049 two-byte characters)',
    { ...ok, metadata: { a: 'é'.repeat(2048) } },
    [['/metadata', 'metadata_too_large']],
  ],
  [
    'metadata of 5,000 keys',
    { ...ok, metadata: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, ''])) },
    [['/metadata', 'metadata_too_large']],
  ],
  [
    'signatureType unknown',
    { ...ok, signatureType: 'rsa' },
    [['/signatureType', 'invalid_signature_type']],
  ],
  [
    'signatureType in another case',
    { ...ok, signatureType: 'HMAC-SHA256' },
    [['/signatureType', 'invalid_signature_type']],
  ],
  ['signatureType a number', { ...ok, signatureType: 1 }, [['/signatureType', 'wrong_type']]],
  ['signatureType null', { ...ok, signatureType: null }, [['/signatureType', 'wrong_type']]],
];

describe('the optional fields of a create body', () => {
  it.each(malformed)('refuses %s', (_, body, expected) => {
    expect(issuesOf(body)).toEqual(expected);
  });

  it('every refusal says what to change, naming the field', () => {
    for (const [, body] of malformed) {
      const result = validateSubscriptionRequest(body);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      for (const issue of result.issues) {
        const field = issue.path.split('/')[1] ?? '';
        expect(issue.message.length).toBeGreaterThan(20);
        expect(issue.message.toLowerCase()).toMatch(
          new RegExp(`${field.toLowerCase()}|header|metadata`),
        );
      }
    }
  });

  it('takes each field at its bounds and returns it as given', () => {
    const fields = {
      description: `${'d'.repeat(254)}😀`, // 255 characters, 256 UTF-16 units
      rateLimit: 10_000,
      headers: { ...manyHeaders(19), 'X-Spaced': 'a b\tc' },
      metadata: { team: 'billing', ключ: 'значение' },
      signatureType: 'ed25519',
    };
    const result = validateSubscriptionRequest({ ...ok, ...fields });
    expect(result).toEqual({ ok: true, value: { ...ok, ...fields } });
    expect(validateSubscriptionRequest({ ...ok, rateLimit: 1, description: '' }).ok).toBe(true);
  });

  it('a description of 256 characters passes, 257 does not, counted in code points', () => {
    expect(validateSubscriptionRequest({ ...ok, description: '😀'.repeat(256) }).ok).toBe(true);
    expect(issuesOf({ ...ok, description: '😀'.repeat(257) })).toEqual([
      ['/description', 'description_too_long'],
    ]);
  });

  it('headers of exactly 4 KiB and metadata of exactly 4 KiB pass', () => {
    const headers = { 'X-A': 'a'.repeat(4096 - 3) };
    const metadata = { k: 'é'.repeat(2047) + 'a' };
    expect(validateSubscriptionRequest({ ...ok, headers, metadata }).ok).toBe(true);
  });

  it('an empty headers or metadata object is kept as it is', () => {
    expect(validateSubscriptionRequest({ ...ok, headers: {}, metadata: {} })).toEqual({
      ok: true,
      value: { ...ok, headers: {}, metadata: {} },
    });
  });

  it('keeps a prototype key as a header and a metadata key, touching no prototype', () => {
    const body = JSON.parse(
      '{"endpointUrl":"https://hooks.example.com/in","events":["folio/created"],"headers":{"__proto__":"x"},"metadata":{"__proto__":"y","constructor":"z"}}',
    );
    const result = validateSubscriptionRequest(body);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(Object.keys(result.value.headers ?? {})).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(result.value.headers, '__proto__')?.value).toBe('x');
    expect(Object.keys(result.value.metadata ?? {})).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(result.value.metadata)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(result.value)).metadata).toEqual(body.metadata);
  });

  it('answers objects that cannot be read with issues, never a throw', () => {
    const hostile: [unknown, string][] = [
      [revokedProxy(), '/headers'],
      [throwingProxy(['ownKeys']), '/headers'],
      [throwingGetters(['X-A']), '/headers/X-A'],
    ];
    for (const [headers, path] of hostile) {
      expect(issuesOf({ ...ok, headers })).toEqual([[path, 'wrong_type']]);
    }
    expect(issuesOf({ ...ok, metadata: throwingGetters(['a']) })).toEqual([
      ['/metadata/a', 'wrong_type'],
    ]);
    expect(issuesOf(throwingGetters(['rateLimit'], { ...ok }))).toEqual([
      ['/rateLimit', 'wrong_type'],
    ]);
  });

  it('what it returns is frozen and apart from the body', () => {
    const headers = { 'X-A': '1' };
    const result = validateSubscriptionRequest({ ...ok, headers });
    if (!result.ok) throw new Error('refused');
    headers['X-A'] = '2';
    expect(result.value.headers).toEqual({ 'X-A': '1' });
    expect(Object.isFrozen(result.value.headers)).toBe(true);
  });

  it('any valid headers object is taken unchanged', () => {
    fc.assert(
      fc.property(validHeaders, (headers) => {
        // Act
        const result = validateSubscriptionRequest({ ...ok, headers });
        // Assert
        expect(result).toEqual({ ok: true, value: { ...ok, headers } });
      }),
    );
  });

  it('any headers object with a forbidden name is refused naming it', () => {
    fc.assert(
      fc.property(validHeaders, forbiddenHeaderName, fc.string(), (headers, name, value) => {
        // Arrange: the forbidden name beside valid ones (no other spelling of it among them)
        fc.pre(!Object.keys(headers).some((n) => n.toLowerCase() === name.toLowerCase()));
        const body = { ...ok, headers: { ...headers, [name]: value } };
        // Act
        const result = validateSubscriptionRequest(body);
        // Assert
        expect(result.ok).toBe(false);
        if (result.ok) return;
        const issue = result.issues.find((i) => i.code === 'forbidden_header');
        // RFC 6901: "~" is written "~0" (a token has no "/")
        expect(issue?.path).toBe(`/headers/${name.replaceAll('~', '~0')}`);
        expect(issue?.message).toContain(name);
      }),
    );
  });
});

describe('the optional fields of a PATCH body', () => {
  it('takes null to remove description, rateLimit, headers and metadata', () => {
    const body = { description: null, rateLimit: null, headers: null, metadata: null };
    expect(validateSubscriptionPatch(body, SETTINGS)).toEqual({ ok: true, value: body });
  });

  it('takes new values, and signatureType alone', () => {
    const body = {
      description: 'x',
      rateLimit: 5,
      headers: { 'X-A': '1' },
      metadata: { a: 'b' },
      signatureType: 'ed25519',
    };
    expect(validateSubscriptionPatch(body, SETTINGS)).toEqual({ ok: true, value: body });
    expect(validateSubscriptionPatch({ signatureType: 'hmac-sha256' }, SETTINGS)).toEqual({
      ok: true,
      value: { signatureType: 'hmac-sha256' },
    });
  });

  it('refuses what create refuses, at the same pointers, and a null signatureType', () => {
    expect(
      patchIssuesOf({
        rateLimit: 0,
        headers: { 'webhook-id': 'x' },
        metadata: [],
        description: 'd'.repeat(300),
        signatureType: null,
      }),
    ).toEqual([
      ['/description', 'description_too_long'],
      ['/rateLimit', 'invalid_rate_limit'],
      ['/headers/webhook-id', 'forbidden_header'],
      ['/metadata', 'wrong_type'],
      ['/signatureType', 'wrong_type'],
    ]);
  });

  it('says null removes, in the message of a wrong type', () => {
    const result = validateSubscriptionPatch({ headers: 'x' }, SETTINGS);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues[0]?.message).toContain('null to remove');
  });
});
