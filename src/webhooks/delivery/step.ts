/**
 * What a queue asks of a deliverer, {@link Deliverer}, and the {@link DeliveryStep} it answers
 * with: what to do with the job after an attempt.
 * @module
 */
import type { DeliveryAttempt } from './attempt.js';
import type { DeliveryJob } from './job.js';

/** What a queue does with a job after an attempt. */
export type DeliveryStep =
  | {
      /** Delivered, disabled (410) or failed for good: nothing more to do. */
      readonly done: true;
      /** The report of the last attempt. */
      readonly report: DeliveryAttempt;
    }
  | {
      /** Try again later. */
      readonly done: false;
      /** The job with its attempts counted, to run again at `at`. */
      readonly job: DeliveryJob;
      /** When, in ms. */
      readonly at: number;
      /** The report of the attempt. */
      readonly report: DeliveryAttempt;
    }
  | {
      /**
       * Not attempted: the subscription's receiver asked every delivery to wait (a 429, 502, 503
       * or 504 to another one); the job runs again at `at`, its attempts unchanged.
       */
      readonly done: false;
      /** The job as it was. */
      readonly job: DeliveryJob;
      /** When, in ms. */
      readonly at: number;
      /** No attempt, no report. */
      readonly report?: undefined;
      /** Marks the deferral. */
      readonly deferred: true;
    };

/** What a queue may give an attempt besides its job. */
export interface AttemptOptions {
  /**
   * Called once, as soon as the attempt's request to the endpoint has ended (answered, refused,
   * timed out), before the attempt's record is written and before its step is answered; not
   * called for a step made without a request (a deferral, a job that cannot be signed). A queue
   * gives back the attempt's slot here, so that its next request runs while the record is
   * written; a deliverer of one's own that never calls it keeps the slot until the attempt ends.
   * What it throws is ignored.
   */
  readonly requestEnded?: () => void;
}

/** Runs attempts. */
export interface Deliverer {
  /**
   * Make the next attempt of a job. Never rejects: every failure is a step.
   * @param options - what the queue asks to be told during the attempt
   */
  attempt(job: DeliveryJob, options?: AttemptOptions): Promise<DeliveryStep>;
  /**
   * Report a job the queue gave up on (outcome `lost`) to `onAttempt`. Never rejects.
   * @param job - as the queue holds it (`attempts`: those started, lost ones included)
   */
  lost?(job: DeliveryJob, error: { code: string; message: string }): Promise<DeliveryAttempt>;
}
