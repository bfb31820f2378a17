import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createCursorCodec,
  cursorValidator,
  FakeClock,
  isConfigurationError,
} from '../../src/index.js';
import { keyA, keyForeign } from '../support/cursor-keys.js';
import {
  expectedNumber,
  inputForms,
  numericParameterText,
  queryObject,
  rawQueryString,
} from '../support/query-arbitraries.js';
import { thrown } from '../support/thrown.js';

const validate = cursorValidator();
const limitRule = {
  defaultValue: 50,
  minimum: 1,
  maximum: 500,
  tooSmall: 'limit_too_small',
  tooLarge: 'limit_too_large',
};

describe('cursorValidator', () => {
  it('accepts exactly the decimal limits within 1..500 and returns the number, in every input form', () => {
    fc.assert(
      fc.property(numericParameterText, (text) => {
        const expected = expectedNumber(text, limitRule);
        for (const { query } of inputForms('limit', text)) {
          const result = validate(query as string);
          if (expected.ok) {
            expect(result).toEqual({
              ok: true,
              value: { cursor: undefined, state: undefined, limit: expected.value },
            });
          } else {
            expect(result.ok ? undefined : result.errors.map((e) => [e.code, e.parameter])).toEqual(
              [[expected.code, 'limit']],
            );
          }
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('never clamps: every limit above the maximum is refused with limit_too_large stating the maximum', () => {
    fc.assert(
      fc.property(fc.integer({ min: 501, max: 10 ** 9 }), (limit) => {
        const result = validate(`limit=${limit}`);
        expect(result.ok ? undefined : result.errors[0]).toMatchObject({ code: 'limit_too_large' });
        expect(result.ok ? '' : result.problem.detail).toContain('at most 500');
      }),
    );
  });

  it('passes an opaque cursor through without a codec, but not an empty, repeated or nested one', () => {
    expect(validate({ cursor: 'abc', limit: '10' })).toEqual({
      ok: true,
      value: { cursor: 'abc', state: undefined, limit: 10 },
    });
    const code = (query: unknown) => {
      const result = validate(query as string);
      return result.ok ? undefined : result.errors[0].code;
    };
    expect(code('cursor=')).toBe('cursor_malformed');
    expect(code({ cursor: 'x'.repeat(4097) })).toBe('cursor_malformed');
    expect(code('cursor=a&cursor=b')).toBe('parameter_repeated');
    expect(code({ cursor: ['a'] })).toBe('parameter_repeated');
    expect(code({ cursor: { a: 'b' } })).toBe('parameter_not_a_string');
  });

  it('with a codec, returns the state of a valid cursor and refuses tampered, foreign, expired and rebound ones with their codes', () => {
    const clock = new FakeClock(0);
    const codec = createCursorCodec<{ after: number }>({ signingKey: keyA, ttlMs: 1_000, clock });
    const withCodec = cursorValidator({ codec, status: 422 });
    const token = codec.encode({ after: 9 }, { query: 'status=open' });
    expect(withCodec({ status: 'open', cursor: token, limit: '5' })).toEqual({
      ok: true,
      value: { cursor: token, state: { after: 9 }, limit: 5 },
    });
    const refusedWith = (query: unknown) => {
      const result = withCodec(query as string);
      return result.ok
        ? undefined
        : [result.problem.status, result.problem.code, result.problem.parameter];
    };
    const foreign = createCursorCodec({ signingKey: keyForeign }).encode({ after: 9 });
    expect(refusedWith({ status: 'open', cursor: `${token}A` })).toEqual([
      422,
      'cursor_malformed',
      'cursor',
    ]);
    expect(refusedWith({ cursor: foreign })).toEqual([422, 'cursor_invalid_signature', 'cursor']);
    expect(refusedWith({ status: 'closed', cursor: token })).toEqual([
      422,
      'cursor_query_mismatch',
      'cursor',
    ]);
    clock.advance(1_000);
    expect(refusedWith(new URLSearchParams({ status: 'open', cursor: token }))).toEqual([
      422,
      'cursor_expired',
      'cursor',
    ]);
  });

  it('reports a bad cursor and a bad limit together, cursor first', () => {
    const result = validate('limit=0&cursor=');
    expect(result.ok ? undefined : result.errors.map((e) => e.code)).toEqual([
      'cursor_malformed',
      'limit_too_small',
    ]);
  });

  it('answers with the configured type prefix', () => {
    const documented = cursorValidator({ typeBase: 'https://docs.example.com/p/' });
    const result = documented({ limit: '501' });
    expect(result.ok ? undefined : result.problem).toMatchObject({
      status: 400,
      type: 'https://docs.example.com/p/limit_too_large',
    });
  });

  it('refuses unusable configuration with a ConfigurationError', () => {
    const attempt = () => cursorValidator({ sizes: { defaultSize: 600, maxSize: 500 } });
    expect(isConfigurationError(thrown(attempt))).toBe(true);
    expect(thrown(attempt)).toMatchObject({
      code: 'invalid_limit',
      message: 'sizes.defaultSize must be a whole number from 1 to maxSize (500), got 600.',
    });
  });

  it.each<[string, unknown, string]>([
    [
      'sizes with a misspelt key',
      { sizes: { defaultSize: 50, maxsize: 500 } },
      'sizes has no option "maxsize"; did you mean "maxSize"? Its options are defaultSize, maxSize.',
    ],
    [
      'sizes that are an array',
      { sizes: [50, 500] },
      'sizes options must be an object such as { defaultSize: 20, maxSize: 200 }, got an array.',
    ],
    [
      'a misspelt sizes',
      { size: { defaultSize: 50, maxSize: 500 } },
      'cursorValidator has no option "size"; did you mean "sizes"? Its options are status, typeBase, sizes, codec, maxCursorLength.',
    ],
  ])('refuses %s with the nearest name or what to give', (_, options, message) => {
    expect(thrown(() => cursorValidator(options as never))).toMatchObject({
      code: 'invalid_option',
      message,
    });
  });

  it('throws a ConfigurationError at construction for options that are not an object, or a codec without decode', () => {
    for (const options of [null, 'codec', 5, []]) {
      expect(thrown(() => cursorValidator(options as never))).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
        message: expect.stringContaining('cursorValidator options must be an object such as'),
      });
    }
    for (const codec of [{}, null, { decode: 'x' }, 'codec', () => ({ ok: true })]) {
      expect(thrown(() => cursorValidator({ codec: codec as never }))).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
        message: expect.stringContaining(
          'codec must be a codec from createCursorCodec() with decode(), got ',
        ),
      });
    }
  });

  it('refuses a bound cursor sent with a filter that refers to itself, instead of never returning', () => {
    const codec = createCursorCodec({ signingKey: keyA });
    const withCodec = cursorValidator({ codec });
    const cursor = codec.encode({ after: 1 }, { query: 'status=open' });
    const cyclic: Record<string, unknown> = {};
    cyclic.a = cyclic;
    cyclic.b = cyclic;
    const result = withCodec({ cursor, status: cyclic });
    expect(result).toMatchObject({
      ok: false,
      errors: [
        {
          code: 'cursor_query_mismatch',
          parameter: 'cursor',
          message: expect.stringContaining('the value of "status" refers to itself'),
        },
      ],
    });
  });

  it('refuses a maxCursorLength that is not a whole number >= 1, so the bound always applies', () => {
    for (const maxCursorLength of [Number.NaN, 0, -1, 1.5, Number.POSITIVE_INFINITY, '10']) {
      const attempt = () => cursorValidator({ maxCursorLength: maxCursorLength as number });
      expect(thrown(attempt)).toMatchObject({
        code: 'invalid_option',
        message: expect.stringContaining('maxCursorLength must be a whole number from 1 to '),
      });
    }
  });

  it('never throws, for 50,000 arbitrary query objects and 50,000 raw strings, with a codec', () => {
    const withCodec = cursorValidator({ codec: createCursorCodec({ signingKey: keyA }) });
    const check = (query: unknown) => {
      const result = withCodec(query as string);
      if (result.ok) {
        expect(result.value.limit).toBeGreaterThanOrEqual(1);
        expect(result.value.limit).toBeLessThanOrEqual(500);
        expect(result.value.cursor).toBeUndefined();
      } else {
        expect(result.errors.length).toBeGreaterThan(0);
      }
    };
    fc.assert(fc.property(queryObject, check), { numRuns: 50_000 });
    fc.assert(fc.property(rawQueryString, check), { numRuns: 50_000 });
  });
});
