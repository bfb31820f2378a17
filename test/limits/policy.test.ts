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
import { thrown } from '../support/thrown.js';

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
      'window limit must be a whole number >= 1, got 10n.',
    );
    expect(messageOf(() => checkPolicies([{ kind: 'leaky-bucket', name: 'x' }]))).toBe(
      'policies[0] is not a policy; make it with window(), rate() or concurrency(), got an object.',
    );
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
});
