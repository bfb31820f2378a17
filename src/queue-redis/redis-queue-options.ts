/**
 * The options of `createRedisDeliveryQueue`: what each one is, and the one place that reads them
 * and works out their defaults. @module
 */
import type * as BullMQ from 'bullmq';
import { aClock, type Clock, systemClock } from '../clock.js';
import { isArray } from '../internal/describe.js';
import {
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
import { defaultAccountConcurrency } from '../webhooks/delivery/job-account.js';
import type { Deliverer } from '../webhooks/delivery/step.js';

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
  /**
   * Jobs taken at a time, and requests at a time, in this process. An attempt gives its slot back
   * once its request has ended: its record is written while the next request runs (a job of its
   * own holds its worker until then).
   * @defaultValue 8
   */
  concurrency?: number;
  /**
   * Requests of one account at a time in this process (the job's `accountCode`, else its
   * envelope's `accountId`), so that the account's endpoints never hold more of this process's
   * workers. A job of an account at its share waits in the process for one of the account's
   * attempts to end (at most this many of its jobs wait, and never so many that the account holds
   * more than half of the workers), else it is put back in Redis delayed by `accountDeferMs`;
   * either way without counting an attempt. Jobs that tell no account are not held to it.
   * @defaultValue a quarter of `concurrency`, at least 1
   */
  accountConcurrency?: number;
  /**
   * How long a job of an account at its share waits in the process for one of the account's
   * workers, and, put back in Redis, before it is taken again, in ms.
   * @defaultValue 250
   */
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
  /**
   * The most deliveries one BullMQ job holds (1 to 64). Above 1, the deliveries enqueued in one
   * turn of the event loop, due now, share a job, and a marker per delivery in Redis tells which
   * job holds it: BullMQ's work per job is shared, at the cost of a few Redis script calls per
   * job. A retry or a deferral moves its delivery to a job of its own. Attempts are still counted
   * as with 1, crashes included, and a delivery the queue holds is still attempted by one job
   * (docs/delivery.md, "Several deliveries in one job"). `capacity` and `counts()` count jobs.
   * @defaultValue 8
   */
  deliveriesPerJob?: number;
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

// ioredis options (BullMQ's to check, there are many) or an ioredis instance.
const CONNECTION: Rule<BullMQ.ConnectionOptions> = {
  expected:
    'ioredis options such as { host, port, maxRetriesPerRequest: null }, or an ioredis instance',
  read: (value) =>
    typeof value === 'object' && value !== null && !isArray(value)
      ? (value as BullMQ.ConnectionOptions)
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
  connection: CONNECTION,
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
  deliveriesPerJob: wholeNumber(1, 64),
};

/**
 * The options read, with their defaults: the bullmq module and the connection checked first, and
 * each account's share of the workers worked out.
 * @throws ConfigurationError `invalid_option` for a wrong bullmq module, bound or worker option
 * @internal
 */
export function readQueueOptions(options: RedisDeliveryQueueOptions) {
  const read = readOptions(options, 'createRedisDeliveryQueue', QUEUE_RULES, {
    defaults: {
      concurrency: 8,
      capacity: Number.POSITIVE_INFINITY,
      name: 'webhook-deliveries',
      keep: 1000,
      deliveriesPerJob: 8,
      accountDeferMs: 250,
      clock: systemClock,
    },
    required: true,
    example: "{ bullmq: await import('bullmq'), connection }",
  });
  const bullmq = requiredValue(QUEUE_RULES.bullmq, read.bullmq, 'bullmq');
  const connection = requiredValue(QUEUE_RULES.connection, read.connection, 'connection');
  const accountConcurrency = read.accountConcurrency ?? defaultAccountConcurrency(read.concurrency);
  return { ...read, bullmq, connection, accountConcurrency };
}
