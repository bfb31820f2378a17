/**
 * The outbox of the webhook service: a message and its pending deliveries are on record before
 * any job is queued; sweeps hand the queue what is due and no queue holds (at start, and on a
 * timer that does not keep the process alive); replays set failed deliveries pending again, the
 * first at once and the rest paced (see docs/webhook-service.md).
 * @module
 */
import type { Clock } from '../clock.js';
import { PeriodicSweep } from '../internal/periodic-sweep.js';
import { type DeliveryJob, deliveryJob } from './delivery.js';
import type { DeliveryQueue } from './delivery-queue.js';
import type { SubscriptionIndex } from './subscription-index.js';
import type {
  OutboxMessage,
  PendingDelivery,
  ReplayResult,
  ReplaySelection,
  SubscriptionRepository,
} from './subscription-repository.js';

/** The most pending deliveries one sweep statement takes. @internal */
export const SWEEP_BATCH = 500;

/** What the outbox works with. @internal */
export interface OutboxSettings {
  readonly repository: SubscriptionRepository;
  readonly queue: DeliveryQueue;
  readonly index: SubscriptionIndex;
  readonly clock: Clock;
  /** How often the timer sweeps, in ms; 0: only at start. */
  readonly intervalMs: number;
  /** How long a delivery handed to a queue is left to it past its due time, in ms. */
  readonly leaseMs: number;
  /** Deliveries a replay queues at once; the rest are paced. */
  readonly replayInlineLimit: number;
  /** The interval between two paced replay deliveries, in ms. */
  readonly replayPaceMs: number;
  /** Told of a sweep or an enqueue that failed. */
  readonly onError: (error: unknown) => void;
}

/** The service's outbox. @internal */
export class Outbox {
  readonly #settings: OutboxSettings;
  readonly #sweeps: PeriodicSweep;
  // The first sweep is the start's: it takes every due delivery whatever its lease.
  #starting = true;

  constructor(settings: OutboxSettings) {
    this.#settings = settings;
    this.#sweeps = new PeriodicSweep(
      () => {
        const ignoreLeases = this.#starting;
        this.#starting = false;
        return this.#sweep(ignoreLeases);
      },
      settings.intervalMs,
      settings.onError,
    );
  }

  /**
   * Sweep once, taking every due delivery whatever its lease (what a predecessor's memory queue
   * held is gone), then start the timer.
   */
  async start(): Promise<void> {
    await this.#sweeps.sweep();
    this.#sweeps.start();
  }

  /** Stop the timer, and let a running sweep end after its current batch. */
  close(): Promise<void> {
    return this.#sweeps.close();
  }

  /**
   * Record a message and its deliveries, then queue them. Resolves once they are on record: a
   * job the queue refuses is left to the sweeps (and told to `onError`).
   */
  async publish(
    message: OutboxMessage,
    subscriptions: readonly { readonly id: string; readonly endpointUrl: string }[],
  ): Promise<void> {
    if (subscriptions.length === 0) return;
    const { repository, leaseMs } = this.#settings;
    await repository.recordMessage(
      message,
      subscriptions.map((s) => ({ subscriptionId: s.id, endpointUrl: s.endpointUrl })),
      { leaseUntil: message.createdAt + leaseMs },
    );
    await this.#enqueue(subscriptions.map((s) => deliveryJob(message, s)));
  }

  /**
   * Hand the queue the pending deliveries that are due and whose lease has passed, a batch at a
   * time; a sweep asked for during one joins it.
   * @returns how many it handed over
   */
  sweep(): Promise<number> {
    return this.#sweeps.sweep();
  }

  async #sweep(ignoreLeases: boolean): Promise<number> {
    const { repository, clock, leaseMs } = this.#settings;
    let handed = 0;
    for (;;) {
      const now = clock.now();
      const batch = await repository.claimDeliveries({
        dueBy: now,
        leaseUntil: now + leaseMs,
        limit: SWEEP_BATCH,
        ...(ignoreLeases ? { ignoreLeases } : {}),
      });
      // Each delivery is claimed once per sweep: taken again only after its lease.
      ignoreLeases = false;
      if (!(await this.#enqueue(batch.map((p) => this.#jobOf(p))))) return handed;
      handed += batch.length;
      if (batch.length < SWEEP_BATCH || this.#sweeps.closed) return handed;
    }
  }

  /**
   * Set the selected failed deliveries pending again, paced per subscription by the repository
   * (an allowance of `replayInlineLimit` due at once, one back every `replayPaceMs`, shared by
   * every call and instance): those due now, at most `replayInlineLimit`, are queued now, the rest
   * left for the sweeps to take as they come due.
   */
  async replay(accountCode: string, selection: ReplaySelection): Promise<ReplayResult> {
    const { repository, clock, leaseMs, replayInlineLimit, replayPaceMs } = this.#settings;
    const at = clock.now();
    const result = await repository.replay(accountCode, selection, {
      at,
      inline: replayInlineLimit,
      leaseUntil: at + leaseMs,
      paceMs: replayPaceMs,
    });
    await this.#enqueue(result.due.map((p) => this.#jobOf(p)));
    return result;
  }

  /** Queue jobs in turn; a refusal ends the run (the rest wait for their lease). */
  async #enqueue(jobs: readonly DeliveryJob[]): Promise<boolean> {
    const { queue } = this.#settings;
    for (const job of jobs) {
      try {
        await queue.enqueue(job);
      } catch (error) {
        this.#settings.onError(error);
        return false;
      }
    }
    return true;
  }

  /** The job of a pending delivery: to the subscription's endpoint now, if this instance holds it. */
  #jobOf(pending: PendingDelivery): DeliveryJob {
    const held = this.#settings.index.get(pending.subscriptionId);
    const endpointUrl =
      held !== undefined && held.accountCode === pending.accountCode
        ? held.endpointUrl
        : pending.endpointUrl;
    const { messageId, subscriptionId, body, attempts, firstAttemptAt, replay } = pending;
    return {
      id: messageId,
      subscriptionId,
      endpointUrl,
      body,
      attempts,
      ...(firstAttemptAt === undefined ? {} : { firstAttemptAt }),
      ...(replay > 0 ? { replay } : {}),
    };
  }
}
