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
import { AccountSlots, waitingRoom } from './account-slots.js';
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
  const { accountConcurrency } = read;
  // The account's workers in this process, and its jobs waiting for one.
  const room = waitingRoom(accountConcurrency, concurrency);
  const slots = new AccountSlots(accountConcurrency, room, accountDeferMs);
  const workerOptions = {
    maxStalledCount: MAX_STALLED_COUNT,
    ...definedOnly(read.workerOptions ?? {}),
  };
  const base = {
    connection: read.connection,
    ...(read.prefix === undefined ? {} : { prefix: read.prefix }),
  };
  const queue = new bullmq.Queue<StoredJob>(name, base);
  const worker =
    deliverer === undefined
      ? undefined
      : new bullmq.Worker<StoredJob>(
          name,
          async (job, token) => {
            const { data } = job;
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
              step = await deliverer.attempt(taken.job);
            } finally {
              slots.give(account);
            }
            if (step.done) return step.report.outcome;
            // The next attempt waits in Redis, not in this process: a restart loses nothing. The
            // job keeps its account, whatever the deliverer copied.
            const { accountCode } = data;
            const next = typeof accountCode === 'string' ? { ...step.job, accountCode } : step.job;
            // A clock that returns NaN must not make the retry due at once.
            const later = clock.now();
            await putBack(
              job,
              recordOf(next, job),
              Number.isFinite(later) ? Math.max(step.at, later) : step.at,
              token,
            );
            throw new bullmq.DelayedError();
          },
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
    (async () => deliverer.lost?.(reported(job), lost))().catch(() => undefined);
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
      const delay = at === undefined ? 0 : Math.max(0, Math.ceil(at - nowOf(clock)));
      await redis(() =>
        queue.add(JOB_NAME, isJobObject(data) ? { ...data, startsCounted: 0 } : data, {
          jobId,
          removeOnComplete: keep,
          removeOnFail: false,
          ...(delay > 0 ? { delay } : {}),
        }),
      );
    },
    async close() {
      closed = true;
      slots.endWaits(); // jobs waiting for their account's worker go back to Redis
      await worker?.close(); // waits for the attempts in flight
      await queue.close();
      return []; // everything pending stays in Redis for the next worker
    },
    counts: () => queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed'),
    async failed() {
      const jobs = await queue.getFailed();
      return jobs.reverse().map(reported);
    },
    async retryFailed() {
      let replayed = 0;
      for (const job of await queue.getFailed()) {
        const { firstAttemptAt: _, startsCounted: __, ...data } = job.data;
        // Reset first: dying between the calls leaves a failed job, not a spent replay. BullMQ's
        // count of takings starts again from 0 too.
        await job.updateData({ ...data, attempts: 0, startsCounted: 0 });
        try {
          await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        } catch (caught) {
          // Replayed (or removed) meanwhile by another caller: not ours to count.
          if (await job.isFailed()) throw caught;
          continue;
        }
        replayed += 1;
      }
      return replayed;
    },
  };
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
  const { startsCounted, ...stored } = data;
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
  job: Pick<BullMQ.Job<StoredJob>, 'attemptsStarted'>,
): StoredJob | undefined {
  if (!isJobObject(next) || !Number.isSafeInteger(next.attempts)) return undefined;
  const starts = job.attemptsStarted;
  const { startsCounted: _, ...rest } = next as StoredJob;
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
function reported(job: BullMQ.Job<StoredJob>): DeliveryJob {
  const { data } = job;
  if (!isJobObject(data) || !Number.isSafeInteger(data.attempts)) return data;
  const { startsCounted, ...stored } = data;
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
