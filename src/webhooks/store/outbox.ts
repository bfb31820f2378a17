/**
 * The outbox of the webhook service: a message and its pending deliveries are on record before
 * any job is queued; sweeps hand the queue what is due and no queue holds (at start, and on a
 * timer that does not keep the process alive); a queue with no room leaves the rest to the
 * sweeps, their leases given back, and a sweep follows as soon as it has room again; replays set
 * failed deliveries pending again, the first at once and the rest paced (see
 * docs/webhook-service.md).
 * @module
 */
import type { Clock } from '../../clock.js';
import { isApiConventionsError } from '../../errors/index.js';
import { PeriodicSweep } from '../../internal/periodic-sweep.js';
import { deliveryJob } from '../delivery/create-deliverer.js';
import type { DeliveryJob } from '../delivery/job.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import type { SubscriptionIndex } from '../subscriptions/subscription-index.js';
import type {
  DeliveryKey,
  KeptMessage,
  MessageKey,
  OutboxMessage,
  PendingDelivery,
  ReplayResult,
  ReplaySelection,
  SubscriptionRepository,
} from './repository.js';

/** The most pending deliveries one sweep statement takes. @internal */
export const SWEEP_BATCH = 500;

// The due time that takes every pending delivery, due or not: later than any delivery.
const EVERY_DELIVERY = Number.MAX_SAFE_INTEGER;

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

/** A job to hand the queue, and when it is due (absent: now). */
interface Handed {
  readonly job: DeliveryJob;
  readonly at?: number;
}

/** How handing jobs to the queue went: all taken, some left out for want of room, or refused. */
type Handing = 'taken' | 'full' | 'refused';

/** The service's outbox. @internal */
export class Outbox {
  readonly #settings: OutboxSettings;
  readonly #sweeps: PeriodicSweep;
  // Alone on the data, sweeps take the deliveries whose lease the start gave back, due or not,
  // until one has gone through them all.
  #takingOver = false;
  // A sweep is promised for when the queue has room again.
  #awaitingRoom = false;

  constructor(settings: OutboxSettings) {
    this.#settings = settings;
    this.#sweeps = new PeriodicSweep(() => this.#sweep(), settings.intervalMs, settings.onError);
  }

  /**
   * Take over what a predecessor's queue held, which is gone: give back the lease of every due
   * pending delivery, or of every pending one where this process is alone on the data (those then
   * queued for their time). Called once, before this process records or claims anything, so that
   * no lease it gives back is its own.
   */
  async takeOver(): Promise<void> {
    const { repository, clock } = this.#settings;
    if (repository.releaseLeases === undefined) return;
    const alone = repository.exclusive === true;
    await repository.releaseLeases(alone ? EVERY_DELIVERY : clock.now());
    this.#takingOver = alone;
  }

  /** Sweep once (every due delivery no queue holds; after `takeOver`, what it gave back), then start the timer. */
  async start(): Promise<void> {
    await this.#sweeps.sweep();
    this.#sweeps.start();
  }

  /** Stop the timer, and let a running sweep end after its current batch. */
  close(): Promise<void> {
    return this.#sweeps.close();
  }

  /**
   * Record a message and its deliveries, then queue them. Resolves once they are on record,
   * without waiting for room in the queue: a job the queue has no room for is left to the sweeps,
   * and one it refuses is told to `onError` and left to the sweeps. With an idempotency `key`, the
   * message is recorded (deliveries or none) unless the key holds one already, and only a message
   * recorded now is queued.
   * @returns with `key`, the message the key holds (see `recordMessage`); without, `undefined`
   */
  async publish(
    message: OutboxMessage,
    subscriptions: readonly { readonly id: string; readonly endpointUrl: string }[],
    key?: MessageKey,
  ): Promise<KeptMessage | undefined> {
    if (subscriptions.length === 0 && key === undefined) return undefined;
    const { repository, leaseMs } = this.#settings;
    const leaseUntil = message.createdAt + leaseMs;
    const kept = await repository.recordMessage(
      message,
      subscriptions.map((s) => ({ subscriptionId: s.id, endpointUrl: s.endpointUrl })),
      key === undefined ? { leaseUntil } : { leaseUntil, key },
    );
    // Another message holds the key: this one was not recorded.
    if (kept !== undefined && kept.messageId !== message.id) return kept;
    const { accountCode } = message;
    await this.#hand(
      subscriptions.map((s) => ({ job: { ...deliveryJob(message, s), accountCode } })),
      leaseUntil,
    );
    return kept;
  }

  /**
   * Hand the queue the pending deliveries that are due and whose lease has passed, a batch at a
   * time; a sweep asked for during one joins it.
   * @returns how many it handed over
   */
  sweep(): Promise<number> {
    return this.#sweeps.sweep();
  }

  async #sweep(): Promise<number> {
    let handed = 0;
    if (this.#takingOver) {
      const given = await this.#pass(true);
      handed += given.handed;
      if (!given.complete) return handed;
      this.#takingOver = false;
    }
    return handed + (await this.#pass(false)).handed;
  }

  /**
   * Claim a batch at a time and hand it to the queue, until a batch is short or the queue full:
   * the due deliveries whose lease passed, or (`released`) those `takeOver` gave back, due or not,
   * each queued for its time.
   */
  async #pass(released: boolean): Promise<{ handed: number; complete: boolean }> {
    const { repository, clock, leaseMs } = this.#settings;
    let handed = 0;
    for (;;) {
      const now = clock.now();
      const batch = await repository.claimDeliveries({
        dueBy: released ? EVERY_DELIVERY : now,
        leaseUntil: now + leaseMs,
        limit: SWEEP_BATCH,
        ...(released ? { released } : {}),
      });
      const handing = await this.#hand(
        batch.map((p) => ({
          job: this.#jobOf(p),
          ...(p.nextAttemptAt > now ? { at: p.nextAttemptAt } : {}),
        })),
        now + leaseMs,
      );
      // Left out for want of room (given back, swept again once there is room), or refused.
      if (handing !== 'taken') return { handed, complete: false };
      handed += batch.length;
      if (batch.length < SWEEP_BATCH) return { handed, complete: true };
      if (this.#sweeps.closed) return { handed, complete: false };
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
    return (await this.#hand(jobs.map((job) => ({ job })))) === 'taken';
  }

  /**
   * Offer jobs to the queue in turn (a queue without `offer` is enqueued to). Once it has no room,
   * the rest are given back (their lease `leaseUntil` released, when known and the repository can)
   * for a sweep once it has room; a refusal (closed, unreachable) is told to `onError` and ends
   * the run, the rest left for their lease.
   */
  async #hand(jobs: readonly Handed[], leaseUntil?: number): Promise<Handing> {
    const { queue, onError } = this.#settings;
    for (let i = 0; i < jobs.length; i++) {
      const { job, at } = jobs[i] as Handed;
      const options = at === undefined ? undefined : { at };
      let taken: boolean;
      try {
        taken =
          queue.offer === undefined
            ? await queue.enqueue(job, options).then(() => true)
            : await queue.offer(job, options);
      } catch (error) {
        onError(error);
        // A queue of a bound of its own (the Redis queue's capacity) says full by refusing.
        if (!(isApiConventionsError(error) && error.code === 'queue_full')) return 'refused';
        taken = false;
      }
      if (!taken) {
        await this.#giveBack(jobs.slice(i), leaseUntil);
        return 'full';
      }
    }
    return 'taken';
  }

  /** Release the lease of jobs the queue had no room for, and sweep again once it has room. */
  async #giveBack(jobs: readonly Handed[], leaseUntil: number | undefined): Promise<void> {
    const { repository, queue, onError } = this.#settings;
    if (leaseUntil !== undefined && repository.releaseDeliveries !== undefined) {
      try {
        await repository.releaseDeliveries(
          jobs.map(({ job }) => keyOf(job)),
          leaseUntil,
        );
      } catch (error) {
        onError(error); // left for their lease
      }
    }
    if (queue.room === undefined || this.#awaitingRoom || this.#sweeps.closed) return;
    this.#awaitingRoom = true;
    queue
      .room()
      .then(() => {
        this.#awaitingRoom = false;
        return this.#sweeps.closed ? 0 : this.#sweeps.sweepAgain();
      })
      .catch(onError);
  }

  /** The job of a pending delivery: to the subscription's endpoint now, if this instance holds it. */
  #jobOf(pending: PendingDelivery): DeliveryJob {
    const held = this.#settings.index.get(pending.subscriptionId);
    const endpointUrl =
      held !== undefined && held.accountCode === pending.accountCode
        ? held.endpointUrl
        : pending.endpointUrl;
    const { accountCode, messageId, subscriptionId, body, attempts, firstAttemptAt, replay } =
      pending;
    return {
      id: messageId,
      subscriptionId,
      endpointUrl,
      body,
      attempts,
      accountCode,
      ...(firstAttemptAt === undefined ? {} : { firstAttemptAt }),
      ...(replay > 0 ? { replay } : {}),
    };
  }
}

/** The delivery a job of the outbox is of. */
function keyOf(job: DeliveryJob): DeliveryKey {
  return {
    accountCode: job.accountCode as string,
    messageId: job.id,
    subscriptionId: job.subscriptionId,
  };
}
