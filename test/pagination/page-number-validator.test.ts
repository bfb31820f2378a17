import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cursorValidator,
  DEFAULT_PROBLEM_TYPE_BASE,
  isConfigurationError,
  pageNumberValidator,
  pageSizePresets,
} from '../../src/index.js';
import { PROXY_TRAPS, revokedProxy, throwingProxy } from '../support/hostile.js';
import {
  decimalString,
  expectedNumber,
  inputForms,
  knownBadNumbers,
  numericParameterText,
  queryObject,
  rawQueryString,
} from '../support/query-arbitraries.js';
import { thrown } from '../support/thrown.js';

const validate = pageNumberValidator();
const pageSizeRule = {
  defaultValue: 20,
  minimum: 1,
  maximum: 200,
  tooSmall: 'page_size_too_small',
  tooLarge: 'page_size_too_large',
};
const pageNumberRule = {
  defaultValue: 1,
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  tooSmall: 'page_number_too_small',
  tooLarge: 'page_number_too_large',
};

describe('pageNumberValidator', () => {
  it('accepts exactly the decimal strings within range and returns the number, in every input form', () => {
    fc.assert(
      fc.property(fc.constantFrom('pageNumber', 'pageSize'), numericParameterText, (name, text) => {
        const rule = name === 'pageSize' ? pageSizeRule : pageNumberRule;
        const expected = expectedNumber(text, rule);
        for (const { query } of inputForms(name, text)) {
          const result = validate(query as string);
          if (expected.ok) {
            expect(result.ok).toBe(true);
            if (result.ok) expect(result.value[name as 'pageSize']).toBe(expected.value);
          } else {
            expect(result.ok).toBe(false);
            if (!result.ok) {
              expect(result.errors.map((e) => [e.code, e.parameter])).toEqual([
                [expected.code, name],
              ]);
            }
          }
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('never clamps: every size above the maximum is refused with page_size_too_large and a message stating the maximum', () => {
    fc.assert(
      fc.property(fc.integer({ min: 201, max: 10 ** 9 }), (size) => {
        const result = validate({ pageSize: String(size) });
        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect(result.errors[0].code).toBe('page_size_too_large');
        expect(result.errors[0].message).toContain('at most 200');
        expect(result.problem.status).toBe(400);
        expect(result.problem.detail).toContain('200');
      }),
    );
  });

  it.each(knownBadNumbers)('refuses %j as not a decimal integer, naming the parameter', (text) => {
    const result = validate({ pageSize: text });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatchObject({
      code: 'not_a_decimal_integer',
      parameter: 'pageSize',
    });
    expect(result.errors[0].message).toMatch(/^pageSize must be a whole number/);
  });

  it('refuses 0 and a 30-digit number with their own codes', () => {
    const zero = validate('pageNumber=0');
    const huge = validate(`pageNumber=${'9'.repeat(30)}`);
    expect(zero.ok ? undefined : zero.errors[0].code).toBe('page_number_too_small');
    expect(huge.ok ? undefined : huge.errors[0].code).toBe('page_number_too_large');
  });

  it('refuses a repeated parameter in every form: array, repeated URLSearchParams entry, raw string', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('pageNumber', 'pageSize'),
        fc.array(decimalString(1, 200), { minLength: 2, maxLength: 4 }),
        (name, values) => {
          const pairs = values.map((v): [string, string] => [name, v]);
          for (const query of [
            { [name]: values },
            new URLSearchParams(pairs),
            new URLSearchParams(pairs).toString(),
          ]) {
            const result = validate(query);
            expect(result.ok ? undefined : result.errors.map((e) => e.code)).toEqual([
              'parameter_repeated',
            ]);
          }
        },
      ),
    );
  });

  it('refuses an array of one value and any non-string value (nested object, number, null)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.dictionary(fc.string(), fc.string()),
          fc.integer(),
          fc.boolean(),
          fc.constant(null),
        ),
        (value) => {
          const result = validate({ pageSize: value });
          expect(result.ok ? undefined : result.errors[0].code).toBe('parameter_not_a_string');
        },
      ),
    );
    const single = validate({ pageSize: ['20'] });
    expect(single.ok ? undefined : single.errors[0].code).toBe('parameter_repeated');
  });

  it('applies the defaults when the parameters are absent, from any input form', () => {
    for (const query of [{}, '', '?', new URLSearchParams(), 'other=1', { pageSize: undefined }]) {
      expect(validate(query)).toEqual({ ok: true, value: { pageNumber: 1, pageSize: 20 } });
    }
  });

  it('reads only own properties: an inherited name is not a parameter', () => {
    const query = Object.create({ pageSize: 'abc' }) as Record<string, unknown>;
    expect(validate(query)).toEqual({ ok: true, value: { pageNumber: 1, pageSize: 20 } });
  });

  it('reports every refused parameter, and the problem describes the first', () => {
    const result = validate('pageNumber=abc&pageSize=500');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((e) => e.code)).toEqual([
      'not_a_decimal_integer',
      'page_size_too_large',
    ]);
    expect(result.problem).toMatchObject({
      type: `${DEFAULT_PROBLEM_TYPE_BASE}not_a_decimal_integer`,
      title: 'Query parameter is not a whole number',
      status: 400,
      code: 'not_a_decimal_integer',
      parameter: 'pageNumber',
      errors: [
        { code: 'not_a_decimal_integer', parameter: 'pageNumber' },
        { code: 'page_size_too_large', parameter: 'pageSize' },
      ],
    });
  });

  it('answers with the configured status and type prefix (422 for platforms that use it)', () => {
    const strict = pageNumberValidator({ status: 422, typeBase: 'https://docs.example.com/p/' });
    const result = strict({ pageSize: '0' });
    expect(result.ok ? undefined : result.problem).toMatchObject({
      status: 422,
      type: 'https://docs.example.com/p/page_size_too_small',
    });
  });

  it('takes per-endpoint sizes: the analytical preset allows 500 and defaults to 50', () => {
    const analytical = pageNumberValidator({
      sizes: pageSizePresets.analyticalData,
      maxPageNumber: 10,
    });
    expect(analytical({})).toEqual({ ok: true, value: { pageNumber: 1, pageSize: 50 } });
    expect(analytical({ pageSize: '500' }).ok).toBe(true);
    expect(analytical({ pageSize: '501' }).ok).toBe(false);
    const beyond = analytical({ pageNumber: '11' });
    expect(beyond.ok ? undefined : beyond.errors[0].code).toBe('page_number_too_large');
  });

  it('refuses unusable configuration with a ConfigurationError', () => {
    const attempts = [
      () => pageNumberValidator({ sizes: { defaultSize: 0, maxSize: 10 } }),
      () => pageNumberValidator({ sizes: { defaultSize: 20, maxSize: 10 } }),
      () => pageNumberValidator({ sizes: { defaultSize: 1, maxSize: 2 ** 60 } }),
      () => pageNumberValidator({ maxPageNumber: 0 }),
      () => pageNumberValidator({ status: 500 }),
      () => pageNumberValidator({ status: 200 }),
    ];
    for (const attempt of attempts) {
      expect(isConfigurationError(thrown(attempt))).toBe(true);
    }
  });

  it('throws a ConfigurationError naming the options when they are not an object', () => {
    for (const options of [null, 'pageSize', 20, []]) {
      expect(thrown(() => pageNumberValidator(options as never))).toMatchObject({
        name: 'ConfigurationError',
        code: 'invalid_option',
        message: expect.stringContaining(
          'pageNumberValidator options must be an object such as { sizes: pageSizePresets.businessData }, or left out',
        ),
      });
    }
  });

  it('never throws, for 50,000 arbitrary query objects and 50,000 raw strings', () => {
    const check = (query: unknown) => {
      const result = validate(query as string);
      if (result.ok) {
        expect(Number.isSafeInteger(result.value.pageNumber)).toBe(true);
        expect(result.value.pageSize).toBeGreaterThanOrEqual(1);
        expect(result.value.pageSize).toBeLessThanOrEqual(200);
      } else {
        expect(result.errors.length).toBeGreaterThan(0);
        expect(result.problem.status).toBe(400);
      }
    };
    fc.assert(fc.property(queryObject, check), { numRuns: 50_000 });
    fc.assert(fc.property(rawQueryString, check), { numRuns: 50_000 });
  });

  it('never throws for inputs that are not queries at all', () => {
    fc.assert(
      fc.property(fc.anything({ withMap: true, withSet: true, withTypedArray: true }), (input) => {
        expect(() => validate(input as string)).not.toThrow();
      }),
    );
    const hostile = new Proxy(
      {},
      {
        has: () => {
          throw new Error('x');
        },
        get: () => {
          throw new Error('x');
        },
        getOwnPropertyDescriptor: () => {
          throw new Error('x');
        },
      },
    );
    expect(validate(hostile).ok).toBe(true);
  });

  it('reads a query behind a Proxy whose getPrototypeOf trap throws, and answers for one whose every trap throws', () => {
    // Arrange: `instanceof URLSearchParams` throws on the first; the data can still be read.
    const onlyPrototype = throwingProxy(['getPrototypeOf'], { pageNumber: '3', pageSize: '5' });
    const everyTrap = throwingProxy(PROXY_TRAPS, { pageSize: '5' });
    // Act and assert
    expect(pageNumberValidator()(onlyPrototype)).toEqual({
      ok: true,
      value: { pageNumber: 3, pageSize: 5 },
    });
    expect(pageNumberValidator()(everyTrap)).toEqual({
      ok: true,
      value: { pageNumber: 1, pageSize: 20 },
    });
    expect(pageNumberValidator()({ pageSize: revokedProxy([]) })).toMatchObject({
      ok: false,
      errors: [{ code: 'parameter_not_a_string', parameter: 'pageSize' }],
    });
    expect(cursorValidator()(onlyPrototype)).toMatchObject({ ok: true });
  });
});
