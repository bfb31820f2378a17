/** The durable delivery queue on Redis, built on BullMQ (see docs/delivery.md). @module */
import type * as BullMQ from 'bullmq';
import type { Clock } from '../clock.js';
import { DeliveryQueueError } from '../errors/delivery-queue-error.js';
import type { DeliveryJob } from '../webhooks/delivery/job.js';
import { jobAccount } from '../webhooks/delivery/job-account.js';
import type { DeliveryQueue, EnqueueOptions } from '../webhooks/delivery/queue.js';
import type { DeliveryStep } from '../webhooks/delivery/step.js';
import { AccountSlots, AttemptSlots, givingBack, waitingRoom } from './account-slots.js';
import {
  HeldDeliveries,
  holdingJob,
  isFinished,
  parentOf,
  redisClientOf,
} from './held-deliveries.js';
import { jsonForm } from './json-form.js';
import { type RedisDeliveryQueueOptions, readQueueOptions } from './redis-queue-options.js';
import {
  BUNDLE_ID_PREFIX,
  BUNDLE_NAME,
  type BundleData,
  deliveriesOf,
  markerOf,
  markersOf,
  OWN_ID_PREFIX,
  randomId,
  sharedJobWork,
  storedOf,
  Turns,
} from './shared-jobs.js';
import {
  bullJobId,
  isJobObject,
  ownAccount,
  recordOf,
  reported,
  STALLED_TOO_OFTEN,
  type StoredJob,
  takenJob,
  withoutCount,
} from './stored-job.js';

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
    try {
      // A job stored without `startsCounted` is counted as it was: written before the attempt.
      if (taken.before !== undefined) await job.updateData(taken.before);
    } catch (error) {
      slots.give(account);
      throw error;
    }
    await attempts.taken();
    const giveBack = givingBack(slots, account, attempts);
    let step: DeliveryStep;
    try {
      step = await deliverer!.attempt(taken.job, { requestEnded: giveBack });
    } finally {
      giveBack();
    }
    if (step.done) {
      if (marker !== undefined) await held.release([marker], jobId).catch(() => undefined);
      return step.report.outcome;
    }
    // The next attempt waits in Redis, not in this process: a restart loses nothing.
    await putBack(job, recordOf(ownAccount(step.job, data), job), retryTime(step.at), token);
    throw new bullmq.DelayedError();
  };

  // A clock that returns NaN must not make the retry due at once.
  const retryTime = (at: number) => {
    const later = clock.now();
    return Number.isFinite(later) ? Math.max(at, later) : at;
  };

  /** The deliveries a failed job holds, as they were when BullMQ gave up on it. */
  const heldBy = async (job: BullMQ.Job<QueuedData>): Promise<DeliveryJob[]> => {
    if (job.name !== BUNDLE_NAME) return [reported(job as BullMQ.Job<StoredJob>)];
    return (await shared.holds(job)).map((item) =>
      reported({
        data: storedOf(item),
        attemptsStarted: job.attemptsStarted,
        failedReason: job.failedReason,
      }),
    );
  };

  const shared = sharedJobWork({
    queue,
    held,
    slots,
    attempts,
    deliverer,
    clock,
    accountDeferMs,
    addOwn,
    retryTime,
    now: () => nowOf(clock),
  });

  const worker =
    deliverer === undefined
      ? undefined
      : new bullmq.Worker<QueuedData>(
          name,
          (job, token) =>
            job.name === BUNDLE_NAME
              ? shared.work(job as BullMQ.Job<BundleData>)
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
  worker?.on('completed', (job) => {
    if (job.name === BUNDLE_NAME) shared.completed(job).catch(() => undefined);
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
        const holds = job.name === BUNDLE_NAME ? await shared.holds(job) : undefined;
        // Reset first: dying between the calls leaves a failed job, not a spent replay. BullMQ's
        // count of takings starts again from 0 too, and so do the waits its markers count.
        await (job as BullMQ.Job<QueuedData>).updateData(replayedData(job));
        await held.replace(markersOf(holds ?? []), String(job.id), String(job.id));
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

/** What a taking of a job of its own returns when another job holds its delivery. */
const HELD_ELSEWHERE = 'held_elsewhere';

/** What a BullMQ job of the queue holds. */
type QueuedData = StoredJob | BundleData;

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
