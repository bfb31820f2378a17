import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock, isConfigurationError, systemClock } from '../src/index.js';
import { FakeClock as FakeClockFromTesting } from '../src/testing/index.js';
import { thrown } from './support/thrown.js';

function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

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

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 2])(
    'refuses to advance by %s',
    (ms) => {
      const clock = new FakeClock();
      expect(() => clock.advance(ms)).toThrow(
        /advance\(ms\) must be a number of milliseconds from 0 to/,
      );
      expect(clock.now()).toBe(0);
    },
  );

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
      revokedProxy(),
    ];
    for (const value of unprintable) {
      expect(isConfigurationError(thrown(() => new FakeClock(value)))).toBe(true);
      expect(isConfigurationError(thrown(() => new FakeClock().set(value)))).toBe(true);
      expect(isConfigurationError(thrown(() => new FakeClock().advance(value)))).toBe(true);
    }
  });

  it('refuses to advance past 8.64e15 ms, the latest time a clock may return, and stays where it was', () => {
    const clock = new FakeClock(8.64e15 - 5);
    const caught = thrown(() => clock.advance(6));
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_duration');
    expect((caught as Error).message).toBe(
      'FakeClock.advance(ms) must be at most 5, which takes the time from 8639999999999995 to 8640000000000000 ms, the latest a clock may return (the last instant a Date holds), got 6.',
    );
    expect(clock.now()).toBe(8.64e15 - 5);
    expect(clock.advance(5)).toBe(8.64e15);
  });

  it('accepts a start and a set exactly when they are milliseconds from 0 to 8.64e15, and says so otherwise', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.double({ min: -1e4, max: 1e4 })), (ms) => {
        // Arrange
        const inRange = ms >= 0 && ms <= 8.64e15;
        // Act
        const started = thrown(() => new FakeClock(ms));
        const clock = new FakeClock(7);
        const set = thrown(() => clock.set(ms));
        // Assert
        if (inRange) {
          expect(started).toBeUndefined();
          expect(set).toBeUndefined();
          expect(clock.now()).toBe(ms);
        } else {
          for (const caught of [started, set]) {
            expect(isConfigurationError(caught) && caught.code).toBe('invalid_option');
            expect((caught as Error).message).toMatch(
              /must be a time a clock may return: milliseconds since the Unix epoch, from 0 to 8640000000000000/,
            );
          }
          expect(clock.now()).toBe(7);
        }
      }),
    );
  });

  it('refuses a clock before 1970 and one past the range of a Date', () => {
    for (const ms of [-5_000, -1, -0.5, 1e17, 1e20, Number.MAX_VALUE]) {
      const caught = thrown(() => new FakeClock(ms));
      expect(isConfigurationError(caught) && caught.code).toBe('invalid_option');
    }
  });

  it('refuses a non-finite start or set', () => {
    const caught = thrown(() => new FakeClock(Number.NaN));
    expect(isConfigurationError(caught)).toBe(true);
    expect(() => new FakeClock().set(Number.POSITIVE_INFINITY)).toThrow(
      /from 0 to 8640000000000000/,
    );
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
