/**
 * Shared arbitraries for pagination tests: parameter values of every kind a framework can hand
 * over, whole queries as plain objects and raw strings, and the oracle that says what a strict
 * numeric parameter must give.
 */
import fc from 'fast-check';

/** The strings docs/pagination.md lists as refused, plus Unicode digits that a lax parser might accept. */
export const knownBadNumbers = [
  '',
  '1e3',
  '12abc',
  '0x10',
  ' 5',
  '5 ',
  '+5',
  '-5',
  '5.0',
  '1_000',
  'Infinity',
  'NaN',
  '٣',
  '５',
] as const;

/** A decimal string for a whole number in [min, max], sometimes with leading zeros. */
export function decimalString(min: number, max: number): fc.Arbitrary<string> {
  return fc
    .tuple(fc.integer({ min, max }), fc.nat({ max: 20 }))
    .map(([n, zeros]) => '0'.repeat(zeros) + String(n));
}

/** Any string a client may send for a numeric parameter: decimal (in or out of range) or not. */
export const numericParameterText: fc.Arbitrary<string> = fc.oneof(
  decimalString(0, 1_000),
  fc.bigInt({ min: 0n, max: 10n ** 40n }).map(String),
  fc.constantFrom(...knownBadNumbers),
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.stringMatching(/^[0-9]{1,30}$/),
);

/** A value a framework may put in a parsed query object. */
export const queryObjectValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: numericParameterText },
  { weight: 1, arbitrary: fc.array(fc.string(), { maxLength: 3 }) },
  {
    weight: 1,
    arbitrary: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.array(fc.string()))),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined)),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** A parameter name: one of the pagination parameters most of the time. */
export const parameterName: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('pageNumber', 'pageSize', 'cursor', 'limit') },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'status') },
  { weight: 1, arbitrary: fc.string() },
);

/** A plain query object as `qs`, Fastify or Koa may produce it. */
export const queryObject: fc.Arbitrary<Record<string, unknown>> = fc
  .array(fc.tuple(parameterName, queryObjectValue), { maxLength: 6 })
  .map((entries) => {
    const object: Record<string, unknown> = {};
    for (const [name, value] of entries) {
      Object.defineProperty(object, name, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return object;
  });

/** A raw query string: well-formed pairs, or anything at all. */
export const rawQueryString: fc.Arbitrary<string> = fc.oneof(
  fc
    .array(fc.tuple(parameterName, numericParameterText), { maxLength: 6 })
    .map((pairs) => new URLSearchParams(pairs).toString()),
  fc
    .array(fc.tuple(parameterName, fc.string()), { maxLength: 6 })
    .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`),
  fc.string(),
  fc.string({ unit: 'binary' }),
);

/** What a strict numeric parameter gives for one value, by the rules of docs/pagination.md. */
export type Expected = { ok: true; value: number } | { ok: false; code: string };

/**
 * The oracle: one plain value, `^[0-9]+$`, then the range (compared exactly, as a big integer).
 * @param text - the value sent, or `undefined` when absent
 */
export function expectedNumber(
  text: string | undefined,
  rule: {
    defaultValue: number;
    minimum: number;
    maximum: number;
    tooSmall: string;
    tooLarge: string;
  },
): Expected {
  if (text === undefined) return { ok: true, value: rule.defaultValue };
  if (!/^[0-9]+$/.test(text)) return { ok: false, code: 'not_a_decimal_integer' };
  const value = BigInt(text);
  if (value < BigInt(rule.minimum)) return { ok: false, code: rule.tooSmall };
  if (value > BigInt(rule.maximum)) return { ok: false, code: rule.tooLarge };
  return { ok: true, value: Number(value) };
}

/** What a framework hands over for a query with one parameter: each of the three input forms. */
export function inputForms(name: string, value: string): { label: string; query: unknown }[] {
  return [
    { label: 'object', query: { [name]: value } },
    { label: 'URLSearchParams', query: new URLSearchParams([[name, value]]) },
    { label: 'raw string', query: new URLSearchParams([[name, value]]).toString() },
  ];
}
