import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec, FakeClock, isConfigurationError } from '../../src/index.js';
import { keyA, keyB, keyForeign } from '../support/cursor-keys.js';
import { queryObject } from '../support/query-arbitraries.js';
import { thrown } from '../support/thrown.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ %';

/**
 * A token in the codec's form, correctly signed with `key`, whatever its payload bytes: what a
 * holder of the key (another service sharing it, an older release) could issue.
 */
function signedToken(payload: string | Buffer, key = keyA): string {
  const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const mac = createHmac('sha256', key)
    .update('api-conventions.cursor.v1\0')
    .update(bytes)
    .digest();
  return `${bytes.toString('base64url')}.${mac.toString('base64url')}`;
}

describe('cursor codec', () => {
  const codec = createCursorCodec({ signingKey: keyA });

  it('decode after encode is the identity for any JSON-serialisable state', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (state) => {
        const token = codec.encode(state);
        expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
        expect(codec.decode(token)).toEqual({ ok: true, state: JSON.parse(JSON.stringify(state)) });
      }),
    );
  });

  it('refuses a token with any single character changed', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 2 }),
        fc.nat(),
        fc.constantFrom(...ALPHABET),
        (state, at, replacement) => {
          const token = codec.encode(state);
          const index = at % token.length;
          fc.pre(token[index] !== replacement);
          const altered = token.slice(0, index) + replacement + token.slice(index + 1);
          const result = codec.decode(altered);
          expect(result.ok).toBe(false);
          if (!result.ok)
            expect(['cursor_malformed', 'cursor_invalid_signature']).toContain(result.code);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('refuses a token with any single bit of its signature flipped', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 2 }), fc.integer({ min: 0, max: 255 }), (state, bit) => {
        const [payload, signature] = codec.encode(state).split('.') as [string, string];
        const bytes = Buffer.from(signature, 'base64url');
        bytes[bit >> 3] = (bytes[bit >> 3] as number) ^ (1 << (bit & 7));
        const result = codec.decode(`${payload}.${bytes.toString('base64url')}`);
        expect(result).toMatchObject({ ok: false, code: 'cursor_invalid_signature' });
      }),
    );
  });

  it('refuses padded, truncated, extended and empty tokens as malformed', () => {
    const token = codec.encode({ after: 41 });
    const [payload, signature] = token.split('.') as [string, string];
    for (const bad of [
      '',
      payload,
      `${payload}.`,
      `.${signature}`,
      `${token}=`,
      `${payload}==.${signature}`,
      `${token}.x`,
      `${payload}.${signature.slice(0, -1)}`,
      `${token}${'A'.repeat(5000)}`,
    ]) {
      expect(codec.decode(bad)).toMatchObject({ ok: false, code: 'cursor_malformed' });
    }
    expect(codec.decode(123 as unknown as string)).toMatchObject({
      ok: false,
      code: 'cursor_malformed',
    });
  });

  it('refuses every other spelling of a payload whose text is the same (invalid UTF-8 for U+FFFD)', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        // Each read as one U+FFFD by a lenient decoder, before any byte of a following character.
        fc.constantFrom(
          [0xff],
          [0x80],
          [0xc0],
          [0xc1],
          [0xf5],
          [0xef, 0xbf],
          [0xe0, 0xa0],
          [0xf0, 0x90, 0x80],
          [0xf4, 0x8f, 0xbf],
        ),
        (before, after, invalid) => {
          // Arrange: a cursor whose state holds U+FFFD, and its payload with that character's
          // bytes replaced by bytes that a lenient decoder also reads as U+FFFD.
          const token = codec.encode({ after: `${before}\uFFFD${after}` });
          const [payload, mac] = token.split('.') as [string, string];
          const bytes = Buffer.from(payload, 'base64url');
          const at = bytes.indexOf(Buffer.from('\uFFFD'));
          const forged = Buffer.concat([
            bytes.subarray(0, at),
            Buffer.from(invalid),
            bytes.subarray(at + 3),
          ]);
          expect(forged.toString('utf8')).toBe(bytes.toString('utf8'));
          // Act
          const result = codec.decode(`${forged.toString('base64url')}.${mac}`);
          // Assert
          expect(result).toMatchObject({ ok: false, code: 'cursor_invalid_signature' });
        },
      ),
    );
  });

  it('refuses a token with any payload byte changed, whatever the state', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 2 }),
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        (state, at, replacement) => {
          const [payload, mac] = codec.encode(state).split('.') as [string, string];
          const bytes = Buffer.from(payload, 'base64url');
          const index = at % bytes.length;
          fc.pre(bytes[index] !== replacement);
          bytes[index] = replacement;
          const result = codec.decode(`${bytes.toString('base64url')}.${mac}`);
          expect(result).toMatchObject({ ok: false, code: 'cursor_invalid_signature' });
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('decodes cursors issued by earlier releases, with non-ASCII, U+FFFD and an escaped lone surrogate', () => {
    // Issued with keyA before the signature covered the payload bytes rather than their text.
    const plain =
      'eyJ2IjoxLCJzIjp7ImFmdGVyIjoibmFtZe-_vSIsIsO8Ijoi8J-OiSDDqSIsImxvbmUiOiJcdWQ4MDAifX0.fdFJCjJv6Hu_FqFAz4I4DaKdnZfPluepYP4_WDJ1ksc';
    expect(codec.decode(plain)).toEqual({
      ok: true,
      state: { after: 'name\uFFFD', ü: '🎉 é', lone: '\uD800' },
    });
    const bound =
      'eyJ2IjoxLCJzIjp7ImFmdGVyIjoicsOpc2VydmF0aW9uIn0sImIiOiJiZzVhVTlFbWx4T0VnaWhGdUtYNEhnIn0.qzrE7Ipbd4PDWm5bML9dAIrkExUsa7Xwdv2MuG4PhYM';
    const query = { status: 'ouvert', f: { b: ['1', '2'], a: { z: null } }, n: [3, 'x'] };
    expect(codec.decode(bound, { query })).toEqual({ ok: true, state: { after: 'réservation' } });
    expect(codec.decode(bound, { query: { ...query, status: 'clos' } })).toMatchObject({
      code: 'cursor_query_mismatch',
    });
  });

  it('refuses a cursor signed with a key it does not hold', () => {
    const foreign = createCursorCodec({ signingKey: keyForeign });
    expect(codec.decode(foreign.encode({ after: 1 }))).toMatchObject({
      ok: false,
      code: 'cursor_invalid_signature',
    });
  });

  it('refuses as malformed a correctly signed token whose payload is not a cursor of this version', () => {
    // The construction above is the codec's own: a payload it issued verifies.
    expect(codec.decode(signedToken('{"v":1,"s":{"after":3}}'))).toEqual({
      ok: true,
      state: { after: 3 },
    });
    for (const payload of [
      'not json',
      Buffer.from([0xff, 0xfe, 0x7b]),
      // Not well-formed UTF-8 (a lone continuation byte, an overlong "s", a surrogate), and a BOM.
      Buffer.concat([Buffer.from('{"v":1,"s":"'), Buffer.from([0x80]), Buffer.from('"}')]),
      Buffer.concat([Buffer.from('{"v":1,"'), Buffer.from([0xc1, 0xb3]), Buffer.from('":1}')]),
      Buffer.concat([
        Buffer.from('{"v":1,"s":"'),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from('"}'),
      ]),
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"v":1,"s":1}')]),
      '"a string"',
      'null',
      '[1,{"v":1}]',
      '{"v":2,"s":1}',
      '{"s":1}',
      '{"v":1}',
      '{"v":1,"s":1,"e":"tomorrow"}',
      '{"v":1,"s":1,"b":42}',
    ]) {
      const result = codec.decode(signedToken(payload));
      expect(result, String(payload)).toEqual({
        ok: false,
        code: 'cursor_malformed',
        message:
          'cursor must be a token in the form the service issued; send the cursor exactly as received, or omit it to start from the first page.',
      });
    }
  });

  it('expires a cursor exactly ttl after it was issued, with its own code', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 1, max: 10 ** 8 }),
        fc.integer({ min: 0, max: 2 * 10 ** 8 }),
        (start, ttlMs, elapsed) => {
          const clock = new FakeClock(start);
          const expiring = createCursorCodec({ signingKey: keyA, ttlMs, clock });
          const token = expiring.encode('state');
          clock.advance(elapsed);
          const result = expiring.decode(token);
          if (elapsed < ttlMs) {
            expect(result).toEqual({ ok: true, state: 'state', expiresAt: start + ttlMs });
          } else {
            expect(result).toMatchObject({ ok: false, code: 'cursor_expired' });
          }
        },
      ),
    );
  });

  it('refuses a bound cursor replayed with another value of any filter, or with a filter added', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.string(), { maxKeys: 5 }),
        fc.string(),
        fc.string(),
        (filters, name, value) => {
          fc.pre(name !== 'cursor' && name !== 'limit' && filters[name] !== value);
          const token = codec.encode({ after: 1 }, { query: filters });
          const changed = { ...filters, [name]: value };
          expect(codec.decode(token, { query: changed })).toMatchObject({
            ok: false,
            code: 'cursor_query_mismatch',
          });
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('accepts a bound cursor for the same filters in any order and input form, whatever cursor and limit say', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string(), fc.string()), { maxLength: 6 }),
        fc.string(),
        fc.string(),
        (pairs, cursor, limit) => {
          const filters = pairs.filter(([name]) => name !== 'cursor' && name !== 'limit');
          const token = codec.encode({ after: 1 }, { query: new URLSearchParams(filters) });
          const shuffled = [...filters].reverse();
          const replay = new URLSearchParams([...shuffled, ['cursor', cursor], ['limit', limit]]);
          expect(codec.decode(token, { query: replay }).ok).toBe(true);
          expect(codec.decode(token, { query: replay.toString() }).ok).toBe(true);
        },
      ),
      { numRuns: 1_000 },
    );
    fc.assert(
      fc.property(queryObject, (query) => {
        const token = codec.encode(null, { query });
        expect(codec.decode(token, { query: { ...query } }).ok).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  });

  it('answers a query whose value refers to itself or is shared 2^64 times over: encode throws, decode refuses', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.a = cyclic;
    cyclic.b = cyclic;
    let shared: unknown = 'x';
    for (let i = 0; i < 64; i++) shared = [shared, shared];
    const token = codec.encode({ after: 1 }, { query: 'status=open' });
    for (const [value, problem] of [
      [cyclic, 'the value of "status" refers to itself'],
      [shared, 'the query holds more than 100000 values'],
    ] as const) {
      const query = { status: value };
      expect(thrown(() => codec.encode({ after: 1 }, { query }))).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
        message: expect.stringContaining(problem),
      });
      expect(codec.decode(token, { query })).toEqual({
        ok: false,
        code: 'cursor_query_mismatch',
        message: expect.stringContaining(
          `cursor cannot be checked against this query, as ${problem}`,
        ),
      });
      // A parameter left out of the binding is never written, so it cannot be refused.
      const lenient = createCursorCodec({ signingKey: keyA, bindingExclude: ['status'] });
      expect(lenient.decode(lenient.encode(2, { query }), { query })).toEqual({
        ok: true,
        state: 2,
      });
    }
  });

  it('binds to the filters of the documented example', () => {
    const token = codec.encode(7, { query: 'status=open&sort=date&limit=10' });
    expect(
      codec.decode(token, { query: { sort: 'date', status: 'open', limit: '50', cursor: 'x' } }),
    ).toEqual({
      ok: true,
      state: 7,
    });
    expect(codec.decode(token, { query: new URLSearchParams('sort=date&status=open') }).ok).toBe(
      true,
    );
    expect(codec.decode(token, { query: 'status=closed&sort=date' })).toMatchObject({
      code: 'cursor_query_mismatch',
    });
    expect(codec.decode(token)).toMatchObject({ code: 'cursor_query_mismatch' });
  });

  it('rotates keys: verifies cursors of old keys, signs only with the new one', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 2 }), (state) => {
        const before = createCursorCodec({ signingKey: keyA });
        const during = createCursorCodec({ signingKey: keyB, verificationKeys: [keyA] });
        const after = createCursorCodec({ signingKey: keyB });
        const expected = { ok: true, state: JSON.parse(JSON.stringify(state)) };
        expect(during.decode(before.encode(state))).toEqual(expected);
        const fresh = during.encode(state);
        expect(after.decode(fresh)).toEqual(expected);
        expect(before.decode(fresh)).toMatchObject({ ok: false, code: 'cursor_invalid_signature' });
      }),
      { numRuns: 200 },
    );
  });

  it('keeps a bound cursor valid across a rotation', () => {
    const before = createCursorCodec({ signingKey: keyA });
    const during = createCursorCodec({ signingKey: keyB, verificationKeys: [keyA] });
    const token = before.encode(1, { query: 'status=open' });
    expect(during.decode(token, { query: 'status=open' }).ok).toBe(true);
    expect(during.decode(token, { query: 'status=void' })).toMatchObject({
      code: 'cursor_query_mismatch',
    });
  });

  it('never issues a token that decode refuses: a state too large for maxTokenLength is refused at encode', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 60, max: 600 }), (state, maxTokenLength) => {
        const bounded = createCursorCodec({ signingKey: keyA, maxTokenLength });
        const error = thrown(() => bounded.encode(state));
        if (error === undefined) {
          expect(bounded.decode(bounded.encode(state)).ok).toBe(true);
        } else {
          expect(error).toMatchObject({ code: 'invalid_cursor_state' });
          expect((error as Error).message).toMatch(
            new RegExp(
              `^the cursor token length must be at most maxTokenLength \\(${maxTokenLength}\\), the longest decode accepts: put only the position in the cursor state \\(for example the last id\\), or raise maxTokenLength, got \\d+\\.$`,
            ),
          );
        }
      }),
    );
    expect(thrown(() => codec.encode({ after: 'x'.repeat(5000) }))).toMatchObject({
      code: 'invalid_cursor_state',
    });
  });

  it('refuses at encode a state whose toJSON gives nothing, instead of issuing a malformed cursor', () => {
    const state = { toJSON: () => undefined };
    expect(thrown(() => codec.encode(state))).toMatchObject({
      code: 'invalid_cursor_state',
      message:
        'cursor state must be a JSON value (an object, array, string, number, boolean or null), got an object.',
    });
  });

  it('with a clock that returns NaN, expires cursors at decode and refuses to issue them', () => {
    const clock = new FakeClock(0);
    const token = createCursorCodec({ signingKey: keyA, ttlMs: 1000, clock }).encode('state');
    const broken = createCursorCodec({ signingKey: keyA, ttlMs: 1000, clock: { now: () => NaN } });
    expect(broken.decode(token)).toMatchObject({ ok: false, code: 'cursor_expired' });
    expect(thrown(() => broken.encode('state'))).toMatchObject({
      code: 'invalid_option',
      message: 'createCursorCodec clock.now() must be finite milliseconds, got NaN.',
    });
  });

  it.each<[string, unknown, string]>([
    [
      'a misspelt query',
      { qurey: 'status=open' },
      'encode() has no option "qurey"; did you mean "query"? Its options are query.',
    ],
    ['null', null, 'encode() options must be an object such as { query }, or left out, got null.'],
    [
      'a query string',
      'status=open',
      'encode() options must be an object such as { query }, or left out, got "status=open".',
    ],
    [
      'options that cannot be read',
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error('boom');
          },
        },
      ),
      'encode() options must be plain data, got an object that threw when read.',
    ],
  ])('refuses encode options that are %s, naming what to give', (_, options, message) => {
    expect(thrown(() => codec.encode('s', options as never))).toMatchObject({
      code: 'invalid_option',
      message,
    });
  });

  it('decodes a bound cursor with null options as one without a query, without throwing', () => {
    const token = codec.encode('s', { query: 'status=open' });
    expect(codec.decode(token, null as never)).toMatchObject({
      ok: false,
      code: 'cursor_query_mismatch',
    });
  });

  it('throws a ConfigurationError for a short key or one that is not a string or bytes, a bad ttl or a state JSON cannot carry', () => {
    const attempts: (() => unknown)[] = [
      () => createCursorCodec({ signingKey: 'short' }),
      () => createCursorCodec({ signingKey: keyA, verificationKeys: [new Uint8Array(8)] }),
      () => createCursorCodec({ signingKey: keyA, ttlMs: 0 }),
      () => createCursorCodec({ signingKey: keyA, maxTokenLength: 0 }),
      () => codec.encode(undefined),
      () => codec.encode(() => 1),
      () => codec.encode(10n),
    ];
    for (const attempt of attempts) expect(isConfigurationError(thrown(attempt))).toBe(true);
    // A key of another type (a number, an object read from configuration) is named in the error.
    expect(thrown(() => createCursorCodec({ signingKey: 1234 as never }))).toMatchObject({
      code: 'invalid_option',
      message: expect.stringContaining('signingKey must be a string or bytes of at least 32 bytes'),
    });
    expect(
      thrown(() =>
        createCursorCodec({ signingKey: keyA, verificationKeys: [{ length: 64 } as never] }),
      ),
    ).toMatchObject({
      code: 'invalid_option',
      message: expect.stringContaining('verificationKeys[0] must be a string or bytes'),
    });
    expect(thrown(() => codec.encode(10n))).toMatchObject({ code: 'invalid_cursor_state' });
  });

  it('throws a ConfigurationError naming the option for options, verificationKeys, bindingExclude or clock of the wrong type', () => {
    const cases: [unknown, string][] = [
      [
        undefined,
        'createCursorCodec options must be an object such as { signingKey }, got undefined.',
      ],
      [null, 'createCursorCodec options must be an object such as { signingKey }, got null.'],
      ['x'.repeat(32), 'createCursorCodec options must be an object such as { signingKey }, got "'],
      [{ signingKey: keyA, verificationKeys: 'x' }, 'verificationKeys must be an array of keys'],
      [{ signingKey: keyA, verificationKeys: keyB }, 'verificationKeys must be an array of keys'],
      [
        { signingKey: keyA, bindingExclude: 5 },
        'bindingExclude must be an array of parameter names',
      ],
      [
        { signingKey: keyA, bindingExclude: 'cursor' },
        'bindingExclude must be an array of parameter names',
      ],
      [
        { signingKey: keyA, bindingExclude: ['cursor', 5] },
        'bindingExclude[1] must be a parameter name, got 5.',
      ],
      [{ signingKey: keyA, clock: {} }, 'clock must be a Clock with now(), got an object.'],
      [{ signingKey: keyA, clock: Date.now }, 'clock must be a Clock with now(), got a function.'],
    ];
    for (const [options, message] of cases) {
      expect(
        thrown(() => createCursorCodec(options as never)),
        String(options),
      ).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
        message: expect.stringContaining(message),
      });
    }
  });
});
