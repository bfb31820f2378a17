import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkPolicies,
  concurrency,
  formatDuration,
  isConfigurationError,
  rate,
  toMilliseconds,
  window,
} from '../../src/index.js';
import { describe as describeValue } from '../../src/internal/describe.js';
import { thrown } from '../support/thrown.js';

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

function throwingGetter(key: string, base: object = {}): object {
  return Object.defineProperty({ ...base }, key, {
    enumerable: true,
    get() {
      throw new Error('boom');
    },
  });
}

function codeOf(make: () => unknown): string | undefined {
  try {
    make();
  } catch (error) {
    if (isConfigurationError(error)) return error.code;
    throw error;
  }
  return undefined;
}

describe('policy factories', () => {
  it('make plain, frozen data with a name that states the numbers', () => {
    expect(window(3500, '60s')).toEqual({
      kind: 'window',
      name: '3500 per 60 s',
      limit: 3500,
      windowMs: 60_000,
    });
    expect(rate(100, 200)).toEqual({
      kind: 'rate',
      name: '100 per s average, burst 200',
      perSecond: 100,
      burst: 200,
    });
    expect(concurrency(20)).toEqual({
      kind: 'concurrency',
      name: '20 concurrent',
      max: 20,
      leaseTtlMs: 60_000,
      retryAfterMs: 1_000,
    });
    expect(Object.isFrozen(window(1, 1))).toBe(true);
    expect(window(20, '5 min', { name: 'resource: 20 per 5 min' }).name).toBe(
      'resource: 20 per 5 min',
    );
  });

  it.each<[string, () => unknown, string]>([
    ['limit 0', () => window(0, '1s'), 'invalid_limit'],
    ['negative limit', () => window(-1, '1s'), 'invalid_limit'],
    ['fractional limit', () => window(1.5, '1s'), 'invalid_limit'],
    ['NaN limit', () => window(Number.NaN, '1s'), 'invalid_limit'],
    ['string limit', () => window('5' as unknown as number, '1s'), 'invalid_limit'],
    ['negative duration', () => window(1, -1000), 'invalid_duration'],
    ['fractional duration', () => window(1, 1.5), 'invalid_duration'],
    ['NaN duration', () => window(1, Number.NaN), 'invalid_duration'],
    ['zero duration', () => window(1, '0s'), 'invalid_duration'],
    ['unknown unit', () => window(1, '5 weeks' as never), 'invalid_duration'],
    ['duration that is an object', () => window(1, { ms: 1000 } as never), 'invalid_duration'],
    ['rate 0', () => rate(0, 1), 'invalid_rate'],
    ['infinite rate', () => rate(Number.POSITIVE_INFINITY, 1), 'invalid_rate'],
    ['burst 0', () => rate(1, 0), 'invalid_limit'],
    ['concurrency 0', () => concurrency(0), 'invalid_limit'],
    ['lease TTL 0', () => concurrency(1, { leaseTtl: 0 }), 'invalid_duration'],
    ['empty name', () => window(1, 1, { name: ' ' }), 'invalid_policy'],
    ['a rate whose interval overflows (1e-306)', () => rate(1e-306, 1), 'invalid_rate'],
    ['a subnormal rate (1e-310)', () => rate(1e-310, 1), 'invalid_rate'],
    ['the smallest rate (5e-324)', () => rate(Number.MIN_VALUE, 1), 'invalid_rate'],
    ['a rate that refills in 1e300 s', () => rate(1e-300, 1), 'invalid_rate'],
    ['a rate of more than a million per second', () => rate(2e6, 1), 'invalid_rate'],
    ['a burst tolerance past 8.64e15 ms', () => rate(1e-9, 10_000), 'invalid_rate'],
    ['window options that are null', () => window(5, '1s', null as never), 'invalid_option'],
    ['rate options that are null', () => rate(1, 1, null as never), 'invalid_option'],
    ['concurrency options that are null', () => concurrency(1, null as never), 'invalid_option'],
    ['options that are a string', () => window(5, '1s', 'name' as never), 'invalid_option'],
    ['options that are a revoked proxy', () => window(5, '1s', revokedProxy()), 'invalid_option'],
    [
      'options whose name getter throws',
      () => concurrency(1, throwingGetter('name')),
      'invalid_option',
    ],
    [
      'a limit that is a revoked proxy',
      () => window(revokedProxy() as never, '1s'),
      'invalid_limit',
    ],
    [
      'a duration that is a revoked proxy',
      () => window(1, revokedProxy() as never),
      'invalid_duration',
    ],
    ['a perSecond that is a revoked proxy', () => rate(revokedProxy() as never, 1), 'invalid_rate'],
    [
      'a lease TTL that is a revoked proxy',
      () => concurrency(1, { leaseTtl: revokedProxy() as never }),
      'invalid_duration',
    ],
  ])('%s throws a ConfigurationError that says what to change', (_, make, code) => {
    expect(codeOf(make)).toBe(code);
  });

  it('checkPolicies refuses duplicate names and things that are not policies', () => {
    expect(
      codeOf(() => checkPolicies([window(1, 1, { name: 'x' }), rate(1, 1, { name: 'x' })])),
    ).toBe('duplicate_policy_name');
    expect(
      codeOf(() => checkPolicies([{ kind: 'window', name: 'x', limit: 1, windowMs: -5 }])),
    ).toBe('invalid_policy');
    expect(codeOf(() => checkPolicies([null]))).toBe('invalid_policy');
    expect(codeOf(() => checkPolicies([{ kind: 'window', limit: 1, windowMs: 1 }]))).toBe(
      'invalid_policy',
    );
    expect(codeOf(() => checkPolicies([{ kind: 'leaky-bucket', name: 'x', limit: 1 }]))).toBe(
      'invalid_policy',
    );
    expect(codeOf(() => checkPolicies('x' as never))).toBe('invalid_policy');
    expect(checkPolicies([window(1, 1, { name: 'a' }), window(1, 1, { name: 'b' })])).toHaveLength(
      2,
    );
  });

  it('a message names what it was given and what to give instead', () => {
    const messageOf = (make: () => unknown) => (thrown(make) as Error).message;
    expect(messageOf(() => window(1, { ms: 1000 } as never))).toBe(
      "window duration must be a whole number of milliseconds >= 1 (a number, or a string such as '60s', '5 min', '1h'), got an object.",
    );
    expect(messageOf(() => window(1, [1000] as never))).toMatch(/got an array\.$/);
    expect(messageOf(() => window(1, (() => 1000) as never))).toMatch(/got a function\.$/);
    expect(messageOf(() => window(10n as never, '1s'))).toBe(
      'window limit must be a whole number from 1 to 9007199254740991 (Number.MAX_SAFE_INTEGER), got 10n.',
    );
    expect(messageOf(() => checkPolicies([{ kind: 'leaky-bucket', name: 'x' }]))).toBe(
      'policies[0] must be a policy made with window(), rate() or concurrency(), got an object.',
    );
  });
});

describe('rate range', () => {
  it('accepts a rate exactly when its emission interval is from 0.001 ms to 8.64e15 ms and its burst tolerance at most 8.64e15 ms, and says so otherwise', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double({ min: Number.MIN_VALUE, max: 1e12, noNaN: true }),
          fc.double({ min: 1e-14, max: 1e-12, noNaN: true }),
          fc.double({ min: 5e5, max: 2e6, noNaN: true }),
        ),
        fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 2 ** 40 })),
        (perSecond, burst) => {
          // Arrange: the oracle, in exact terms of the interval and the tolerance.
          const interval = 1000 / perSecond;
          const tolerance = (burst - 1) * interval;
          const keepable =
            Number.isFinite(interval) &&
            interval >= 0.001 &&
            interval <= 8.64e15 &&
            tolerance <= 8.64e15;
          // Act
          const caught = thrown(() => rate(perSecond, burst));
          // Assert
          if (keepable) expect(caught).toBeUndefined();
          else {
            expect(isConfigurationError(caught) && caught.code).toBe('invalid_rate');
            const rateKept = Number.isFinite(interval) && interval >= 0.001 && interval <= 8.64e15;
            expect((caught as Error).message).toBe(
              rateKept
                ? `rate burst must be a burst whose tolerance ((burst - 1) * 1000 / perSecond) is at most 8640000000000000 ms at ${perSecond} per second: lower the burst or raise perSecond, got ${burst}.`
                : `rate perSecond must be a number > 0 whose emission interval (1000 / perSecond) is from 0.001 ms to 8640000000000000 ms (perSecond from about 1.16e-13 to 1000000), got ${perSecond}.`,
            );
          }
        },
      ),
    );
  });

  it('a hand-made rate policy outside that range is not a valid policy', () => {
    const slow = { kind: 'rate', name: 'slow', perSecond: 1e-306, burst: 1 };
    const caught = thrown(() => checkPolicies([slow]));
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_policy');
    expect((caught as Error).message).toBe(
      'policies[0].perSecond must be a number > 0 whose emission interval (1000 / perSecond) is from 0.001 ms to 8640000000000000 ms (perSecond from about 1.16e-13 to 1000000), got 1e-306.',
    );
    const wide = { kind: 'rate', name: 'wide', perSecond: 1e-9, burst: 10_000 };
    expect(thrown(() => checkPolicies([wide]))).toMatchObject({
      code: 'invalid_policy',
      message:
        'policies[0].burst must be a burst whose tolerance ((burst - 1) * 1000 / perSecond) is at most 8640000000000000 ms at 1e-9 per second: lower the burst or raise perSecond, got 10000.',
    });
  });
});

describe('checkPolicies copies', () => {
  const policyObjects = fc.oneof(
    fc
      .tuple(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 10 ** 6 }))
      .map(([limit, ms]) => window(limit, ms)),
    fc
      .tuple(fc.double({ min: 0.01, max: 1_000, noNaN: true }), fc.integer({ min: 1, max: 50 }))
      .map(([perSecond, burst]) => rate(perSecond, burst)),
    fc.integer({ min: 1, max: 50 }).map((max) => concurrency(max)),
  );

  it('hold exactly the fields of their kind, as frozen plain data, each read once, whatever else the object carries', () => {
    fc.assert(
      fc.property(policyObjects, fc.anything(), (policy, extra) => {
        // Arrange: the policy behind getters that count their reads, with an extra field.
        const reads = new Map<string, number>();
        const given: Record<string, unknown> = { extra, big: 10n };
        given.self = given;
        for (const [key, value] of Object.entries(policy)) {
          Object.defineProperty(given, key, {
            enumerable: true,
            get() {
              reads.set(key, (reads.get(key) ?? 0) + 1);
              return value;
            },
          });
        }
        // Act
        const [copy, ...rest] = checkPolicies([given]);
        // Assert
        expect(rest).toEqual([]);
        expect(copy).toEqual(policy);
        expect(Object.keys(copy!)).toEqual(Object.keys(policy));
        expect(Object.isFrozen(copy)).toBe(true);
        expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
        expect([...reads.values()].every((n) => n === 1)).toBe(true);
        expect(reads.size).toBe(Object.keys(policy).length);
        expect(JSON.parse(JSON.stringify(copy))).toEqual(policy);
      }),
    );
  });

  it('are made from class instances with accessors and private fields', () => {
    class Tier {
      readonly #limit: number;
      constructor(limit: number) {
        this.#limit = limit;
      }
      get kind() {
        return 'window';
      }
      get name() {
        return `tier ${this.#limit}`;
      }
      get limit() {
        return this.#limit;
      }
      get windowMs() {
        return 60_000;
      }
    }
    expect(checkPolicies([new Tier(100), new Tier(1000)])).toEqual([
      { kind: 'window', name: 'tier 100', limit: 100, windowMs: 60_000 },
      { kind: 'window', name: 'tier 1000', limit: 1000, windowMs: 60_000 },
    ]);
  });

  it('are a frozen list of their own, apart from the list given', () => {
    const given = [window(1, 1, { name: 'a' })];
    const copies = checkPolicies(given);
    expect(copies).not.toBe(given);
    expect(Object.isFrozen(copies)).toBe(true);
  });

  it.each<[string, unknown]>([
    ['a policy that is a revoked proxy', [revokedProxy()]],
    ['a policy whose kind getter throws', [throwingGetter('kind')]],
    [
      'a policy whose limit getter throws',
      [throwingGetter('limit', { kind: 'window', name: 'w', windowMs: 1 })],
    ],
    ['a list that is a revoked proxy', revokedProxy()],
  ])('refuse %s with a ConfigurationError, not what the read threw', (_, list) => {
    const caught = thrown(() => checkPolicies(list as never));
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_policy');
  });
});

describe('messages', () => {
  it('describe() names any value without reading it, and never throws', () => {
    fc.assert(
      fc.property(
        fc.anything({ withBigInt: true, withMap: true, withTypedArray: true }),
        (value) => {
          expect(typeof describeValue(value)).toBe('string');
        },
      ),
    );
    expect(describeValue(revokedProxy())).toBe('an object');
    expect(describeValue(Symbol('s'))).toBe('a symbol');
    expect(describeValue(10n)).toBe('10n');
  });

  it.each<[string, unknown]>([
    ['a BigInt', 1000n],
    ['a symbol', Symbol('ms')],
    ['a revoked proxy', revokedProxy()],
    ['a string', '1000'],
    ['NaN', Number.NaN],
  ])('formatDuration refuses %s with a ConfigurationError', (_, value) => {
    expect(codeOf(() => formatDuration(value as never))).toBe('invalid_duration');
  });
});

describe('durations', () => {
  it.each<[Parameters<typeof toMilliseconds>[0], number]>([
    [1000, 1000],
    ['1s', 1000],
    ['60 s', 60_000],
    ['5min', 300_000],
    ['20 min', 1_200_000],
    ['1h', 3_600_000],
    ['250ms', 250],
    ['1.5s', 1500],
  ])('%s is %d ms', (duration, ms) => {
    expect(toMilliseconds(duration)).toBe(ms);
  });

  it('formats periods the way the specification writes them, and parsing the format gives the value back', () => {
    expect(formatDuration(1_000)).toBe('1 s');
    expect(formatDuration(60_000)).toBe('60 s');
    expect(formatDuration(300_000)).toBe('5 min');
    expect(formatDuration(3_600_000)).toBe('60 min');
    expect(formatDuration(1_500)).toBe('1500 ms');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 ** 9 }), (ms) => {
        expect(toMilliseconds(formatDuration(ms) as never)).toBe(ms);
      }),
    );
  });
  it('reads a decimal string exactly: each one that names a whole number of milliseconds is that number', () => {
    const units = fc.constantFrom<[string, bigint]>(
      ['s', 1_000n],
      ['sec', 1_000n],
      ['min', 60_000n],
      ['m', 60_000n],
      ['h', 3_600_000n],
      ['hr', 3_600_000n],
      ['ms', 1n],
    );
    fc.assert(
      fc.property(
        units,
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 3 }),
        ([unit, scale], ms, decimals, zeros) => {
          // Arrange: ms written in the unit with `decimals` digits after the point, built from
          // integers: the digits are ms * 10^decimals / scale, when that is whole.
          const shifted = BigInt(ms) * 10n ** BigInt(decimals);
          fc.pre(shifted % scale === 0n);
          const digits = (shifted / scale).toString().padStart(decimals + 1, '0');
          const text = `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}${'0'.repeat(zeros)}${unit}`;
          // Act, Assert
          expect(toMilliseconds(text as never)).toBe(ms);
        },
      ),
    );
    expect(toMilliseconds('1.001s')).toBe(1001);
    expect(toMilliseconds('0.01 min')).toBe(600);
    expect(toMilliseconds('2.0005h')).toBe(7_201_800);
  });

  it('refuses a decimal string that is not a whole number of milliseconds, and says so', () => {
    for (const text of ['1.0005s', '0.5ms', '0.0000001h']) {
      const caught = thrown(() => toMilliseconds(text as never));
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_duration');
      expect((caught as Error).message).toBe(
        `duration must be a whole number of milliseconds >= 1 (a decimal string such as '1.5s' too, when it comes to whole milliseconds), got "${text}".`,
      );
    }
    expect(codeOf(() => toMilliseconds(`1${'0'.repeat(80)}s` as never))).toBe('invalid_duration');
    expect(codeOf(() => toMilliseconds('9007199254740.992s'))).toBe('invalid_duration');
  });
});
