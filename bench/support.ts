/** Measurement helpers shared by the benchmark suites. */
import { RateLimiterRes } from 'rate-limiter-flexible';

/** Collect garbage if the process runs with --expose-gc (npm run bench does). */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc !== undefined) {
    gc();
    gc();
  }
}

/** Heap in use after a full collection, in bytes. */
export function settledHeap(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/** Round to `digits` significant figures, for printing. */
export function round(value: number, digits = 3): number {
  return Number(value.toPrecision(digits));
}

/** Run `fn` with `Date.now()` answering from `now()`, for peers that read the wall clock. */
export async function withDateNow<T>(now: () => number, fn: () => Promise<T>): Promise<T> {
  const original = Date.now;
  Date.now = now;
  try {
    return await fn();
  } finally {
    Date.now = original;
  }
}

/** A rate-limiter-flexible limiter: memory or Redis. */
interface Consumer {
  consume(key: string): Promise<unknown>;
}

/** Consume one point of `key` from each limiter in turn; false when one refuses. */
export async function consumeEach(limiters: readonly Consumer[], key: string): Promise<boolean> {
  try {
    for (const limiter of limiters) await limiter.consume(key);
    return true;
  } catch (error) {
    if (error instanceof RateLimiterRes) return false;
    throw error;
  }
}
