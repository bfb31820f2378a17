/**
 * A delivery job as an attempt reads it: its fields read once into a plain copy, or what is wrong
 * with it, and whether the schedule still allows an attempt.
 * @module
 */
import type { DeliveryJob } from './delivery.js';
import type { RetrySchedule } from './retry-schedule.js';

/**
 * Why a job may not be attempted again, before any attempt: every attempt of the schedule was
 * started (some lost in crashes), or the first one started longer ago than the schedule allows.
 * @param schedule - the retry schedule
 * @param job - the job as read
 * @param now - the time of the attempt, in ms
 */
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
 * @param job - the job as read, or what is wrong with it
 * @param input - the job as given
 * @param name - the field
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

/**
 * The job's fields read once into a plain object, or what is wrong with it: a getter that throws
 * or changes between reads cannot make an attempt reject.
 * @param job - the job as given
 */
export function readJob(job: DeliveryJob): DeliveryJob | string {
  try {
    if (typeof job !== 'object' || job === null) return 'The job is not an object.';
    const { id, subscriptionId, endpointUrl, body, attempts, firstAttemptAt } = job;
    const copy = {
      id,
      subscriptionId,
      endpointUrl,
      body,
      attempts,
      ...(firstAttemptAt === undefined ? {} : { firstAttemptAt }),
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
  if (job.firstAttemptAt !== undefined && !Number.isFinite(job.firstAttemptAt)) {
    return 'The job firstAttemptAt must be a time in ms.';
  }
  if (typeof job.endpointUrl !== 'string' || !URL.canParse(job.endpointUrl)) {
    return `The job endpointUrl ${String(job.endpointUrl)} is no absolute URL.`;
  }
  return undefined;
}
