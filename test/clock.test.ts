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
