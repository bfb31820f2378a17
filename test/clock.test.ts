import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock, isConfigurationError, systemClock } from '../src/index.js';
import { FakeClock as FakeClockFromTesting } from '../src/testing/index.js';
import { thrown } from './support/thrown.js';

describe('FakeClock', () => {
  it('is the same class from the root and from /testing', () => {
    expect(FakeClockFromTesting).toBe(FakeClock);
  });

  it('moves only by advance and set: now() equals start plus the sum of steps', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.array(fc.integer({ min: 0, max: 10 ** 6 })),
        (start, steps) => {
          const clock = new FakeClock(start);
          for (const step of steps) clock.advance(step);
          expect(clock.now()).toBe(steps.reduce((a, b) => a + b, start));
        },
      ),
    );
  });

  it('can be set backwards, as real clocks sometimes are', () => {
    const clock = new FakeClock(1_000);
    clock.set(10);
    expect(clock.now()).toBe(10);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('refuses to advance by %s', (ms) => {
    const clock = new FakeClock();
    expect(() => clock.advance(ms)).toThrow(/advance needs a finite number/);
    expect(clock.now()).toBe(0);
  });

  it('refuses a start, set or step that is not a number with a typed error, even one that cannot be printed', () => {
    const unprintable = [
      Object.create(null),
      {
        toString: () => {
          throw new Error('toString');
        },
      },
      Symbol('ms'),
      10n,
      '5',
    ];
    for (const value of unprintable) {
      expect(isConfigurationError(thrown(() => new FakeClock(value)))).toBe(true);
      expect(isConfigurationError(thrown(() => new FakeClock().set(value)))).toBe(true);
      expect(isConfigurationError(thrown(() => new FakeClock().advance(value)))).toBe(true);
    }
  });

  it('refuses to advance past the largest finite time, and stays where it was', () => {
    const clock = new FakeClock(Number.MAX_VALUE);
    const caught = thrown(() => clock.advance(Number.MAX_VALUE));
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_duration');
    expect(clock.now()).toBe(Number.MAX_VALUE);
  });

  it('refuses a non-finite start or set', () => {
    const caught = thrown(() => new FakeClock(Number.NaN));
    expect(isConfigurationError(caught)).toBe(true);
    expect(() => new FakeClock().set(Number.POSITIVE_INFINITY)).toThrow(/finite number/);
  });
});

describe('systemClock', () => {
  it('reads the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
