/**
 * The form the Redis queue stores a job in, without the JSON text for a job of plain fields: it
 * takes and refuses exactly what `JSON.parse(JSON.stringify(job))` does, and stores what it gives.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonForm } from '../../src/queue-redis/json-form.js';

type Outcome = { value: unknown } | { error: unknown };

function outcome(make: () => unknown): Outcome {
  try {
    return { value: make() };
  } catch (error) {
    return { error };
  }
}

/** Equal as stored: the same JSON text, the same structure and key order, -0 told from 0. */
function sameForm(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) {
    return Object.is(a, b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const keys = Object.keys(a);
  if (keys.join('\u0000') !== Object.keys(b).join('\u0000')) return false;
  return keys.every((key) =>
    sameForm((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}

/** `jsonForm` gives what the round trip gives, or throws as it throws. */
function expectSameAsRoundTrip(input: unknown): void {
  const viaText = outcome(() => JSON.parse(JSON.stringify(input)));
  const viaForm = outcome(() => jsonForm(input));
  if ('error' in viaText) {
    expect('error' in viaForm, 'refused by the round trip').toBe(true);
    const [text, form] = [viaText.error, (viaForm as { error: unknown }).error] as Error[];
    expect(form?.constructor).toBe(text?.constructor);
    expect(form?.message).toBe(text?.message);
    return;
  }
  expect('value' in viaForm, 'taken by the round trip').toBe(true);
  const { value } = viaForm as { value: unknown };
  expect(sameForm(value, viaText.value)).toBe(true);
  // What Redis holds: the text BullMQ writes of the form is the text of the job.
  expect(JSON.stringify(value)).toBe(JSON.stringify(input));
  // A fresh value: a change to the job after enqueue changes nothing stored.
  if (typeof value === 'object' && value !== null) expect(value).not.toBe(input);
}

const KEYS = [
  'id',
  'subscriptionId',
  'endpointUrl',
  'body',
  'attempts',
  'firstAttemptAt',
  'replay',
  'accountCode',
  'startsCounted',
  '__proto__',
  'toJSON',
  'constructor',
  '1',
  '0',
  '',
];

const unicode = fc.string({ unit: 'binary', maxLength: 12 });
const primitive = fc.oneof(
  unicode,
  fc.string({ maxLength: 12 }),
  fc.double(),
  fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e21),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant(Symbol('s')),
  fc.bigInt(),
);
const nested = fc.oneof(
  fc.dictionary(fc.constantFrom(...KEYS), primitive, { maxKeys: 3 }),
  fc.array(primitive, { maxLength: 3 }),
  fc.constant(new Date(0)),
  fc.constant(() => 'a function'),
  fc.constant(Object.assign(() => 'a function', { toJSON: () => 'its toJSON' })),
  fc.constant(new Number(3)),
  fc.constant(new String('boxed')),
  fc.constant(new Map([['a', 1]])),
);
const field = fc.oneof({ weight: 6, arbitrary: primitive }, { weight: 1, arbitrary: nested });

/** A job's fields: mostly a delivery job's, with anything JSON may meet in their place. */
const fields = fc.dictionary(fc.constantFrom(...KEYS), field, { maxKeys: 10 });

/** The same fields, held in the ways an object may hold them. */
const shaped = fields.chain((record) =>
  fc
    .constantFrom(
      'plain',
      'own __proto__',
      'null prototype',
      'class instance',
      'getters',
      'throwing getter',
      'non-enumerable',
      'inherited toJSON',
      'proxy',
      'throwing proxy',
      'cycle',
      'array',
    )
    .map((how) => shapedAs(how, record)),
);

class Held {
  constructor(fields: Record<string, unknown>) {
    Object.assign(this, fields);
  }
}

function shapedAs(how: string, record: Record<string, unknown>): unknown {
  const entries = Object.entries(record);
  const define = (target: object, get: boolean) => {
    for (const [key, value] of entries) {
      Object.defineProperty(target, key, {
        enumerable: true,
        configurable: true,
        ...(get ? { get: () => value } : { value, writable: true }),
      });
    }
    return target;
  };
  switch (how) {
    case 'plain':
      return define({}, false);
    case 'own __proto__':
      return define(JSON.parse('{"__proto__":"x"}'), false);
    case 'null prototype':
      return define(Object.create(null), false);
    case 'class instance':
      return new Held(define({}, false) as Record<string, unknown>);
    case 'getters':
      return define({}, true);
    case 'throwing getter':
      return Object.defineProperty(define({}, false), 'id', {
        enumerable: true,
        get() {
          throw new Error('boom');
        },
      });
    case 'non-enumerable':
      return Object.defineProperty(define({}, false), 'hidden', { value: 1n, enumerable: false });
    case 'inherited toJSON':
      return Object.assign(Object.create({ toJSON: () => ({ id: 'from toJSON' }) }), record);
    case 'proxy':
      return new Proxy(define({}, false), {});
    case 'throwing proxy':
      return new Proxy(define({}, false), {
        get() {
          throw new Error('trap');
        },
      });
    case 'cycle': {
      const cyclic = define({}, false) as Record<string, unknown>;
      cyclic.self = cyclic;
      return cyclic;
    }
    default:
      return Object.values(record);
  }
}

describe('jsonForm', () => {
  it('takes and refuses what JSON.parse(JSON.stringify(job)) does, and gives what it gives', () => {
    fc.assert(fc.property(shaped, expectSameAsRoundTrip), { numRuns: 5000 });
  });

  it('is the round trip for values that are no object of fields', () => {
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    for (const input of [
      undefined,
      null,
      'a string',
      -0,
      Number.NaN,
      3n,
      Symbol('s'),
      () => 1,
      [1, 'two', undefined],
      new Date(0),
      revoked,
    ]) {
      expectSameAsRoundTrip(input);
    }
  });

  it('copies a delivery job field by field, as the round trip would give it', () => {
    const job = {
      id: 'msg_1',
      subscriptionId: 'sub:1',
      endpointUrl: 'https://example.com/in',
      body: '{"a":"\\ud800 \u2028 \u0000"}',
      attempts: 0,
      firstAttemptAt: undefined,
      replay: -0,
      accountCode: 'A',
    };
    const stored = jsonForm(job);
    expect(stored).toEqual(JSON.parse(JSON.stringify(job)));
    expect(Object.keys(stored as object)).toEqual([
      'id',
      'subscriptionId',
      'endpointUrl',
      'body',
      'attempts',
      'replay',
      'accountCode',
    ]);
    expect(Object.is((stored as { replay: number }).replay, 0)).toBe(true);
  });
});
