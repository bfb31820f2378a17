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

/** The p50, p99 and largest of latencies in ms (sorted in place), rounded for printing. */
export function latencyFigures(latencies: Float64Array): {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
} {
  const sorted = latencies.sort();
  const at = (q: number) =>
    round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!);
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: round(sorted[sorted.length - 1]!) };
}

/**
 * Run `total` calls of `call`, `inFlight` at a time, each given its index: the wall time in ms
 * and each call's latency in ms.
 */
export async function driveCalls(
  total: number,
  inFlight: number,
  call: (i: number) => Promise<unknown>,
): Promise<{ ms: number; latencies: Float64Array }> {
  const latencies = new Float64Array(total);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < total; i = next++) {
      const start = performance.now();
      await call(i);
      latencies[i] = performance.now() - start;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { ms: performance.now() - start, latencies };
}

/** Calls of one measure: how many, per second of wall time, and their latencies. */
export interface CallFigures {
  readonly calls: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** Run `total` calls of `call`, `inFlight` at a time: calls per second and latencies. */
export async function measureCalls(
  total: number,
  inFlight: number,
  call: (i: number) => Promise<unknown>,
): Promise<CallFigures> {
  const { ms, latencies } = await driveCalls(total, inFlight, call);
  return { calls: total, perSecond: Math.round((total * 1000) / ms), ...latencyFigures(latencies) };
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
