/**
 * A delivery job: what it holds, how an attempt reads it, and whether the schedule allows one.
 * @module
 */
import type { RetrySchedule } from './retry-schedule.js';

/** One message on its way to one subscription; plain JSON, so a durable queue can hold it. */
export interface DeliveryJob {
  /** The message id (`webhook-id`), the same on every attempt. */
  readonly id: string;
  /** The subscription it goes to. */
  readonly subscriptionId: string;
  /** Where it goes. */
  readonly endpointUrl: string;
  /** The exact body. */
  readonly body: string;
  /** Attempts started so far, those lost when their process died included (0 for a new job). */
  readonly attempts: number;
  /** When the first attempt started, in ms (absent before it). */
  readonly firstAttemptAt?: number;
  /**
   * Which replay of the message to the subscription this is: absent or 0 for the publish, 1 for
   * the first replay, … A queue holds one job per message, subscription and replay.
   */
  readonly replay?: number;
  /**
   * The account the message belongs to: queues share their workers fairly between accounts by
   * it. Absent, a queue reads the envelope's `accountId`; a job that tells neither is of no
   * account (one share for all such jobs).
   */
  readonly accountCode?: string;
}

/** Why a job may not be attempted again: every attempt started (some lost in crashes), or too old. */
export function scheduleSpent(
  schedule: RetrySchedule,
  job: DeliveryJob,
  now: number,
): 'attempts_exhausted' | 'max_age' | undefined {
  if (job.attempts >= schedule.maxAttempts) return 'attempts_exhausted';
  if (job.firstAttemptAt !== undefined && now - job.firstAttemptAt > schedule.maxAgeMs) {
    return 'max_age';
  }
  return undefined;
}

/**
 * A field of a job for its report: from the copy {@link readJob} made, or, for input that is no
 * job, the input's own member as a string ('undefined' where reading it throws).
 */
export function jobField(
  job: DeliveryJob | string,
  input: DeliveryJob,
  name: 'id' | 'subscriptionId' | 'endpointUrl',
): string {
  if (typeof job !== 'string') return job[name];
  try {
    return String(input?.[name]);
  } catch {
    return 'undefined';
  }
}

/** Read once into a plain object: a getter that throws or changes cannot make an attempt reject. */
export function readJob(job: DeliveryJob): DeliveryJob | string {
  try {
    if (typeof job !== 'object' || job === null) return 'The job is not an object.';
    const { id, subscriptionId, endpointUrl, body, attempts, firstAttemptAt, replay, accountCode } =
      job;
    const copy = {
      id,
      subscriptionId,
      endpointUrl,
      body,
      attempts,
      ...(firstAttemptAt === undefined ? {} : { firstAttemptAt }),
      ...(replay === undefined || replay === 0 ? {} : { replay }),
      // Kept on the job of a retry, so that it is shared out under its account again.
      ...(typeof accountCode === 'string' ? { accountCode } : {}),
    };
    return jobProblem(copy) ?? copy;
  } catch (error) {
    return `The job cannot be read: ${error instanceof Error ? error.message : String(error)}.`;
  }
}

function jobProblem(job: DeliveryJob): string | undefined {
  if (typeof job.id !== 'string' || typeof job.subscriptionId !== 'string') {
    return 'The job needs a string id and subscriptionId.';
  }
  if (typeof job.body !== 'string') return 'The job body must be the serialised message.';
  if (!Number.isSafeInteger(job.attempts) || job.attempts < 0) {
    return 'The job attempts must be a whole number >= 0.';
  }
  if (job.replay !== undefined && !(Number.isSafeInteger(job.replay) && job.replay >= 0)) {
    return 'The job replay must be a whole number >= 0.';
  }
  if (job.firstAttemptAt !== undefined && !Number.isFinite(job.firstAttemptAt)) {
    return 'The job firstAttemptAt must be a time in ms.';
  }
  if (typeof job.endpointUrl !== 'string' || !URL.canParse(job.endpointUrl)) {
    return `The job endpointUrl ${String(job.endpointUrl)} is no absolute URL.`;
  }
  return undefined;
}
