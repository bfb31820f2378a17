/**
 * Timers on a fake clock: `sleep` and `at` register a timer, and `run` fires them in time order,
 * moving the clock to each one's instant once everything due before it has run. Sleeps that
 * overlap each wake at their own instant (a sleep that just advanced the clock by its length would
 * add them up), so a test can give the same sleep to the pacer and to a fake server's latency.
 */
import type { FakeClock } from '../../src/index.js';

interface Timer {
  readonly at: number;
  readonly fire: () => void;
}

/** Turns of the event loop between two timers: what is due settles before the clock moves. */
const SETTLE_TURNS = 3;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class FakeTimers {
  readonly #timers: Timer[] = [];

  constructor(readonly clock: FakeClock) {}

  /** Wait `ms` on the fake clock; an abort rejects at once with the signal's reason. */
  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = this.#add(this.clock.now() + Math.max(0, ms), () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      const onAbort = () => {
        this.#remove(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });

  /** Resolves at the instant `ms` (or at once if the clock is past it). */
  at(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.#add(Math.max(ms, this.clock.now()), resolve));
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }

  /**
   * Fire timers in order of their instants until `work` settles, and return what it gives.
   * @throws Error when `work` is still pending and no timer is left to move it on
   */
  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    done.catch(() => undefined);
    for (;;) {
      for (let i = 0; i < SETTLE_TURNS; i++) await nextTurn();
      if (settled) return work;
      const next = this.#timers.shift();
      if (next === undefined) throw new Error('the work waits, and no timer is left to wake it');
      if (next.at > this.clock.now()) this.clock.set(next.at);
      next.fire();
    }
  }

  #add(at: number, fire: () => void): Timer {
    const timer = { at, fire };
    // Kept sorted by instant, then by order of setting, as real timers fire.
    let i = this.#timers.length;
    while (i > 0 && (this.#timers[i - 1] as Timer).at > at) i--;
    this.#timers.splice(i, 0, timer);
    return timer;
  }

  #remove(timer: Timer): void {
    const i = this.#timers.indexOf(timer);
    if (i !== -1) this.#timers.splice(i, 1);
  }
}
