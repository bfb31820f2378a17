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

/**
 * Memory in use after a full collection, in bytes: the JavaScript heap and the memory of array
 * buffers (typed arrays keep their contents outside the heap, and the memory store keeps its
 * numbers in one), so that a store cannot look small by keeping its state off the heap.
 */
export function settledHeap(): number {
  collectGarbage();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
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

const DURATION_MS = 1_000;

/** Calls per second of `fn` over the inputs (a power of two of them), round robin, after a warm-up. */
export function rate<T>(inputs: readonly T[], fn: (input: T) => unknown): number {
  const mask = inputs.length - 1;
  if ((inputs.length & mask) !== 0) throw new Error('rate: give a power of two of inputs');
  let sink = 0;
  const spin = (ms: number) => {
    let calls = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < ms) {
      for (let i = 0; i < 1_000; i++) {
        if (fn(inputs[(calls + i) & mask] as T) !== undefined) sink++;
      }
      calls += 1_000;
      elapsed = performance.now() - start;
    }
    return (calls / elapsed) * 1_000;
  };
  spin(DURATION_MS / 4);
  const perSecond = spin(DURATION_MS);
  if (sink < 0) console.error(sink);
  return perSecond;
}
