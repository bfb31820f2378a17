/** Measurement helpers shared by the benchmark suites. */

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
