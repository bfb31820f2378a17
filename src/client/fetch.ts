/** A `fetch` that retries a 429 after its `Retry-After` (see docs/client.md). @module */
import { aClock, type Clock, systemClock } from '../clock.js';
import { parseRetryAfter } from '../http/retry-after.js';
import { aFunction, readOptions, refused, wholeNumber, withMethods } from '../internal/options.js';
import { abortableSleep, type Sleep, timerSleep } from '../internal/timers.js';
import type { Pacer } from './pacer.js';

/** The shape of `fetch`: what the wrapper takes and what it returns. */
export type FetchFunction = (
  input: string | URL | Request,
  init?: RequestInit,
) => Promise<Response>;

/** One retry about to happen, for logs and metrics. */
export interface RetryEvent {
  /** The retry's number: 1 for the first retry. */
  readonly retry: number;
  /** How long the client waits before it, in milliseconds. */
  readonly delayMs: number;
  /** Where the delay came from: the `Retry-After` header, or the default backoff. */
  readonly source: 'retry-after' | 'default';
  /** The 429 response (its body already discarded). */
  readonly response: Response;
}

/** Options of {@link createRetryingFetch}. */
export interface RetryingFetchOptions {
  /** The fetch that sends requests. @defaultValue `globalThis.fetch` */
  fetch?: FetchFunction;
  /** What an HTTP-date `Retry-After` is measured against. @defaultValue `systemClock` */
  clock?: Clock;
  /** How to wait. Tests pass one that returns at once. @defaultValue real timers */
  sleep?: Sleep;
  /** Most retries of one request after a 429. @defaultValue 3 */
  maxRetries?: number;
  /** Most ms one request may wait in all; a 429 that would exceed it is returned. @defaultValue 60000 */
  maxTotalWaitMs?: number;
  /** Wait when `Retry-After` is missing or unreadable, as the specification says. @defaultValue 1000 */
  defaultDelayMs?: number;
  /** Called before each wait. */
  onRetry?: (event: RetryEvent) => void;
  /** Each attempt waits its turn under the server's limits (`createPacer`). @defaultValue none */
  pace?: Pacer;
}

// Read at each call, so that a fetch installed after the wrapper was made is the one used.
const globalFetch: FetchFunction = (input, init) => globalThis.fetch(input, init);

const FETCH_RULES = {
  fetch: aFunction<FetchFunction>('sends a request as fetch does'),
  clock: aClock,
  sleep: aFunction<Sleep>('waits (ms, signal)'),
  maxRetries: wholeNumber(0),
  maxTotalWaitMs: wholeNumber(0),
  defaultDelayMs: wholeNumber(0),
  onRetry: aFunction<(event: RetryEvent) => void>('takes a RetryEvent'),
  pace: withMethods<Pacer>(['acquire'], 'a Pacer (see createPacer)'),
};

/**
 * Make a `fetch` that retries 429 responses as the server asks. When the retries or the wait budget
 * run out, the last 429 response is returned as is, so callers see what the server said. A request
 * whose body is a stream cannot be sent twice: its 429 is returned at once.
 * @returns a `fetch` that rejects with a `ConfigurationError` `invalid_option` when the clock's
 * `now()` is not a finite number at a 429
 * @throws ConfigurationError `invalid_option` when the options are not an object, for a negative
 * or non-integer budget, or a `fetch`, `sleep`, `onRetry`, `clock` or `pace` of the wrong shape
 * @example
 * ```ts
 * const fetch = createRetryingFetch({ maxRetries: 5 });
 * const response = await fetch('https://api.example.com/reservations', { signal });
 * ```
 */
export function createRetryingFetch(options?: RetryingFetchOptions): FetchFunction {
  const {
    fetch: send,
    clock,
    sleep,
    maxRetries,
    maxTotalWaitMs,
    defaultDelayMs,
    onRetry,
    pace,
  } = readOptions(options, 'createRetryingFetch', FETCH_RULES, {
    defaults: {
      fetch: globalFetch,
      clock: systemClock,
      sleep: timerSleep,
      maxRetries: 3,
      maxTotalWaitMs: 60_000,
      defaultDelayMs: 1_000,
    },
    example: '{ maxRetries: 5 }',
  });

  return async (input, init) => {
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    const replayable = isReplayable(input, init);
    let waited = 0;
    for (let retry = 1; ; retry++) {
      const done =
        pace === undefined
          ? undefined
          : await pace.acquire(target(input, init), signal ?? undefined);
      let response: Response;
      try {
        // A Request's body can be read once: each attempt sends a fresh clone.
        response = await send(input instanceof Request ? input.clone() : input, init);
      } finally {
        done?.();
      }
      if (response.status !== 429 || !replayable || retry > maxRetries) return response;
      const now = clock.now();
      if (!Number.isFinite(now)) {
        // A delay measured from no time is NaN, which no budget comparison would ever stop.
        await response.body?.cancel().catch(() => undefined);
        throw refused(
          'createRetryingFetch clock.now()',
          'finite milliseconds, to measure the wait a Retry-After date asks for',
          now,
        );
      }
      const announced = parseRetryAfter(response.headers.get('retry-after'), now);
      const delayMs = announced ?? defaultDelayMs;
      if (waited + delayMs > maxTotalWaitMs) return response;
      // Free the connection: the 429 body is not read.
      await response.body?.cancel().catch(() => undefined);
      onRetry?.({
        retry,
        delayMs,
        source: announced === undefined ? 'default' : 'retry-after',
        response,
      });
      await abortableSleep(sleep, delayMs, signal ?? undefined);
      waited += delayMs;
    }
  };
}

function target(input: string | URL | Request, init: RequestInit | undefined) {
  if (input instanceof Request) return { method: init?.method ?? input.method, url: input.url };
  return { method: init?.method ?? 'GET', url: String(input) };
}

// Bodies that can be sent again as they are; a stream or async iterable is consumed by the first send.
function isReplayable(input: string | URL | Request, init: RequestInit | undefined): boolean {
  const body = init?.body;
  if (body === undefined || body === null) {
    return !(input instanceof Request) || input.body === null || !input.bodyUsed;
  }
  return (
    typeof body === 'string' ||
    body instanceof URLSearchParams ||
    body instanceof Blob ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof FormData
  );
}
