/**
 * A sweep in bounded batches, run on demand and on a timer that does not keep the process alive:
 * one at a time (a sweep asked for during one joins it), and stopped by `close()` after its
 * current batch. @module
 */

/** A periodic sweep. @internal */
export class PeriodicSweep {
  readonly #run: () => Promise<number>;
  readonly #intervalMs: number;
  readonly #onError: (error: unknown) => void;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<number> | undefined;
  #closed = false;

  /**
   * @param run - one sweep, batch after batch until none is left or {@link PeriodicSweep.closed}
   * @param intervalMs - how often the timer sweeps; 0: never (on demand only)
   * @param onError - told of a sweep of the timer that failed
   */
  constructor(run: () => Promise<number>, intervalMs: number, onError: (error: unknown) => void) {
    this.#run = run;
    this.#intervalMs = intervalMs;
    this.#onError = onError;
  }

  /** Whether `close()` was called: a sweep ends after its current batch. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Start the timer (once; not after `close`). */
  start(): void {
    if (this.#intervalMs === 0 || this.#closed || this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.sweep().catch(this.#onError), this.#intervalMs);
    this.#timer.unref?.();
  }

  /** Sweep now, or join the sweep under way. @returns what the sweep counted */
  sweep(): Promise<number> {
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /**
   * Sweep once more after the sweep under way, if any: what that one had passed is taken too.
   * @returns what the new sweep counted
   */
  async sweepAgain(): Promise<number> {
    await this.#running?.catch(() => 0);
    return this.sweep();
  }

  /** Stop the timer, and let a running sweep end after its current batch. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running?.catch(() => 0);
  }
}
