/**
 * The limiter's `outage` option: what a store outage does is decided here (or left to the
 * caller), never by the store. Properties on a fake clock over a store that goes away and comes
 * back at random arrivals; the bound of the fallback is the specification's own sentence for the
 * Development preset's first limit, "5 calls per second", counted here without the library.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AsyncLimitStore,
  createLimiter,
  type Decision,
  FakeClock,
  isConfigurationError,
  type LeaseToken,
  MemoryStore,
  type OutageEvent,
  type Plan,
  type StoreOutcome,
  window,
} from '../../src/index.js';

/** A store that answers from memory while up, and rejects (an outage) while down. */
class FlakyStore implements AsyncLimitStore {
  readonly synchronous = false as const;
  readonly #memory = new MemoryStore();
  down = false;

  apply(plan: Plan, now: number): Promise<StoreOutcome> {
    if (this.down) return Promise.reject(new Error('connection lost'));
    return Promise.resolve(this.#memory.apply(plan, now));
  }

  release(lease: LeaseToken): Promise<void> {
    this.#memory.release(lease);
    return Promise.resolve();
  }
}

/** The most of `times` (ms) inside any one second [s, s + 1000). */
function mostInAnySecond(times: readonly number[]): number {
  let most = 0;
  for (const start of times) {
    most = Math.max(most, times.filter((t) => t >= start && t < start + 1_000).length);
  }
  return most;
}

const arrivals = fc.array(
  fc.record({
    gap: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 1, max: 400 }),
      fc.integer({ min: 401, max: 3_000 }),
    ),
    down: fc.boolean(),
  }),
  { minLength: 1, maxLength: 60 },
);

const request = { clientId: 'c', accountCode: 'ACME', method: 'GET', path: '/x' };

describe('limiter outage option', () => {
  it('decides every outage as told, reports each once, and never blames a limit for one', async () => {
    await fc.assert(
      fc.asyncProperty(
        arrivals,
        fc.constantFrom('reject' as const, 'open' as const, 'closed' as const, 'fallback' as const),
        fc.integer({ min: 1, max: 30 }),
        async (steps, outage, retryAfter) => {
          // Arrange: 5 per second, a store that is down at some arrivals.
          const clock = new FakeClock(0);
          const store = new FlakyStore();
          const events: OutageEvent[] = [];
          const limiter = createLimiter({
            policies: [window(5, '1s', { name: 'five per second' })],
            store,
            clock,
            outage,
            ...(outage === 'reject' ? {} : { onOutage: (e: OutageEvent) => void events.push(e) }),
            ...(outage === 'closed' ? { outageRetryAfterSeconds: retryAfter } : {}),
          });
          const admittedWhileDown: number[] = [];
          let downSteps = 0;
          // Act and assert, step by step.
          for (const { gap, down } of steps) {
            clock.advance(gap);
            store.down = down;
            const result: Decision | Error = await limiter.check(request).then(
              (d) => d,
              (e: Error) => e,
            );
            if (!down) {
              // Up: the store decided, with its statuses.
              expect(result).not.toBeInstanceOf(Error);
              expect((result as Decision).statuses).toHaveLength(1);
              continue;
            }
            downSteps++;
            if (outage === 'reject') {
              expect(result).toMatchObject({ message: 'connection lost' });
              continue;
            }
            const decision = result as Decision;
            switch (outage) {
              case 'open':
                expect(decision).toMatchObject({ allowed: true, statuses: [] });
                break;
              case 'closed':
                expect(decision).toMatchObject({
                  allowed: false,
                  reason: 'unavailable',
                  retryAfterSeconds: retryAfter,
                  policy: undefined,
                  retryAt: clock.now() + retryAfter * 1_000,
                });
                break;
              case 'fallback':
                // Limited by the fallback: an admission or a refusal for a limit it counted.
                if (decision.allowed) admittedWhileDown.push(clock.now());
                else expect(['limit', 'blocked']).toContain(decision.reason);
                break;
            }
            if (decision.allowed) decision.release();
          }
          // Each outage reported once, with what was done; none for the decisions of the store.
          expect(events.map((e) => e.outage)).toEqual(
            outage === 'reject' ? [] : Array.from({ length: downSteps }, () => outage),
          );
          // "5 calls per second", also while the fallback stands in.
          expect(mostInAnySecond(admittedWhileDown)).toBeLessThanOrEqual(5);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('rejects with the store error by default: the caller decides', async () => {
    const store = new FlakyStore();
    store.down = true;
    const limiter = createLimiter({ policies: [window(5, '1s')], store });
    expect(limiter.outage).toBe('reject');
    await expect(limiter.check(request)).rejects.toThrow('connection lost');
  });

  it('reports an outage on one line by default, and survives an onOutage that throws', async () => {
    const store = new FlakyStore();
    store.down = true;
    const lines: unknown[] = [];
    const original = console.error;
    console.error = (line: unknown) => void lines.push(line);
    try {
      const quiet = createLimiter({ policies: [window(5, '1s')], store, outage: 'open' });
      expect((await quiet.check(request)).allowed).toBe(true);
    } finally {
      console.error = original;
    }
    expect(lines).toEqual([
      "api-conventions: limit store outage, request admitted unlimited (outage: 'open'): connection lost",
    ]);
    const throwing = createLimiter({
      policies: [window(5, '1s')],
      store,
      outage: 'closed',
      onOutage: () => {
        throw new Error('logger down');
      },
    });
    expect(await throwing.check(request)).toMatchObject({ allowed: false, reason: 'unavailable' });
  });

  it.each([
    [
      'an unknown outage mode',
      { outage: 'half' },
      /^outage must be one of "reject", "open", "closed", "fallback", got "half"\.$/,
    ],
    [
      'a fractional Retry-After',
      { outage: 'closed', outageRetryAfterSeconds: 1.5 },
      /whole number/,
    ],
    ['a Retry-After of 0', { outage: 'closed', outageRetryAfterSeconds: 0 }, /whole number/],
    ['an onOutage that is not a function', { outage: 'open', onOutage: 'log' }, /onOutage/],
    [
      'a fallback store without fallback',
      { outage: 'open', fallbackStore: new MemoryStore() },
      /^outage must be "fallback" when fallbackStore is given \(or leave fallbackStore out\), got "open"\.$/,
    ],
    [
      'an asynchronous fallback store',
      { outage: 'fallback', fallbackStore: new FlakyStore() },
      /synchronous store/,
    ],
  ])('refuses %s with a ConfigurationError that says what to change', (_, options, message) => {
    let error: unknown;
    try {
      createLimiter({
        policies: [window(5, '1s')],
        store: new FlakyStore(),
        ...(options as object),
      });
    } catch (caught) {
      error = caught;
    }
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toMatch(message);
  });

  it('refuses an outage mode with the memory store, which has no outage', () => {
    expect(() => createLimiter({ policies: [window(5, '1s')], outage: 'open' })).toThrow(
      'outage must be "reject" or left out with a synchronous store such as the MemoryStore, which has no outage (the other modes apply to an asynchronous store, the RedisStore), got "open".',
    );
    expect(createLimiter({ policies: [window(5, '1s')], outage: 'reject' }).outage).toBe('reject');
  });
});
