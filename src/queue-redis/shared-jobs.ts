/**
 * Jobs of several deliveries (`deliveriesPerJob` above 1, docs/delivery.md "Several deliveries in
 * one job"): the turns that gather them, and the work of a worker that takes one, each delivery
 * held by its marker (held-deliveries.ts).
 * @module
 */
import type * as BullMQ from 'bullmq';
import type { Clock } from '../clock.js';
import { isArray } from '../internal/describe.js';
import type { DeliveryJob } from '../webhooks/delivery/job.js';
import { jobAccount } from '../webhooks/delivery/job-account.js';
import type { Deliverer, DeliveryStep } from '../webhooks/delivery/step.js';
import { type AccountSlots, type AttemptSlots, givingBack } from './account-slots.js';
import { finishedBy, type HeldDeliveries, movedFrom } from './held-deliveries.js';
import { bullJobId, isJobObject, ownAccount, type StoredJob, takenJob } from './stored-job.js';

/** The name of a job of several deliveries, and the start of its id. */
export const BUNDLE_NAME = 'deliveries';
export const BUNDLE_ID_PREFIX = 'b|';
/** The start of the id of a job of its own that took over a marker whose job was gone. */
export const OWN_ID_PREFIX = 'o|';

/** A fresh part of a job id. */
export function randomId(): string {
  return globalThis.crypto.randomUUID();
}

/** What a worker's taking of a job of several returns once its deliveries are done. */
const BUNDLE_DONE = 'finished';

/** A delivery of a job of several that the job holds, and the takings it waited through. */
export interface Held {
  readonly delivery: DeliveryJob;
  /** Its marker (none for data that is no delivery job). */
  readonly marker: string | undefined;
  readonly waited: number;
}

/** A job of several deliveries, as Redis holds it. */
export interface BundleData {
  /** The deliveries, each as enqueued (their attempts as they were). */
  readonly deliveries: readonly DeliveryJob[];
  /** Replayed from the failed set: its taking looks for deliveries that moved out first. */
  readonly replayed?: boolean;
}

/** The deliveries of a job of several, or `undefined` for data that is none. */
export function deliveriesOf(data: BundleData): readonly DeliveryJob[] | undefined {
  const deliveries = isJobObject(data as unknown) ? data.deliveries : undefined;
  return isArray(deliveries) && deliveries.length > 0 ? deliveries : undefined;
}

/** The marker key of a delivery, or `undefined` for data that is no delivery job. */
export function markerOf(held: HeldDeliveries, data: DeliveryJob): string | undefined {
  if (!isJobObject(data)) return undefined;
  try {
    return held.key(bullJobId(data));
  } catch {
    return undefined;
  }
}

/** The markers of held deliveries (those that are no delivery job have none). */
export function markersOf(items: readonly Pick<Held, 'marker'>[]): string[] {
  return items.flatMap((item) => (item.marker === undefined ? [] : [item.marker]));
}

/**
 * A held delivery as a job of its own would store it: the takings it waited through counted as
 * takings that attempted nothing.
 */
export function storedOf(item: Held): StoredJob {
  const { delivery, waited } = item;
  return isJobObject(delivery) ? { ...delivery, startsCounted: waited } : delivery;
}

/**
 * The deliveries enqueued in one turn of the event loop, gathered up to `size` at a time and
 * handed to `add` together; each caller settles with its group's `add`.
 */
export class Turns {
  readonly #size: number;
  readonly #add: (jobs: readonly DeliveryJob[]) => Promise<void>;
  #turn: { job: DeliveryJob; settle: (error?: unknown) => void }[] = [];
  readonly #adding = new Set<Promise<void>>();

  constructor(size: number, add: (jobs: readonly DeliveryJob[]) => Promise<void>) {
    this.#size = size;
    this.#add = add;
  }

  add(job: DeliveryJob): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#turn.push({
        job,
        settle: (error) => (error === undefined ? resolve() : reject(error)),
      });
      if (this.#turn.length === 1) setImmediate(() => this.#flush());
      if (this.#turn.length >= this.#size) this.#flush();
    });
  }

  /** Resolves once every group gathered so far is added (or refused). */
  async settled(): Promise<void> {
    this.#flush();
    await Promise.all(this.#adding);
  }

  #flush(): void {
    const taken = this.#turn;
    this.#turn = [];
    if (taken.length === 0) return;
    const adding = this.#add(taken.map((t) => t.job)).then(
      () => {
        for (const t of taken) t.settle();
      },
      (error: unknown) => {
        for (const t of taken) t.settle(error ?? new Error('not added'));
      },
    );
    this.#adding.add(adding);
    void adding.finally(() => this.#adding.delete(adding));
  }
}

/** What the work on jobs of several deliveries uses of its queue. @internal */
export interface SharedJobContext {
  readonly queue: Pick<BullMQ.Queue, 'getJob'>;
  readonly held: HeldDeliveries;
  readonly slots: AccountSlots;
  readonly attempts: AttemptSlots;
  readonly deliverer: Deliverer | undefined;
  readonly clock: Clock;
  readonly accountDeferMs: number;
  /** Add a job of its own, held by its marker. */
  readonly addOwn: (data: DeliveryJob, jobId: string, at: number, marked: true) => Promise<unknown>;
  /** The time a retry is due at, never before now. */
  readonly retryTime: (at: number) => number;
  /** Now, on the queue's clock (the system's where it gives no finite time). */
  readonly now: () => number;
}

/**
 * A worker's work on jobs of several deliveries: `work` attempts the deliveries a job holds,
 * `holds` tells which it holds (for a failed job's report and replay), `completed` lets go of the
 * markers of a job that completed. @internal
 */
export function sharedJobWork(context: SharedJobContext) {
  const { queue, held, slots, attempts, deliverer, clock, accountDeferMs } = context;
  const { addOwn, retryTime, now } = context;

  /**
   * Attempt the deliveries of a job that holds several, those whose marker names it, at once
   * (each in an attempt slot, each held to its account's share). A delivery that needs another
   * attempt, or whose account's share stays full, moves to a job of its own; one that is done
   * leaves its marker as finished until this job completes, so that a taking after a crash skips it.
   */
  const work = async (job: BullMQ.Job<BundleData>) => {
    const owner = String(job.id);
    const deliveries = deliveriesOf(job.data);
    if (deliveries === undefined) {
      // Data no attempt can be made of: the deliverer fails it as invalid_job (it reads any input,
      // which the type of a job's data cannot say).
      const step = await deliverer!.attempt(job.data as unknown as DeliveryJob);
      return step.done ? step.report.outcome : undefined;
    }
    let mine = await holds(job);
    // Taken again (after a crash, or replayed): a delivery whose job of its own was added before
    // its marker was handed over has left this job.
    if (job.attemptsStarted > 1 || job.data.replayed === true) {
      const left = new Set<Held>();
      for (const item of mine) {
        const moved = movedFrom(owner, bullJobId(item.delivery));
        if (item.marker === undefined || (await queue.getJob(moved)) === undefined) continue;
        await held.replace([item.marker], owner, moved);
        left.add(item);
      }
      mine = mine.filter((item) => !left.has(item));
    }
    // Each delivery takes its slots now, or waits: the waits marked at once, in one command.
    const plans = mine.map((item) => {
      const account = jobAccount(item.delivery);
      const hasAccount = slots.take(account);
      return { item, account, hasAccount, hasSlot: hasAccount && attempts.take() };
    });
    const waiting = plans.flatMap((p) =>
      p.hasSlot || p.item.marker === undefined ? [] : [p.item.marker],
    );
    // A mark that does not land counts the taking as an attempt: never fewer.
    const marked = held.waited(waiting, owner, 1).catch(() => undefined);
    const settled = await Promise.allSettled(
      plans.map((plan) => attemptHeld(job, owner, plan, marked)),
    );
    const failure = settled.find((result) => result.status === 'rejected');
    if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
    return BUNDLE_DONE;
  };

  /**
   * One delivery of a job that holds several: attempted, finished, or moved out. A delivery that
   * waits for a slot (its account's, or the process's) first marks the wait in its marker, and
   * takes the mark back before its attempt: a taking after a crash counts an attempt for each
   * earlier taking but those it waited through.
   */
  const attemptHeld = async (
    job: BullMQ.Job<BundleData>,
    owner: string,
    plan: { item: Held; account: string; hasAccount: boolean; hasSlot: boolean },
    marked: Promise<void>,
  ) => {
    const { item, account } = plan;
    const { delivery, marker } = item;
    const taken = takenJob(
      {
        data: storedOf(item),
        attemptsStarted: job.attemptsStarted,
        timestamp: job.timestamp,
        opts: job.opts,
      },
      clock.now(),
    ).job;
    const mark = (value: string) =>
      marker === undefined ? Promise.resolve() : held.replace([marker], owner, value);
    const moveOut = async (next: DeliveryJob, at: number) => {
      const moved = movedFrom(owner, bullJobId(delivery));
      await addOwn(ownAccount(next, delivery), moved, at, true);
      await mark(moved).catch(() => undefined);
    };
    if (!plan.hasSlot) {
      await marked;
      let hasAccount = plan.hasAccount || slots.take(account);
      if (!hasAccount) {
        const handed = slots.wait(account, true);
        hasAccount = handed !== undefined && (await handed);
        if (!hasAccount) {
          // Its account's share stayed full: to a job of its own, due after the deferral.
          await moveOut(taken, now() + accountDeferMs);
          return;
        }
      }
      await attempts.taken();
    }
    const giveBack = givingBack(slots, account, attempts);
    let step: DeliveryStep;
    try {
      // A wait is taken off the record before the attempt: a process that dies in it counts it.
      if (!plan.hasSlot && marker !== undefined) await held.waited([marker], owner, -1);
      step = await deliverer!.attempt(taken, { requestEnded: giveBack });
    } finally {
      giveBack();
    }
    if (!step.done) {
      await moveOut(step.job, retryTime(step.at));
      return;
    }
    await mark(finishedBy(owner)).catch(() => undefined);
  };

  /** The deliveries of a job of several, each with its marker. */
  const itemsOf = (job: Pick<BullMQ.Job, 'data'>) =>
    (deliveriesOf(job.data as BundleData) ?? []).map((delivery) => ({
      delivery,
      marker: markerOf(held, delivery),
    }));

  /** The deliveries a job of several holds, each with the takings it waited through. */
  const holds = async (job: Pick<BullMQ.Job, 'data' | 'id'>): Promise<Held[]> => {
    const items = itemsOf(job);
    const markers = markersOf(items);
    const waits = await held.holds(markers, String(job.id));
    const waited = new Map(markers.map((marker, i) => [marker, waits[i]]));
    return items.flatMap((item) => {
      if (item.marker === undefined) return [{ ...item, waited: 0 }];
      const w = waited.get(item.marker);
      return w === undefined ? [] : [{ ...item, waited: w }];
    });
  };

  /** Once a job of several completes, no taking can read its finished markers again: they go. */
  const completed = (job: Pick<BullMQ.Job, 'data' | 'id'>) =>
    held.release(markersOf(itemsOf(job)), finishedBy(String(job.id)));

  return { work, holds, completed };
}
