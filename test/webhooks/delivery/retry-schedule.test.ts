/** The retry schedule: exponential with jitter, bounded in attempts and age, Retry-After honoured. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  isConfigurationError,
  nextAttempt,
  retrySchedule,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

const scheduleOptions = fc.record({
  initialDelayMs: fc.integer({ min: 0, max: 60_000 }),
  factor: fc.double({ min: 1, max: 10, noNaN: true }),
  maxDelayMs: fc.integer({ min: 0, max: 86_400_000 }),
  maxAttempts: fc.integer({ min: 1, max: 20 }),
  maxAgeMs: fc.integer({ min: 0, max: 7 * 86_400_000 }),
  jitter: fc.double({ min: 0, max: 1, noNaN: true }),
});

describe('retrySchedule', () => {
  it('documents its defaults: 5 s, times 4, at most 6 h, 8 attempts, 24 h, half the wait jittered', () => {
    const schedule = retrySchedule();
    expect(schedule).toEqual({
      initialDelayMs: 5_000,
      factor: 4,
      maxDelayMs: 21_600_000,
      maxAttempts: 8,
      maxAgeMs: 86_400_000,
      jitter: 0.5,
    });
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(schedule, n))).toEqual([
      5_000, 20_000, 80_000, 320_000, 1_280_000, 5_120_000, 20_480_000,
    ]);
  });

  it('every wait lies in [(1 - jitter) d, d] for the backoff d, never above maxDelayMs', () => {
    fc.assert(
      fc.property(
        scheduleOptions,
        fc.integer({ min: 1, max: 19 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (options, attempts, random) => {
          fc.pre(attempts < options.maxAttempts);
          const schedule = retrySchedule({ ...options, maxAgeMs: Number.MAX_SAFE_INTEGER });
          const d = backoffDelay(schedule, attempts);
          const decision = nextAttempt(schedule, { attempts, firstAttemptAt: 0, now: 0, random });
          expect(decision.retry).toBe(true);
          if (!decision.retry) return;
          expect(decision.at).toBeLessThanOrEqual(Math.min(d, schedule.maxDelayMs));
          expect(decision.at).toBeGreaterThanOrEqual(Math.floor((1 - schedule.jitter) * d));
        },
      ),
    );
  });

  it('never schedules more than maxAttempts attempts, nor one later than maxAgeMs after the first', () => {
    fc.assert(
      fc.property(
        scheduleOptions,
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
          minLength: 25,
          maxLength: 25,
        }),
        (options, draws) => {
          const schedule = retrySchedule(options);
          let now = 1_000;
          let attempts = 1;
          for (;;) {
            const decision = nextAttempt(schedule, {
              attempts,
              firstAttemptAt: 1_000,
              now,
              random: draws[attempts]!,
            });
            if (!decision.retry) {
              expect(attempts === schedule.maxAttempts ? 'attempts_exhausted' : 'max_age').toBe(
                decision.reason,
              );
              break;
            }
            expect(decision.at - 1_000).toBeLessThanOrEqual(schedule.maxAgeMs);
            expect(decision.at).toBeGreaterThanOrEqual(now);
            now = decision.at;
            attempts += 1;
          }
          expect(attempts).toBeLessThanOrEqual(schedule.maxAttempts);
        },
      ),
    );
  });

  it("a receiver's Retry-After is waited out exactly: never sooner, in place of the backoff", () => {
    fc.assert(
      fc.property(
        scheduleOptions,
        fc.integer({ min: 0, max: 3_600_000 }),
        (options, retryAfterMs) => {
          const schedule = retrySchedule({ ...options, maxAttempts: 20, maxAgeMs: 7 * 86_400_000 });
          const decision = nextAttempt(schedule, {
            attempts: 1,
            firstAttemptAt: 0,
            now: 10,
            retryAfterMs,
            random: 0.3,
          });
          expect(decision).toEqual({ retry: true, at: 10 + retryAfterMs });
        },
      ),
    );
  });

  it('ends a wait that would pass maxAgeMs at it, and gives up (max_age) only once no attempt can start within it', () => {
    // "maxAgeMs: no attempt starts later than this after the first one".
    const short = retrySchedule({ maxAgeMs: 60_000 });
    const decide = (now: number, retryAfterMs?: number) =>
      nextAttempt(short, { attempts: 1, firstAttemptAt: 0, now, retryAfterMs, random: 0 });
    expect(decide(0, 60_001)).toEqual({ retry: true, at: 60_000 });
    expect(decide(59_999, 10 * 365 * 86_400_000)).toEqual({ retry: true, at: 60_000 });
    expect(decide(59_999)).toEqual({ retry: true, at: 60_000 });
    expect(decide(60_000, 1)).toEqual({ retry: false, reason: 'max_age' });
    expect(decide(60_000)).toEqual({ retry: false, reason: 'max_age' });
    expect(decide(60_000, 0)).toEqual({ retry: true, at: 60_000 });
  });

  it('keeps a wait within its bounds when the random source misbehaves (NaN, below 0, above 1)', () => {
    const schedule = retrySchedule();
    const at = (random: number) =>
      nextAttempt(schedule, { attempts: 1, firstAttemptAt: 0, now: 0, random });
    expect([at(Number.NaN), at(-3), at(7)]).toEqual([
      { retry: true, at: 5_000 },
      { retry: true, at: 5_000 },
      { retry: true, at: 2_500 },
    ]);
  });

  it('refuses values out of range, naming the option', () => {
    for (const bad of [
      { initialDelayMs: -1 },
      { factor: 0.5 },
      { maxAttempts: 0 },
      { maxAgeMs: Number.NaN },
      { jitter: 2 },
      { maxDelayMs: 1.5 },
    ]) {
      const error = thrown(() => retrySchedule(bad));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toContain(Object.keys(bad)[0]);
    }
  });
});
