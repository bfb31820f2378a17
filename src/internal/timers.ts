/** An injectable `sleep(ms, signal)`, the only real timers, so tests never wait. @module */

/**
 * Wait `ms` milliseconds; reject with the signal's reason as soon as it aborts.
 * @param ms - how long to wait
 * @param signal - aborts the wait
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * The longest delay a timer waits, in ms: `setTimeout` fires a longer one after 1 ms. The retry
 * budget keeps the client's waits far below it; options that set a timer are checked against it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The default {@link Sleep}: a real timer, cleared when the signal aborts. */
export const timerSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Run an injected sleep, but reject as soon as the signal aborts, even if that sleep ignores it. */
export function abortableSleep(sleep: Sleep, ms: number, signal?: AbortSignal): Promise<void> {
  // A sleep that throws or returns no promise is treated as one that settled at once.
  const run = (s?: AbortSignal) => new Promise<void>((resolve) => resolve(sleep(ms, s)));
  if (signal === undefined) return run();
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    run(signal).then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Run `fn` at the end of this turn of the event loop, after the I/O callbacks of the turn:
 * `setImmediate` where the runtime has it, else a timer of 0.
 */
export function endOfTurn(fn: () => void): void {
  if (typeof setImmediate === 'function') setImmediate(fn);
  else setTimeout(fn, 0);
}
