/** The durable delivery queue on Redis, built on BullMQ (see docs/delivery.md). @module */
import type * as BullMQ from 'bullmq';
import type { Clock } from '../clock.js';
import { DeliveryQueueError } from '../errors/delivery-queue-error.js';
import { isArray } from '../internal/describe.js';
import { LONE_SURROGATE } from '../internal/lone-surrogate.js';
import type { DeliveryJob } from '../webhooks/delivery/job.js';
import { jobAccount } from '../webhooks/delivery/job-account.js';
import type { DeliveryQueue, EnqueueOptions } from '../webhooks/delivery/queue.js';
import type { DeliveryStep } from '../webhooks/delivery/step.js';
import { AccountSlots, AttemptSlots, waitingRoom } from './account-slots.js';
import {
  finishedBy,
  HeldDeliveries,
  holdingJob,
  isFinished,
  type MarkerClient,
  movedFrom,
  parentOf,
} from './held-deliveries.js';
import { jsonForm } from './json-form.js';
import { type RedisDeliveryQueueOptions, readQueueOptions } from './redis-queue-options.js';

/**
 * The Redis queue: a {@link DeliveryQueue} plus a view of its counts. Its `enqueue` also rejects
 * with `invalid_job` for a job that is not plain JSON, and with `queue_unavailable` (the client's
 * error as `cause`) when Redis fails the command; enqueueing the same job again is safe.
 */
export interface RedisDeliveryQueue extends DeliveryQueue {
  /** Jobs by state (`waiting`, `active`, `delayed`, `completed`, `failed`). */
  counts(): Promise<Record<string, number>>;
  /** The jobs BullMQ gave up on (reported as `lost`), oldest first, as they were when it did. */
  failed(): Promise<DeliveryJob[]>;
  /** Replay every job BullMQ gave up on, schedule afresh, same `webhook-id`; returns how many. */
  retryFailed(): Promise<number>;
}

const JOB_NAME = 'delivery';

// A backstop only: the deliverer's schedule counts stalled attempts and gives up first.
const MAX_STALLED_COUNT = 100;

/**
 * Open the queue, and start a worker when a deliverer is given.
 * @throws ConfigurationError `invalid_option` for a wrong bullmq module, bound or worker option
 * @example
 * ```ts
 * import * as bullmq from 'bullmq';
 * const queue = createRedisDeliveryQueue({
 *   bullmq,
 *   connection: { host: '127.0.0.1', port: 6379, maxRetriesPerRequest: null },
 *   deliverer,
 * });
 * ```
 */
export function createRedisDeliveryQueue(options: RedisDeliveryQueueOptions): RedisDeliveryQueue {
  const read = readQueueOptions(options);
  const { bullmq, concurrency, capacity, name, keep, clock, deliverer, accountDeferMs } = read;
  const { accountConcurrency, deliveriesPerJob } = read;
  const bundled = deliveriesPerJob > 1;
  // The account's workers in this process, and its jobs waiting for one.
  const room = waitingRoom(accountConcurrency, concurrency);
  const slots = new AccountSlots(accountConcurrency, room, accountDeferMs);
  // A worker takes `concurrency` jobs at a time; a job may hold several deliveries.
  const attempts = new AttemptSlots(concurrency);
  const workerOptions = {
    maxStalledCount: MAX_STALLED_COUNT,
    ...definedOnly(read.workerOptions ?? {}),
  };
  const base = {
    connection: read.connection,
    ...(read.prefix === undefined ? {} : { prefix: read.prefix }),
  };
  const queue = new bullmq.Queue<QueuedData>(name, base);
  const held = new HeldDeliveries(
    () => redisClientOf(queue),
    `${read.prefix ?? DEFAULT_PREFIX}:${name}`,
  );
  const added = { removeOnComplete: keep, removeOnFail: false };

  /** Add a job of its own, with the count of takings it starts from (and, `marked`, its marker). */
  const addOwn = (data: DeliveryJob, jobId: string, at: number | undefined, marked: boolean) => {
    const delay = at === undefined ? 0 : Math.max(0, Math.ceil(at - nowOf(clock)));
    const stored: StoredJob = isJobObject(data)
      ? { ...withoutCount(data), startsCounted: 0, ...(marked ? { marked } : {}) }
      : data;
    return queue.add(JOB_NAME, stored, { jobId, ...added, ...(delay > 0 ? { delay } : {}) });
  };

  /**
   * Add deliveries held by markers: one alone as a job of its own under its id, several as one
   * job. The markers are claimed for the job by a command written before the job's, on the same
   * connection, so Redis runs the claim first and the two take one round trip. A delivery another
   * job holds is skipped by this job when taken; one whose job is gone (its process died between
   * the claim and the add, or the job was removed by hand) is taken over by a job of its own,
   * claimed before it is added.
   */
  const addHeld = async (jobs: readonly DeliveryJob[], at: number | undefined) => {
    const unique = new Map(jobs.map((job) => [bullJobId(job), job]));
    const lone = unique.size === 1;
    const owner = lone ? [...unique.keys()][0]! : `${BUNDLE_ID_PREFIX}${randomId()}`;
    const markers = [...unique.keys()].map((k) => held.key(k));
    const deliveries = [...unique.values()];
    await held.connect();
    const claiming = held.claimFirst(markers, owner);
    const adding = lone
      ? addOwn(deliveries[0]!, owner, at, true)
      : queue.add(
          BUNDLE_NAME,
          { deliveries: deliveries.map(withoutCount) },
          { jobId: owner, ...added },
        );
    const [claimed] = await Promise.all([claiming, adding]);
    await Promise.all(
      markers.map(async (marker, i) => {
        if (claimed[i]) return;
        const own = `${OWN_ID_PREFIX}${randomId()}`;
        if (await takeOver(marker, own)) await addOwn(deliveries[i]!, own, at, true);
      }),
    );
  };
  /**
   * Claim a marker whose job is gone for `owner`: `true` once `owner` holds it. A job named by a
   * marker it no longer holds skips the delivery when taken, so a delivery is never attempted by
   * two jobs.
   */
  const takeOver = async (marker: string, owner: string) => {
    const [holder] = await held.holders([marker]);
    if (holder === null || holder === undefined) return (await held.claim([marker], owner))[0]!;
    if (isFinished(holder) || (await queue.getJob(holdingJob(holder))) !== undefined) return false;
    await held.replace([marker], holder, owner);
    return (await held.claim([marker], owner))[0]!;
  };
  const turns = new Turns(deliveriesPerJob, (jobs) => redis(() => addHeld(jobs, undefined)));

  /**
   * Attempt one job, put back to the delayed set for a retry or a deferral. A job a marker holds
   * (in a queue of several deliveries a job) is attempted only where it holds its marker.
   */
  const workOwn = async (job: BullMQ.Job<StoredJob>, token: string | undefined) => {
    const { data } = job;
    const jobId = String(job.id);
    const marker = isJobObject(data) && data.marked === true ? markerOf(held, data) : undefined;
    if (
      marker !== undefined &&
      (await held.holds([marker], jobId, parentOf(jobId)))[0] === undefined
    ) {
      return HELD_ELSEWHERE;
    }
    const account = jobAccount(data);
    const taken = takenJob(job, clock.now());
    if (!slots.take(account)) {
      // The account holds its share of the workers: this taking attempts nothing and is
      // recorded as none (BullMQ counted it). The job waits here for one of the account's
      // workers, or goes back to Redis.
      const record = recordOf(taken.job, job);
      if (!(await waitedForWorker(job, slots, account, record, data))) {
        await putBack(job, record, nowOf(clock) + accountDeferMs, token);
        throw new bullmq.DelayedError();
      }
    }
    let step: DeliveryStep;
    try {
      // A job stored without `startsCounted` is counted as it was: written before the attempt.
      if (taken.before !== undefined) await job.updateData(taken.before);
      step = await attempts.run(() => deliverer!.attempt(taken.job));
    } finally {
      slots.give(account);
    }
    if (step.done) {
      if (marker !== undefined) await held.release([marker], jobId).catch(() => undefined);
      return step.report.outcome;
    }
    // The next attempt waits in Redis, not in this process: a restart loses nothing.
    await putBack(job, recordOf(ownAccount(step.job, data), job), retryTime(step.at), token);
    throw new bullmq.DelayedError();
  };

  /**
   * Attempt the deliveries of a job that holds several, those whose marker names it, at once
   * (each in an attempt slot, each held to its account's share). A delivery that needs another
   * attempt, or whose account's share stays full, moves to a job of its own; one that is done
   * leaves its marker as finished until this job completes, so that a taking after a crash skips it.
   */
  const workBundle = async (job: BullMQ.Job<BundleData>) => {
    const owner = String(job.id);
    const deliveries = deliveriesOf(job.data);
    if (deliveries === undefined) {
      // Data no attempt can be made of: the deliverer fails it as invalid_job (it reads any input,
      // which the type of a job's data cannot say).
      const step = await deliverer!.attempt(job.data as unknown as DeliveryJob);
      return step.done ? step.report.outcome : undefined;
    }
    let mine = await bundleHolds(job);
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
      plans.map((plan) => workHeld(job, owner, plan, marked)),
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
  const workHeld = async (
    job: BullMQ.Job<BundleData>,
    owner: string,
    plan: { item: Held; account: string; hasAccount: boolean; hasSlot: boolean },
    marked: Promise<void>,
  ) => {
    const { item, account } = plan;
    const { delivery, marker, waited } = item;
    const taken = takenJob(
      {
        data: isJobObject(delivery) ? { ...delivery, startsCounted: waited } : delivery,
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
          await moveOut(taken, nowOf(clock) + accountDeferMs);
          return;
        }
      }
      if (!attempts.take()) await attempts.wait();
      try {
        // Off the record before the attempt: a process that dies in it counts it.
        if (marker !== undefined) await held.waited([marker], owner, -1);
      } catch (error) {
        attempts.give();
        slots.give(account);
        throw error;
      }
    }
    let step: DeliveryStep;
    try {
      step = await deliverer!.attempt(taken);
    } finally {
      attempts.give();
      slots.give(account);
    }
    if (!step.done) {
      await moveOut(step.job, retryTime(step.at));
      return;
    }
    await mark(finishedBy(owner)).catch(() => undefined);
  };

  // A clock that returns NaN must not make the retry due at once.
  const retryTime = (at: number) => {
    const later = clock.now();
    return Number.isFinite(later) ? Math.max(at, later) : at;
  };

  /** The deliveries a failed job holds, as they were when BullMQ gave up on it. */
  const heldBy = async (job: BullMQ.Job<QueuedData>): Promise<DeliveryJob[]> => {
    if (job.name !== BUNDLE_NAME) return [reported(job as BullMQ.Job<StoredJob>)];
    return (await bundleHolds(job)).map(({ delivery, waited }) =>
      reported({
        data: isJobObject(delivery) ? { ...delivery, startsCounted: waited } : delivery,
        attemptsStarted: job.attemptsStarted,
        failedReason: job.failedReason,
      }),
    );
  };

  /** The deliveries a job of several holds, each with the takings it waited through. */
  const bundleHolds = async (job: BullMQ.Job<QueuedData>): Promise<Held[]> => {
    const items = (deliveriesOf(job.data as BundleData) ?? []).map((delivery) => ({
      delivery,
      marker: markerOf(held, delivery),
    }));
    const markers = items.flatMap((item) => (item.marker === undefined ? [] : [item.marker]));
    const waits = await held.holds(markers, String(job.id));
    const waited = new Map(markers.map((marker, i) => [marker, waits[i]]));
    return items.flatMap((item) => {
      if (item.marker === undefined) return [{ ...item, waited: 0 }];
      const w = waited.get(item.marker);
      return w === undefined ? [] : [{ ...item, waited: w }];
    });
  };

  const worker =
    deliverer === undefined
      ? undefined
      : new bullmq.Worker<QueuedData>(
          name,
          (job, token) =>
            job.name === BUNDLE_NAME
              ? workBundle(job as BullMQ.Job<BundleData>)
              : workOwn(job as BullMQ.Job<StoredJob>, token),
          { ...base, concurrency, ...definedOnly(workerOptions) },
        );
  // Errors of the connection surface through the calls that fail; keep the emitters quiet.
  queue.on('error', () => undefined);
  worker?.on('error', () => undefined);
  // A job BullMQ failed (it stalled too often) is never dropped silently: reported, and kept.
  worker?.on('failed', (job, error) => {
    if (job === undefined || deliverer === undefined) return;
    const lost = {
      code: job.failedReason === STALLED_TOO_OFTEN ? 'stalled' : 'queue_failed',
      message: `${errorMessage(error)}; the job is kept in the failed set: replay it with retryFailed().`,
    };
    // A deliverer of one's own may lack lost(), or throw or reject in it: never unhandled.
    (async () => {
      for (const delivery of await heldBy(job)) await deliverer.lost?.(delivery, lost);
    })().catch(() => undefined);
  });
  // Once a job of several deliveries completes, no taking can read its finished markers again.
  worker?.on('completed', (job) => {
    if (job.name !== BUNDLE_NAME) return;
    const markers = (deliveriesOf(job.data as BundleData) ?? []).map((d) => markerOf(held, d));
    held
      .release(
        markers.filter((m) => m !== undefined),
        finishedBy(String(job.id)),
      )
      .catch(() => undefined);
  });
  let closed = false;

  return {
    async enqueue(job, options) {
      if (closed) {
        throw new DeliveryQueueError(
          'queue_closed',
          'The delivery queue is closed (the service is shutting down); enqueue to a running queue.',
        );
      }
      let data: StoredJob;
      let jobId: string;
      try {
        // Read once, as the JSON Redis will hold: the id is derived from the data stored.
        data = jsonForm(job) as DeliveryJob;
        jobId = bullJobId(data);
      } catch (caught) {
        throw new DeliveryQueueError(
          'invalid_job',
          `The delivery job cannot be stored as JSON (${errorMessage(caught)}); enqueue a plain object of strings and numbers, as deliveryJob() makes.`,
          { cause: caught },
        );
      }
      const pending = Number.isFinite(capacity) ? await redis(() => queue.count()) : 0;
      if (pending >= capacity) {
        throw new DeliveryQueueError(
          'queue_full',
          `The delivery queue holds ${capacity} pending jobs; retry later or raise capacity.`,
        );
      }
      const at = timeOf(options);
      if (!bundled) {
        await redis(() => addOwn(data, jobId, at, false));
      } else if (at !== undefined && at > nowOf(clock)) {
        await redis(() => addHeld([data], at));
      } else {
        await turns.add(data);
      }
    },
    async close() {
      closed = true;
      await turns.settled(); // the deliveries of this turn go to Redis first
      slots.endWaits(); // jobs waiting for their account's worker go back to Redis
      await worker?.close(); // waits for the attempts in flight
      await queue.close();
      return []; // everything pending stays in Redis for the next worker
    },
    counts: () => queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed'),
    async failed() {
      const jobs = await queue.getFailed();
      const held = await Promise.all(jobs.reverse().map(heldBy));
      return held.flat();
    },
    async retryFailed() {
      let replayed = 0;
      for (const job of await queue.getFailed()) {
        const holds = job.name === BUNDLE_NAME ? await bundleHolds(job) : undefined;
        // Reset first: dying between the calls leaves a failed job, not a spent replay. BullMQ's
        // count of takings starts again from 0 too, and so do the waits its markers count.
        await (job as BullMQ.Job<QueuedData>).updateData(replayedData(job));
        const markers = (holds ?? []).flatMap((h) => (h.marker === undefined ? [] : [h.marker]));
        await held.replace(markers, String(job.id), String(job.id));
        try {
          await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        } catch (caught) {
          // Replayed (or removed) meanwhile by another caller: not ours to count.
          if (await job.isFailed()) throw caught;
          continue;
        }
        replayed += holds?.length ?? 1;
      }
      return replayed;
    },
  };
}

/**
 * The data a failed job is replayed with: each delivery's schedule afresh (its attempts from 0),
 * and a job of several marked replayed, so that its taking looks for deliveries that moved out.
 */
function replayedData(job: BullMQ.Job<QueuedData>): QueuedData {
  const afresh = (data: StoredJob): StoredJob => {
    if (!isJobObject(data)) return data;
    const { firstAttemptAt: _, startsCounted: __, ...rest } = data;
    return { ...rest, attempts: 0, startsCounted: 0 };
  };
  if (job.name !== BUNDLE_NAME) return afresh(job.data as StoredJob);
  const deliveries = deliveriesOf(job.data as BundleData);
  if (deliveries === undefined) return job.data;
  return {
    deliveries: deliveries.map((d) => withoutCount(afresh(d))),
    replayed: true,
  };
}

/** BullMQ's key prefix when none is given. */
const DEFAULT_PREFIX = 'bull';

/** The name of a job of several deliveries, and the start of its id. */
const BUNDLE_NAME = 'deliveries';
const BUNDLE_ID_PREFIX = 'b|';
/** The start of the id of a job of its own that took over a marker whose job was gone. */
const OWN_ID_PREFIX = 'o|';

/** A fresh part of a job id. */
function randomId(): string {
  return globalThis.crypto.randomUUID();
}

/** What a taking returns when another job holds its delivery, and when a job of several ends. */
const HELD_ELSEWHERE = 'held_elsewhere';
const BUNDLE_DONE = 'finished';

/** A delivery of a job of several that the job holds, and the takings it waited through. */
interface Held {
  readonly delivery: DeliveryJob;
  /** Its marker (none for data that is no delivery job). */
  readonly marker: string | undefined;
  readonly waited: number;
}

/** A job of several deliveries, as Redis holds it. */
interface BundleData {
  /** The deliveries, each as enqueued (their attempts as they were). */
  readonly deliveries: readonly DeliveryJob[];
  /** Replayed from the failed set: its taking looks for deliveries that moved out first. */
  readonly replayed?: boolean;
}

/** What a BullMQ job of the queue holds. */
type QueuedData = StoredJob | BundleData;

/** The deliveries of a job of several, or `undefined` for data that is none. */
function deliveriesOf(data: BundleData): readonly DeliveryJob[] | undefined {
  const deliveries = isJobObject(data as unknown) ? data.deliveries : undefined;
  return isArray(deliveries) && deliveries.length > 0 ? deliveries : undefined;
}

/** The marker key of a delivery, or `undefined` for data that is no delivery job. */
function markerOf(held: HeldDeliveries, data: DeliveryJob): string | undefined {
  if (!isJobObject(data)) return undefined;
  try {
    return held.key(bullJobId(data));
  } catch {
    return undefined;
  }
}

/** A job without what the queue adds to it: its count of takings, and its marker's flag. */
function withoutCount(job: DeliveryJob): DeliveryJob {
  if (!isJobObject(job)) return job;
  const { startsCounted: _, marked: __, ...rest } = job;
  return rest;
}

/** The job to put back: it keeps its account, whatever the deliverer copied. */
function ownAccount(next: DeliveryJob, data: DeliveryJob): DeliveryJob {
  const accountCode = isJobObject(data) ? data.accountCode : undefined;
  return typeof accountCode === 'string' ? { ...next, accountCode } : next;
}

/** The queue's Redis client: BullMQ 6 holds it on its backend, BullMQ 5 on the queue. */
function redisClientOf(queue: unknown): Promise<MarkerClient> {
  // Each BullMQ major types only its own way to the client, so neither is in the other's type.
  const q = queue as unknown as {
    getBackend?: () => { client: Promise<MarkerClient> };
    client?: Promise<MarkerClient>;
  };
  const client = typeof q.getBackend === 'function' ? q.getBackend().client : q.client;
  if (client === undefined) {
    return Promise.reject(new Error('this bullmq gives no Redis client of its queue'));
  }
  return client;
}

/**
 * The deliveries enqueued in one turn of the event loop, gathered up to `size` at a time and
 * handed to `add` together; each caller settles with its group's `add`.
 */
class Turns {
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

// Now on the queue's clock; a clock that returns no finite time reads as the system's.
function nowOf(clock: Clock): number {
  const now = clock.now();
  return Number.isFinite(now) ? now : Date.now();
}

// The `at` of enqueue options, when it is a time.
function timeOf(options: EnqueueOptions | undefined): number | undefined {
  try {
    const at = options?.at;
    return typeof at === 'number' && Number.isFinite(at) ? at : undefined;
  } catch {
    return undefined;
  }
}

// BullMQ's failedReason for a job that stalled more than maxStalledCount times.
const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

/**
 * A job as the queue stores it: the deliverer's job and the count of takings its attempts account
 * for. BullMQ counts each time a worker takes a job (`attemptsStarted`: a stalled job taken again
 * and a job back from the delayed set included); the takings after `startsCounted` that no write
 * recorded were attempts lost with their process, so no write is needed before an attempt.
 */
type StoredJob = DeliveryJob & {
  /**
   * The job's `attemptsStarted` when `attempts` (and `firstAttemptAt`) were written: the takings
   * up to it are counted, attempts or deferrals alike. Absent on jobs stored before it was kept.
   */
  readonly startsCounted?: number;
  /**
   * Held by a marker (added by a queue of several deliveries a job, or moved out of a job of
   * several): attempted only while its marker names the job.
   */
  readonly marked?: boolean;
};

/** What the processor reads of a BullMQ job: its data and counters. */
type TakenBullJob = Pick<BullMQ.Job<StoredJob>, 'data' | 'attemptsStarted' | 'timestamp' | 'opts'>;

/** A job taken by the worker, as the deliverer is given it. */
interface Taken {
  /** Its `attempts`: those started before this taking, lost ones included. */
  readonly job: DeliveryJob;
  /** For a job stored without `startsCounted`: written before the attempt, as it was counted then. */
  readonly before?: StoredJob;
}

/**
 * The job a taking attempts: its recorded attempts plus the takings since the record, each one an
 * attempt whose process died before it could write (a deferral writes before it lets go).
 */
function takenJob(job: TakenBullJob, now: number): Taken {
  const { data } = job;
  // Data no attempt can be made of: the deliverer fails it as invalid_job.
  if (!isJobObject(data) || !Number.isSafeInteger(data.attempts)) return { job: data };
  const { startsCounted, marked: _, ...stored } = data;
  const starts = job.attemptsStarted; // this taking included
  const known = Number.isSafeInteger(starts) && starts >= 1;
  if (
    !(
      known &&
      Number.isSafeInteger(startsCounted) &&
      startsCounted! >= 0 &&
      startsCounted! < starts
    )
  ) {
    // Stored before `startsCounted` was kept, its attempts counted by a write before each (or its
    // count reset behind the queue's back): counted that way once, and kept from then on.
    const first = stored.firstAttemptAt ?? (Number.isFinite(now) ? now : undefined);
    const before = {
      ...stored,
      attempts: stored.attempts + 1,
      ...(first === undefined ? {} : { firstAttemptAt: first }),
      ...(known ? { startsCounted: starts } : {}),
    };
    return { job: stored, before };
  }
  const lost = starts - 1 - startsCounted!;
  if (lost === 0) return { job: stored };
  // The first attempt died unwritten: it started no earlier than the job was due.
  const firstAttemptAt = stored.firstAttemptAt ?? dueAt(job, now);
  return {
    job: {
      ...stored,
      attempts: stored.attempts + lost,
      ...(firstAttemptAt === undefined ? {} : { firstAttemptAt }),
    },
  };
}

/**
 * When a job was first due (added, plus the delay it was added with), no later than now: a lower
 * bound of its first attempt, so the schedule's max age gives up no later than it would have.
 */
function dueAt(job: TakenBullJob, now: number): number | undefined {
  const delay = Number(job.opts?.delay ?? 0);
  const due = job.timestamp + (Number.isFinite(delay) && delay > 0 ? delay : 0);
  if (!Number.isFinite(due)) return Number.isFinite(now) ? now : undefined;
  return Number.isFinite(now) ? Math.min(due, now) : due;
}

/**
 * The data to store with a job put back to Redis (a retry or a deferral): its `attempts` count
 * every taking so far, this one included, whether it attempted or not.
 */
function recordOf(
  next: DeliveryJob,
  job: Pick<BullMQ.Job<StoredJob>, 'attemptsStarted' | 'data'>,
): StoredJob | undefined {
  if (!isJobObject(next) || !Number.isSafeInteger(next.attempts)) return undefined;
  const starts = job.attemptsStarted;
  // A job held by a marker stays held by it.
  const marked = isJobObject(job.data) && job.data.marked === true;
  const rest = { ...withoutCount(next), ...(marked ? { marked } : {}) };
  return Number.isSafeInteger(starts) && starts >= 1 ? { ...rest, startsCounted: starts } : rest;
}

/**
 * Wait in this process for a worker of `account`, which holds its share: `true` once one is
 * handed over, the job's data then as it was taken (`restored`), so that a process that dies
 * attempting counts the attempt; `false` when no more of the account's jobs may wait, or the wait
 * ends without a worker. While it waits, the taking is recorded as none (`record`): a process that
 * dies then attempted nothing. A record that does not land loses no attempt (the taking is then
 * counted as one); a restore that does not land gives the worker back and throws, as a put-back
 * that fails does, so that no attempt runs uncounted.
 */
async function waitedForWorker(
  job: Pick<BullMQ.Job<StoredJob>, 'updateData'>,
  slots: AccountSlots,
  account: string,
  record: StoredJob | undefined,
  restored: StoredJob,
): Promise<boolean> {
  const waiting = slots.wait(account);
  if (waiting === undefined) return false;
  if (record !== undefined) await job.updateData(record).catch(() => undefined);
  if (!(await waiting)) return false;
  try {
    if (record !== undefined) await job.updateData(restored);
  } catch (error) {
    slots.give(account);
    throw error;
  }
  return true;
}

/**
 * Put a job back to the delayed set with its record: both commands sent at once (one round trip;
 * BullMQ's public API has no single command that writes the data and moves the job). Redis runs
 * them in the order sent on the worker's connection, the record first. A record that does not
 * land loses no attempt: the taking it would have counted is then counted as one.
 */
async function putBack(
  job: Pick<BullMQ.Job<StoredJob>, 'updateData' | 'moveToDelayed'>,
  record: StoredJob | undefined,
  at: number,
  token: string | undefined,
): Promise<void> {
  const [, moved] = await Promise.allSettled([
    record === undefined ? undefined : job.updateData(record),
    job.moveToDelayed(at, token),
  ]);
  if (moved.status === 'rejected') throw moved.reason;
}

/**
 * A job as BullMQ holds it, for a report or a view: its attempts those started, lost ones
 * included (the taking that failed a job for stalling too often attempted nothing).
 */
function reported(
  job: Pick<BullMQ.Job<StoredJob>, 'data' | 'attemptsStarted' | 'failedReason'>,
): DeliveryJob {
  const { data } = job;
  if (!isJobObject(data) || !Number.isSafeInteger(data.attempts)) return data;
  const { startsCounted, marked: _, ...stored } = data;
  const starts = job.attemptsStarted - (job.failedReason === STALLED_TOO_OFTEN ? 1 : 0);
  if (!(Number.isSafeInteger(startsCounted) && Number.isSafeInteger(starts))) return stored;
  return { ...stored, attempts: stored.attempts + Math.max(0, starts - startsCounted!) };
}

function isJobObject(value: unknown): value is StoredJob {
  return typeof value === 'object' && value !== null && !isArray(value);
}

function definedOnly<T extends object>(options: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

// The job may have been stored all the same (the reply was lost): enqueueing again is safe.
async function redis<T>(command: () => Promise<T>): Promise<T> {
  try {
    return await command();
  } catch (caught) {
    throw new DeliveryQueueError(
      'queue_unavailable',
      `Redis did not take the delivery job (${errorMessage(caught)}); enqueue it again later (answer 503): the same job is added once.`,
      { cause: caught },
    );
  }
}

function errorMessage(caught: unknown): string {
  try {
    return caught instanceof Error ? caught.message : String(caught);
  } catch {
    return 'unreadable error';
  }
}

// BullMQ ids may not contain ':' (its key separator): both parts are percent-encoded, which also
// encodes the '|' between them, so two different pairs never share an id; a replay adds its number.
// A replay is a job of its own (the first round's may still be kept as completed or failed).
function bullJobId(job: DeliveryJob): string {
  const base = `${encodeIdPart(job.id)}|${encodeIdPart(job.subscriptionId)}`;
  const replay = Number(job.replay ?? 0);
  return replay > 0 ? `${base}|${replay}` : base;
}

const LONE_SURROGATES_KEPT = new RegExp(`(${LONE_SURROGATE.source})`);

// encodeURIComponent throws on a lone surrogate: each is written `%u` and four hex digits, which
// encodeURIComponent never writes, so different ids still never meet.
function encodeIdPart(value: string): string {
  const text = String(value);
  try {
    return encodeURIComponent(text); // every id without a lone surrogate
  } catch {
    // A lone surrogate: written as below, the rest encoded around it.
  }
  return text
    .split(LONE_SURROGATES_KEPT)
    .map((part, i) =>
      i % 2 === 1 ? `%u${part.charCodeAt(0).toString(16).toUpperCase()}` : encodeURIComponent(part),
    )
    .join('');
}
