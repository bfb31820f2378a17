/**
 * Retention of the delivery log: attempts older than the retention period are deleted in bounded
 * batches, on a timer that does not keep the process alive and on demand; then the messages as
 * old that owe no pending delivery, with their deliveries; then the idempotency keys that have
 * expired.
 * @module
 */
import type { Clock } from '../../clock.js';
import { PeriodicSweep } from '../../internal/periodic-sweep.js';
import type { SubscriptionRepository } from './repository.js';

/** The most delivery attempts one retention statement deletes. @internal */
export const ATTEMPT_DELETE_BATCH = 1000;

/** What the retention works with. @internal */
export interface AttemptRetentionSettings {
  readonly repository: SubscriptionRepository;
  readonly clock: Clock;
  /** Attempts that started longer ago than this, in ms, are deleted. */
  readonly retentionMs: number;
  /** How often the timer sweeps, in ms; 0: never (sweeps on demand only). */
  readonly intervalMs: number;
  /** Told of a sweep of the timer that failed. */
  readonly onError: (error: unknown) => void;
}

/** Deletes expired attempts. @internal */
export class AttemptRetention {
  readonly #settings: AttemptRetentionSettings;
  readonly #sweeps: PeriodicSweep;

  constructor(settings: AttemptRetentionSettings) {
    this.#settings = settings;
    this.#sweeps = new PeriodicSweep(() => this.#sweep(), settings.intervalMs, settings.onError);
  }

  /** Start the timer (once; not after `close`). */
  start(): void {
    this.#sweeps.start();
  }

  /**
   * Delete every expired attempt, a batch at a time; a sweep asked for during one joins it.
   * @returns how many it deleted
   */
  sweep(): Promise<number> {
    return this.#sweeps.sweep();
  }

  /** Stop the timer, and let a running sweep end after its current batch. */
  close(): Promise<void> {
    return this.#sweeps.close();
  }

  async #sweep(): Promise<number> {
    const { repository, clock, retentionMs } = this.#settings;
    const before = clock.now() - retentionMs;
    let deleted = 0;
    for (;;) {
      const batch = await repository.deleteAttemptsBefore(before, ATTEMPT_DELETE_BATCH);
      deleted += batch;
      if (batch < ATTEMPT_DELETE_BATCH || this.#sweeps.closed) break;
    }
    // Messages go with their attempts, once they owe no pending delivery.
    while (!this.#sweeps.closed) {
      const batch = await repository.deleteMessagesBefore(before, ATTEMPT_DELETE_BATCH);
      if (batch < ATTEMPT_DELETE_BATCH) break;
    }
    // A key that has expired answers nothing again: a publish with it takes its row over anyway.
    const now = clock.now();
    while (repository.deleteExpiredKeys !== undefined && !this.#sweeps.closed) {
      const batch = await repository.deleteExpiredKeys(now, ATTEMPT_DELETE_BATCH);
      if (batch < ATTEMPT_DELETE_BATCH) break;
    }
    return deleted;
  }
}
