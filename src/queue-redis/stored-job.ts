/**
 * A delivery job as the Redis queue stores it in BullMQ: its id, the count of takings its
 * attempts account for, and how a taking reads it (docs/delivery.md, "On Redis").
 * @module
 */
import type * as BullMQ from 'bullmq';
import { isArray } from '../internal/describe.js';
import { LONE_SURROGATE } from '../internal/lone-surrogate.js';
import type { DeliveryJob } from '../webhooks/delivery/job.js';

// BullMQ's failedReason for a job that stalled more than maxStalledCount times.
export const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

/**
 * A job as the queue stores it: the deliverer's job and the count of takings its attempts account
 * for. BullMQ counts each time a worker takes a job (`attemptsStarted`: a stalled job taken again
 * and a job back from the delayed set included); the takings after `startsCounted` that no write
 * recorded were attempts lost with their process, so no write is needed before an attempt.
 */
export type StoredJob = DeliveryJob & {
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
export function takenJob(job: TakenBullJob, now: number): Taken {
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
export function recordOf(
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
 * A job as BullMQ holds it, for a report or a view: its attempts those started, lost ones
 * included (the taking that failed a job for stalling too often attempted nothing).
 */
export function reported(
  job: Pick<BullMQ.Job<StoredJob>, 'data' | 'attemptsStarted' | 'failedReason'>,
): DeliveryJob {
  const { data } = job;
  if (!isJobObject(data) || !Number.isSafeInteger(data.attempts)) return data;
  const { startsCounted, marked: _, ...stored } = data;
  const starts = job.attemptsStarted - (job.failedReason === STALLED_TOO_OFTEN ? 1 : 0);
  if (!(Number.isSafeInteger(startsCounted) && Number.isSafeInteger(starts))) return stored;
  return { ...stored, attempts: stored.attempts + Math.max(0, starts - startsCounted!) };
}

export function isJobObject(value: unknown): value is StoredJob {
  return typeof value === 'object' && value !== null && !isArray(value);
}

/** A job without what the queue adds to it: its count of takings, and its marker's flag. */
export function withoutCount(job: DeliveryJob): DeliveryJob {
  if (!isJobObject(job)) return job;
  const { startsCounted: _, marked: __, ...rest } = job;
  return rest;
}

/** The job to put back: it keeps its account, whatever the deliverer copied. */
export function ownAccount(next: DeliveryJob, data: DeliveryJob): DeliveryJob {
  const accountCode = isJobObject(data) ? data.accountCode : undefined;
  return typeof accountCode === 'string' ? { ...next, accountCode } : next;
}

// BullMQ ids may not contain ':' (its key separator): both parts are percent-encoded, which also
// encodes the '|' between them, so two different pairs never share an id; a replay adds its number.
// A replay is a job of its own (the first round's may still be kept as completed or failed).
export function bullJobId(job: DeliveryJob): string {
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
