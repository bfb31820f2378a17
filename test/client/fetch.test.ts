import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createRetryingFetch,
  type PacedRequest,
  type Pacer,
  type RetryEvent,
  type RetryingFetchOptions,
  timerSleep,
} from '../../src/client/index.js';
import { FakeClock, isConfigurationError } from '../../src/index.js';
import { describe as describeValue } from '../../src/internal/describe.js';
import { thrown } from '../support/thrown.js';

/** A fetch that answers from a script and records what it was sent. */
function scripted(answers: (() => Response)[]) {
  const sent: { method: string; url: string; body: string | null }[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    sent.push({
      method: request.method,
      url: request.url,
      body: request.body === null ? null : await request.text(),
    });
    const answer = answers[Math.min(sent.length - 1, answers.length - 1)];
    if (answer === undefined) throw new Error('script exhausted');
    return answer();
  };
  return { fetch, sent };
}

const tooMany = (retryAfter?: string) => () =>
  new Response('Too many requests', {
    status: 429,
    headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter },
  });
const ok = () => new Response('done', { status: 200 });

function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe('createRetryingFetch', () => {
  it('waits exactly what each Retry-After says (or one second without one) and returns the first non-429', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }), { maxLength: 5 }),
        async (delays) => {
          const { waits, sleep } = recordingSleep();
          const { fetch, sent } = scripted([
            ...delays.map((d) => tooMany(d === undefined ? undefined : String(d))),
            ok,
          ]);
          const response = await createRetryingFetch({
            fetch,
            sleep,
            maxRetries: 5,
            maxTotalWaitMs: 100_000,
          })('https://a.test/x');
          expect(response.status).toBe(200);
          expect(sent).toHaveLength(delays.length + 1);
          expect(waits).toEqual(delays.map((d) => (d === undefined ? 1000 : d * 1000)));
        },
      ),
    );
  });

  it('reads an HTTP-date Retry-After against the injected clock', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const { waits, sleep } = recordingSleep();
    const { fetch } = scripted([tooMany('Thu, 01 Jan 2026 12:00:05 GMT'), ok]);
    await createRetryingFetch({ fetch, sleep, clock })('https://a.test/x');
    expect(waits).toEqual([5000]);
  });

  it('backs off one second when Retry-After is unreadable', async () => {
    const { waits, sleep } = recordingSleep();
    const { fetch } = scripted([tooMany('later'), tooMany('-3'), ok]);
    const events: RetryEvent[] = [];
    await createRetryingFetch({ fetch, sleep, onRetry: (e) => events.push(e) })('https://a.test/x');
    expect(waits).toEqual([1000, 1000]);
    expect(events.map((e) => [e.retry, e.delayMs, e.source, e.response.status])).toEqual([
      [1, 1000, 'default', 429],
      [2, 1000, 'default', 429],
    ]);
  });

  it('bounds the retries: after maxRetries the last 429 is returned as is', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 6 }), async (maxRetries) => {
        const { waits, sleep } = recordingSleep();
        const { fetch, sent } = scripted([tooMany('1')]);
        const response = await createRetryingFetch({ fetch, sleep, maxRetries })(
          'https://a.test/x',
        );
        expect(response.status).toBe(429);
        expect(await response.text()).toBe('Too many requests');
        expect(sent).toHaveLength(maxRetries + 1);
        expect(waits).toHaveLength(maxRetries);
      }),
    );
  });

  it('bounds the total wait: a 429 whose wait would exceed the budget is returned', async () => {
    const { waits, sleep } = recordingSleep();
    const { fetch, sent } = scripted([tooMany('4'), tooMany('4'), tooMany('4'), ok]);
    const response = await createRetryingFetch({
      fetch,
      sleep,
      maxRetries: 10,
      maxTotalWaitMs: 9_000,
    })('https://a.test/x');
    expect(response.status).toBe(429);
    expect(waits).toEqual([4000, 4000]);
    expect(sent).toHaveLength(3);
  });

  it('resends any method with its body on every attempt, from init or from a Request', async () => {
    const { sleep } = recordingSleep();
    const first = scripted([tooMany('0'), ok]);
    await createRetryingFetch({ fetch: first.fetch, sleep })('https://a.test/r', {
      method: 'PATCH',
      body: '{"a":1}',
    });
    expect(first.sent).toEqual([
      { method: 'PATCH', url: 'https://a.test/r', body: '{"a":1}' },
      { method: 'PATCH', url: 'https://a.test/r', body: '{"a":1}' },
    ]);
    const second = scripted([tooMany('0'), tooMany('0'), ok]);
    await createRetryingFetch({ fetch: second.fetch, sleep })(
      new Request('https://a.test/r', { method: 'PUT', body: 'rates' }),
    );
    expect(second.sent.map((s) => [s.method, s.body])).toEqual([
      ['PUT', 'rates'],
      ['PUT', 'rates'],
      ['PUT', 'rates'],
    ]);
  });

  it('does not resend a streamed body, which the first attempt consumed', async () => {
    const { waits, sleep } = recordingSleep();
    const { fetch, sent } = scripted([tooMany('1'), ok]);
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('x'));
        controller.close();
      },
    });
    const response = await createRetryingFetch({ fetch, sleep })('https://a.test/r', {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(429);
    expect(sent).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('rejects promptly with the signal reason when aborted during the wait, even if the sleep ignores the signal', async () => {
    const { fetch, sent } = scripted([tooMany('30'), ok]);
    const controller = new AbortController();
    const reason = new Error('user left');
    const neverEnds = () => new Promise<void>(() => undefined);
    const pending = createRetryingFetch({ fetch, sleep: neverEnds })('https://a.test/x', {
      signal: controller.signal,
    });
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(sent).toHaveLength(1);
  });

  it('rejects at once when the signal is already aborted before the wait', async () => {
    const { fetch } = scripted([tooMany('1'), ok]);
    const { sleep } = recordingSleep();
    const reason = new Error('gone');
    await expect(
      createRetryingFetch({ fetch, sleep })('https://a.test/x', {
        signal: AbortSignal.abort(reason),
      }),
    ).rejects.toBe(reason);
  });

  it('retries a 429 even when discarding its body fails', async () => {
    const { waits, sleep } = recordingSleep();
    const undiscardable = () =>
      new Response(
        new ReadableStream({
          cancel() {
            throw new Error('connection already gone');
          },
        }),
        { status: 429, headers: { 'retry-after': '2' } },
      );
    const { fetch, sent } = scripted([undiscardable, ok]);
    const response = await createRetryingFetch({ fetch, sleep })('https://a.test/x');
    expect(response.status).toBe(200);
    expect(sent).toHaveLength(2);
    expect(waits).toEqual([2000]);
  });

  it("rejects with the sleep's own error when the wait fails, and sends nothing more", async () => {
    const { fetch, sent } = scripted([tooMany('1'), ok]);
    const failure = new Error('timer unavailable');
    const pending = createRetryingFetch({ fetch, sleep: () => Promise.reject(failure) })(
      'https://a.test/x',
      { signal: new AbortController().signal },
    );
    await expect(pending).rejects.toBe(failure);
    expect(sent).toHaveLength(1);
  });

  it('retries after a sleep that returns no promise or throws, with or without a signal, instead of failing with a TypeError', async () => {
    const sleeps = [
      () => undefined,
      () => 1,
      () => {
        throw new Error('sync failure');
      },
    ];
    for (const sleep of sleeps) {
      for (const init of [undefined, { signal: new AbortController().signal }]) {
        const { fetch, sent } = scripted([tooMany('1'), ok]);
        const pending = createRetryingFetch({ fetch, sleep: sleep as never })(
          'https://a.test/x',
          init,
        );
        if (sleep === sleeps[2]) {
          await expect(pending).rejects.toThrow('sync failure');
          expect(sent).toHaveLength(1);
        } else {
          expect((await pending).status).toBe(200);
          expect(sent).toHaveLength(2);
        }
      }
    }
  });

  it('paces a Request by its own method and URL, or by the method init overrides it with', async () => {
    const paced: PacedRequest[] = [];
    const pace: Pacer = {
      acquire: async (request) => {
        paced.push(request);
        return () => undefined;
      },
      inFlight: 0,
      waiting: 0,
    };
    const { fetch } = scripted([ok]);
    const pacedFetch = createRetryingFetch({ fetch, pace });
    await pacedFetch(new Request('https://a.test/booking/v1/bookings/B1', { method: 'PATCH' }));
    await pacedFetch(new Request('https://a.test/booking/v1/bookings/B2'), { method: 'DELETE' });
    await pacedFetch('https://a.test/booking/v1/reservations');
    expect(paced).toEqual([
      { method: 'PATCH', url: 'https://a.test/booking/v1/bookings/B1' },
      { method: 'DELETE', url: 'https://a.test/booking/v1/bookings/B2' },
      { method: 'GET', url: 'https://a.test/booking/v1/reservations' },
    ]);
  });

  it('throws a ConfigurationError for a negative or fractional budget', () => {
    for (const options of [
      { maxRetries: -1 },
      { maxTotalWaitMs: 1.5 },
      { defaultDelayMs: Number.NaN },
    ]) {
      expect(isConfigurationError(thrown(() => createRetryingFetch(options)))).toBe(true);
    }
  });

  it('throws a ConfigurationError, not a TypeError, for options that are not an object, and takes no options as the defaults', () => {
    for (const options of [null, 5, 'fast', [], () => undefined]) {
      const error = thrown(() => createRetryingFetch(options as never));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toMatch(
        /^createRetryingFetch options must be an object such as \{ maxRetries: 5 \}, or left out, got .+\.$/,
      );
    }
    expect(typeof createRetryingFetch()).toBe('function');
    expect(typeof createRetryingFetch(undefined)).toBe('function');
  });

  it('throws a ConfigurationError naming the option for a fetch, sleep, onRetry, clock or pace of the wrong shape', () => {
    const cases: [RetryingFetchOptions, string][] = [
      [{ fetch: 5 as never }, 'fetch must be a function'],
      [{ sleep: 'later' as never }, 'sleep must be a function'],
      [{ onRetry: {} as never }, 'onRetry must be a function'],
      [{ clock: Date.now as never }, 'clock must be a Clock with now(), got a function.'],
      [{ clock: {} as never }, 'clock must be a Clock with now(), got an object.'],
      [
        { pace: { waiting: 0 } as never },
        'pace must be a Pacer (see createPacer) with acquire(), got an object.',
      ],
    ];
    for (const [options, message] of cases) {
      const error = thrown(() => createRetryingFetch(options));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toContain(message);
    }
  });

  it('never waits more than maxTotalWaitMs in total for any clock and HTTP-date Retry-After, and rejects with a ConfigurationError, sending nothing more, when the clock returns no finite time', async () => {
    const clockReading = fc.oneof(
      fc.integer({ min: 0, max: 4_000_000_000_000 }),
      fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
      fc.constantFrom(undefined, '1700000000000', null),
    );
    await fc.assert(
      fc.asyncProperty(
        clockReading,
        fc.array(fc.integer({ min: 0, max: 4_000_000_000 }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 120_000 }),
        async (reading, retryAtSeconds, maxTotalWaitMs) => {
          // Arrange: every answer is a 429 whose Retry-After is an HTTP-date.
          const { waits, sleep } = recordingSleep();
          const dates = retryAtSeconds.map((s) => new Date(s * 1000).toUTCString());
          const { fetch, sent } = scripted(dates.map((d) => tooMany(d)));
          const retrying = createRetryingFetch({
            fetch,
            sleep,
            clock: { now: () => reading as number },
            maxRetries: dates.length,
            maxTotalWaitMs,
          });
          // Act
          const outcome = await retrying('https://a.test/x').catch((e: unknown) => e);
          // Assert
          expect(waits.reduce((sum, ms) => sum + ms, 0)).toBeLessThanOrEqual(maxTotalWaitMs);
          if (typeof reading === 'number' && Number.isFinite(reading)) {
            expect((outcome as Response).status).toBe(429);
          } else {
            expect(isConfigurationError(outcome) && outcome.code).toBe('invalid_option');
            expect((outcome as Error).message).toBe(
              `createRetryingFetch clock.now() must be finite milliseconds, to measure the wait a Retry-After date asks for, got ${describeValue(reading)}.`,
            );
            expect(sent).toHaveLength(1);
            expect(waits).toEqual([]);
          }
        },
      ),
    );
  });
});

describe('timerSleep', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves when its timer fires', async () => {
    vi.useFakeTimers();
    let done = false;
    const waiting = timerSleep(1_000).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(done).toBe(true);
  });

  it('rejects with the reason when the signal aborts, and clears its timer', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const waiting = timerSleep(60_000, controller.signal);
    controller.abort('stop');
    await expect(waiting).rejects.toBe('stop');
    expect(vi.getTimerCount()).toBe(0);
    await expect(timerSleep(5, AbortSignal.abort('already'))).rejects.toBe('already');
  });
});
