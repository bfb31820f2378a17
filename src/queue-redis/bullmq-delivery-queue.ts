/** The durable delivery queue on Redis, built on BullMQ (see docs/delivery.md). @module */
import type * as BullMQ from 'bullmq';
import { aClock, type Clock, systemClock } from '../clock.js';
import { DeliveryQueueError } from '../errors/delivery-queue-error.js';
import { LONE_SURROGATE } from '../internal/lone-surrogate.js';
import {
  anything,
  aString,
  INVALID,
  optionsOf,
  type Rule,
  readOptions,
  requiredValue,
  wholeNumber,
  withMethods,
} from '../internal/options.js';
import { readSafely } from '../internal/read-once.js';
import type { DeliveryJob } from '../webhooks/delivery-job.js';
import type { DeliveryQueue, EnqueueOptions } from '../webhooks/delivery-queue.js';
import type { Deliverer, DeliveryStep } from '../webhooks/delivery-step.js';
import { defaultAccountConcurrency, jobAccount } from '../webhooks/job-account.js';

/** The parts of the `bullmq` module the queue uses: pass `await import('bullmq')`. */
export type BullMQModule = Pick<typeof BullMQ, 'Queue' | 'Worker' | 'DelayedError'>;

/** How the Redis queue is set up. */
export interface RedisDeliveryQueueOptions {
  /** The `bullmq` module (an optional peer dependency: the package does not import it). */
  bullmq: BullMQModule;
  /** The Redis connection, as BullMQ takes it (ioredis options or an ioredis instance). */
  connection: BullMQ.ConnectionOptions;
  /** Makes the attempts; leave out to only enqueue (a producer without a worker). */
  deliverer?: Deliverer;
  /** The queue's name. @defaultValue `'webhook-deliveries'` */
  name?: string;
  /** BullMQ's key prefix. @defaultValue `'bull'` */
  prefix?: string;
  /** Attempts at a time in this process. @defaultValue 8 */
  concurrency?: number;
  /**
   * Attempts of one account at a time in this process (the job's `accountCode`, else its
   * envelope's `accountId`): a job of an account at its share is put back, delayed by
   * `accountDeferMs`, without an attempt, so that the account's endpoints never hold more of this
   * process's workers. Jobs that tell no account are not held to it.
   * @defaultValue a quarter of `concurrency`, at least 1
   */
  accountConcurrency?: number;
  /** How long a job of an account at its share waits before it is tried again, in ms. @defaultValue 250 */
  accountDeferMs?: number;
  /** Jobs waiting or delayed at most; beyond, `enqueue` rejects `queue_full`. @defaultValue no bound */
  capacity?: number;
  /** The clock retries are scheduled on. @defaultValue {@link systemClock} */
  clock?: Clock;
  /**
   * Passed on to BullMQ's Worker: `lockDuration` and `stalledInterval` (ms, 30 s each) set how soon
   * a dead worker's jobs run again; `maxStalledCount` (default 100) is BullMQ's backstop.
   */
  workerOptions?: Pick<
    BullMQ.WorkerOptions,
    'lockDuration' | 'stalledInterval' | 'maxStalledCount'
  >;
  /** Completed jobs kept, for inspection (failed ones are all kept). @defaultValue 1000 */
  keep?: number;
}

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
  const read = readOptions(options, 'createRedisDeliveryQueue', QUEUE_RULES, {
    defaults: {
      concurrency: 8,
      capacity: Number.POSITIVE_INFINITY,
      name: 'webhook-deliveries',
      keep: 1000,
      accountDeferMs: 250,
      clock: systemClock,
    },
    required: true,
    example: "{ bullmq: await import('bullmq'), connection }",
  });
  const bullmq = requiredValue(QUEUE_RULES.bullmq, read.bullmq, 'bullmq');
  const { concurrency, capacity, name, keep, clock, deliverer, accountDeferMs } = read;
  const accountConcurrency = read.accountConcurrency ?? defaultAccountConcurrency(concurrency);
  // Attempts in flight in this process, by account.
  const inFlight = new Map<string, number>();
  const workerOptions = {
    ...read.workerOptions,
    maxStalledCount: read.workerOptions?.maxStalledCount ?? MAX_STALLED_COUNT,
  };
  const base = {
    connection: requiredValue(QUEUE_RULES.connection, read.connection, 'connection'),
    ...(read.prefix === undefined ? {} : { prefix: read.prefix }),
  };
  const queue = new bullmq.Queue<DeliveryJob>(name, base);
  const worker =
    deliverer === undefined
      ? undefined
      : new bullmq.Worker<DeliveryJob>(
          name,
          async (job, token) => {
            const { data } = job;
            const account = jobAccount(data);
            const running = inFlight.get(account) ?? 0;
            if (account !== '' && running >= accountConcurrency) {
              // The account holds its share of the workers: back to Redis, no attempt made.
              await job.moveToDelayed(nowOf(clock) + accountDeferMs, token);
              throw new bullmq.DelayedError();
            }
            inFlight.set(account, running + 1);
            let step: DeliveryStep;
            try {
              // Recorded before the attempt: if this process dies during it, the next run counts it.
              const start = started(data, clock.now());
              if (start !== undefined) await job.updateData(start);
              step = await deliverer.attempt(data);
            } finally {
              const left = (inFlight.get(account) ?? 1) - 1;
              if (left > 0) inFlight.set(account, left);
              else inFlight.delete(account);
            }
            if (step.done) return step.report.outcome;
            // The next attempt waits in Redis, not in this process: a restart loses nothing. The
            // job keeps its account, whatever the deliverer copied.
            const { accountCode } = data;
            await job.updateData(
              typeof accountCode === 'string' ? { ...step.job, accountCode } : step.job,
            );
            // A clock that returns NaN must not make the retry due at once.
            const later = clock.now();
            await job.moveToDelayed(
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
    (async () => deliverer.lost?.(job.data, lost))().catch(() => undefined);
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
      let data: DeliveryJob;
      let jobId: string;
      try {
        // Read once, as the JSON Redis will hold: the id is derived from the data stored.
        data = JSON.parse(JSON.stringify(job)) as DeliveryJob;
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
        queue.add(JOB_NAME, data, {
          jobId,
          removeOnComplete: keep,
          removeOnFail: false,
          ...(delay > 0 ? { delay } : {}),
        }),
      );
    },
    async close() {
      closed = true;
      await worker?.close(); // waits for the attempts in flight
      await queue.close();
      return []; // everything pending stays in Redis for the next worker
    },
    counts: () => queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed'),
    async failed() {
      const jobs = await queue.getFailed();
      return jobs.reverse().map((job) => job.data);
    },
    async retryFailed() {
      let replayed = 0;
      for (const job of await queue.getFailed()) {
        const { firstAttemptAt: _, ...data } = job.data;
        // Reset first: dying between the calls leaves a failed job, not a spent replay.
        await job.updateData({ ...data, attempts: 0 });
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

// Undefined for data no attempt can be made of (the deliverer fails it as invalid_job).
function started(job: DeliveryJob, now: number): DeliveryJob | undefined {
  if (typeof job !== 'object' || job === null || !Number.isSafeInteger(job.attempts)) {
    return undefined;
  }
  const first = job.firstAttemptAt ?? (Number.isFinite(now) ? now : undefined);
  return {
    ...job,
    attempts: job.attempts + 1,
    ...(first === undefined ? {} : { firstAttemptAt: first }),
  };
}

const BULLMQ: Rule<BullMQModule> = {
  expected: "the bullmq module (await import('bullmq'))",
  read: (value) =>
    ['Queue', 'Worker', 'DelayedError'].every(
      (name) => typeof readSafely(value, name) === 'function',
    )
      ? (value as BullMQModule)
      : INVALID,
};

// Options BullMQ would throw on or take silently, refused up front.
const WORKER_RULES = {
  lockDuration: wholeNumber(1),
  stalledInterval: wholeNumber(1),
  maxStalledCount: wholeNumber(0),
};

const QUEUE_RULES = {
  bullmq: BULLMQ,
  connection: anything('BullMQ connection options') as Rule<BullMQ.ConnectionOptions>,
  deliverer: withMethods<Deliverer>(['attempt'], 'a Deliverer from createDeliverer()'),
  name: aString(),
  prefix: aString(),
  concurrency: wholeNumber(),
  accountConcurrency: wholeNumber(),
  accountDeferMs: wholeNumber(1, 60_000),
  capacity: {
    expected: 'a whole number from 1, or Infinity for no bound',
    read: (value: unknown) =>
      value === Number.POSITIVE_INFINITY || (Number.isSafeInteger(value) && (value as number) >= 1)
        ? (value as number)
        : INVALID,
  },
  clock: aClock,
  workerOptions: optionsOf(WORKER_RULES, '{ lockDuration: 30_000 }'),
  keep: wholeNumber(0),
};

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
  return String(value)
    .split(LONE_SURROGATES_KEPT)
    .map((part, i) =>
      i % 2 === 1 ? `%u${part.charCodeAt(0).toString(16).toUpperCase()}` : encodeURIComponent(part),
    )
    .join('');
}
