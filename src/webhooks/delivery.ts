/**
 * Delivery of a signed message to one subscription: one attempt at a time through an injectable
 * transport, 2xx is success, 410 disables the subscription, anything else is retried on the
 * schedule (a 429 or 503 `Retry-After` honoured), and every attempt and outcome is reported.
 * @module
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { ConfigurationError, isApiConventionsError } from '../errors/index.js';
import { parseRetryAfter } from '../http/retry-after.js';
import { MAX_TIMER_MS } from '../internal/timers.js';
import type { TransportResponse, WebhookTransport } from './http-transport.js';
import { httpTransport } from './http-transport.js';
import type { RetrySchedule } from './retry-schedule.js';
import { nextAttempt, retrySchedule } from './retry-schedule.js';
import type { WebhookHeaders } from './signature.js';
import { signWebhook } from './signature.js';

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
}

/**
 * How an attempt ended. `lost`: the queue gave up on the job without an attempt finishing (a
 * BullMQ queue fails a job whose worker died during it more often than its `maxStalledCount`); the
 * job is kept for replay by the queue, not delivered.
 */
export type AttemptOutcome = 'delivered' | 'retry' | 'disabled' | 'failed' | 'lost';

/** Why a delivery was given up. */
export type DeliveryFailure =
  | 'attempts_exhausted'
  | 'max_age'
  | 'forbidden_address'
  | 'no_secret'
  | 'invalid_job'
  | 'gone';

/** One attempt, as reported to `onAttempt`: log it, or store it as the delivery log. */
export interface DeliveryAttempt {
  /** The message id (`webhook-id`). */
  readonly id: string;
  /** The subscription. */
  readonly subscriptionId: string;
  /** The endpoint. */
  readonly endpointUrl: string;
  /** Which attempt this was, from 1. */
  readonly attempt: number;
  /** When it started, in ms. */
  readonly at: number;
  /** The receiver's status, when it answered. */
  readonly status?: number;
  /** Why no answer came (`timeout`, `connection_failed`, `forbidden_address`, ...). */
  readonly error?: {
    /** Stable code. */
    readonly code: string;
    /** What happened. */
    readonly message: string;
  };
  /** What follows. */
  readonly outcome: AttemptOutcome;
  /** For `retry`: when the next attempt is due, in ms. */
  readonly nextAttemptAt?: number;
  /** For `failed` and `disabled`: why (`invalid_job` for an id or secret signing refuses). */
  readonly reason?: DeliveryFailure;
}

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
    };

/** How deliveries are made. */
export interface DeliveryOptions {
  /**
   * The secrets of a subscription, read at each attempt (so rotation applies at once); none, or
   * undefined or null for a subscription that no longer exists, ends the job (`no_secret`).
   */
  secrets: (
    subscriptionId: string,
  ) => readonly string[] | undefined | Promise<readonly string[] | undefined>;
  /** Sends the POST. @defaultValue {@link httpTransport}() with the SSRF guard and no allow-list */
  transport?: WebhookTransport;
  /** The timeout of one attempt, in ms, at most 2^31 - 1 (what timers hold). @defaultValue 15000 */
  timeoutMs?: number;
  /** The retry schedule. @defaultValue {@link retrySchedule}() */
  schedule?: RetrySchedule;
  /** @defaultValue {@link systemClock} */
  clock?: Clock;
  /** Uniform draws in [0, 1) for the jitter (one that throws draws 0). @defaultValue `Math.random` */
  random?: () => number;
  /** Told of every attempt and its outcome. Errors it throws are ignored. */
  onAttempt?: (attempt: DeliveryAttempt) => void | Promise<void>;
  /** Told when a receiver answers 410 Gone: disable the subscription here. */
  onGone?: (subscriptionId: string) => void | Promise<void>;
  /** Extra request headers (a user agent): valid HTTP header names and string values. */
  headers?: Readonly<Record<string, string>>;
}

/** Runs attempts. */
export interface Deliverer {
  /**
   * Make the next attempt of a job. Never rejects: every failure is a step.
   * @param job - the job
   * @returns done, or the job to run again and when
   */
  attempt(job: DeliveryJob): Promise<DeliveryStep>;
  /**
   * Report a job the queue gave up on (outcome `lost`), so that `onAttempt` is told of it like of
   * any attempt. Queues call it when they have it. Never rejects.
   * @param job - the job as the queue holds it (`attempts`: those started, lost ones included)
   * @param error - why the queue gave up
   * @returns the report
   */
  lost?(job: DeliveryJob, error: { code: string; message: string }): Promise<DeliveryAttempt>;
}

/**
 * Make a deliverer.
 * @param options - secrets, transport, timeout, schedule, clock, random source, callbacks
 * @returns the deliverer that queues call
 * @throws ConfigurationError `invalid_option` for a missing secrets function, a bad timeout or
 * extra headers that HTTP cannot carry
 * @example
 * ```ts
 * const deliverer = createDeliverer({
 *   secrets: (id) => secretsById.get(id),
 *   onAttempt: (a) => log.info(a),
 *   onGone: (id) => disable(id),
 * });
 * ```
 */
export function createDeliverer(options: DeliveryOptions): Deliverer {
  if (typeof options?.secrets !== 'function') {
    throw new ConfigurationError(
      'invalid_option',
      'createDeliverer needs secrets: (subscriptionId) => the secrets to sign with.',
    );
  }
  const timeoutMs = options.timeoutMs ?? 15_000;
  // Timers fire at once beyond 2^31 - 1 ms: a longer timeout would time every attempt out.
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMER_MS) {
    throw new ConfigurationError(
      'invalid_option',
      `timeoutMs must be a whole number of ms from 1 to ${MAX_TIMER_MS}, got ${String(timeoutMs)}.`,
    );
  }
  checkHeaders(options.headers);
  const transport = options.transport ?? httpTransport();
  const schedule = options.schedule ?? retrySchedule();
  const clock = options.clock ?? systemClock;
  const draw = options.random ?? Math.random;
  const random = (): number => {
    try {
      return draw();
    } catch {
      return 0; // the full backoff: never sooner than the schedule allows
    }
  };

  const report = async (attempt: DeliveryAttempt): Promise<DeliveryAttempt> => {
    try {
      await options.onAttempt?.(attempt);
    } catch {
      // A failing logger must not change what happens to the delivery.
    }
    return attempt;
  };

  return {
    async lost(input, error) {
      const at = clock.now();
      const job = readJob(input);
      return report({
        id: jobField(job, input, 'id'),
        subscriptionId: jobField(job, input, 'subscriptionId'),
        endpointUrl: jobField(job, input, 'endpointUrl'),
        attempt: typeof job === 'string' ? 0 : job.attempts,
        at,
        error: { code: String(error?.code), message: String(error?.message) },
        outcome: 'lost',
      });
    },
    async attempt(input) {
      const at = clock.now();
      // Read once: a getter that throws or changes between reads cannot make the attempt reject.
      const job = readJob(input);
      const attempt = typeof job === 'string' ? 1 : job.attempts + 1;
      const firstAttemptAt = (typeof job === 'string' ? undefined : job.firstAttemptAt) ?? at;
      const base = {
        id: jobField(job, input, 'id'),
        subscriptionId: jobField(job, input, 'subscriptionId'),
        endpointUrl: jobField(job, input, 'endpointUrl'),
        attempt,
        at,
      };
      const done = async (fields: Partial<DeliveryAttempt> & { outcome: AttemptOutcome }) => ({
        done: true as const,
        report: await report({ ...base, ...fields }),
      });
      if (typeof job === 'string') {
        // A job no attempt can deliver (a queue holding something else): fail it once, no retry.
        return done({
          error: { code: 'invalid_job', message: job },
          outcome: 'failed',
          reason: 'invalid_job',
        });
      }
      // Attempts lost in crashes are counted by the queue: the schedule bounds them too.
      const spent = scheduleSpent(schedule, job, at);
      if (spent !== undefined) {
        return done({
          attempt: job.attempts,
          error: {
            code: 'not_attempted',
            message: `${job.attempts} attempts were started, the last ones lost when their process died; the schedule allows no more (${spent}).`,
          },
          outcome: 'failed',
          reason: spent,
        });
      }
      let secrets: readonly string[] | undefined;
      try {
        secrets = await options.secrets(job.subscriptionId);
      } catch {
        secrets = undefined;
      }
      if (secrets === undefined || secrets === null || secrets.length === 0) {
        return done({ outcome: 'failed', reason: 'no_secret' });
      }
      let headers: WebhookHeaders;
      try {
        headers = signWebhook(
          { id: job.id, timestamp: Math.floor(at / 1000), body: job.body },
          secrets,
        );
      } catch (caught) {
        // A malformed id or secret fails every attempt alike: no retry.
        const error = isApiConventionsError(caught)
          ? { code: caught.code, message: caught.message }
          : { code: 'invalid_job', message: String(caught) };
        return done({ error, outcome: 'failed', reason: 'invalid_job' });
      }
      let response: TransportResponse | undefined;
      let error: { code: string; message: string } | undefined;
      try {
        response = await transport({
          url: job.endpointUrl,
          headers: {
            'user-agent': 'api-conventions-webhooks',
            ...options.headers,
            'content-type': 'application/json',
            ...headers,
          },
          body: job.body,
          timeoutMs,
        });
      } catch (caught) {
        error = isApiConventionsError(caught)
          ? { code: caught.code, message: caught.message }
          : {
              code: 'connection_failed',
              message: caught instanceof Error ? caught.message : String(caught),
            };
      }
      if (error?.code === 'forbidden_address') {
        return done({ error, outcome: 'failed', reason: 'forbidden_address' });
      }
      const status = response?.status;
      const answered = status === undefined ? { error: error! } : { status };
      if (status !== undefined && status >= 200 && status <= 299) {
        return done({ ...answered, outcome: 'delivered' });
      }
      if (status === 410) {
        try {
          await options.onGone?.(job.subscriptionId);
        } catch {
          // Reported as disabled all the same: the receiver said it wants no more.
        }
        return done({ ...answered, outcome: 'disabled', reason: 'gone' });
      }
      const retryAfterMs =
        status === 429 || status === 503
          ? parseRetryAfter(response?.headers['retry-after'], at)
          : undefined;
      const decision = nextAttempt(schedule, {
        attempts: attempt,
        firstAttemptAt,
        now: at,
        retryAfterMs,
        random: random(),
      });
      if (!decision.retry) return done({ ...answered, outcome: 'failed', reason: decision.reason });
      return {
        done: false,
        job: { ...job, attempts: attempt, firstAttemptAt },
        at: decision.at,
        report: await report({
          ...base,
          ...answered,
          outcome: 'retry',
          nextAttemptAt: decision.at,
        }),
      };
    },
  };
}

// Why a job may not be attempted again, before any attempt: every attempt of the schedule was
// started (some lost in crashes), or the first one started longer ago than the schedule allows.
function scheduleSpent(
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

// Extra headers node would refuse at every attempt (CR/LF, bad names): refused once, up front.
function checkHeaders(headers: unknown): void {
  if (headers === undefined) return;
  try {
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
      throw new TypeError('not an object of header names to values');
    }
    for (const [name, value] of Object.entries(headers)) {
      validateHeaderName(name);
      if (typeof value !== 'string') throw new TypeError(`the value of ${name} is not a string`);
      validateHeaderValue(name, value);
    }
  } catch (error) {
    throw new ConfigurationError(
      'invalid_option',
      `createDeliverer headers must map HTTP header names to string values without control characters (CR, LF, NUL): ${error instanceof Error ? error.message : String(error)}.`,
      { cause: error },
    );
  }
}

// The job's fields, read once into a plain object, or what is wrong with it.
/**
 * A field of a job for its report: from the copy `readJob` made, or, for input that is no job,
 * the input's own member as a string ('undefined' where reading it throws).
 */
function jobField(
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

function readJob(job: DeliveryJob): DeliveryJob | string {
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

// What is wrong with a job, or undefined when an attempt can be made.
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

/**
 * A new job for a message and a subscription.
 * @param message - the message id and body
 * @param subscription - the subscription's id and endpoint
 * @returns the job, with no attempt made
 */
export function deliveryJob(
  message: { readonly id: string; readonly body: string },
  subscription: { readonly id: string; readonly endpointUrl: string },
): DeliveryJob {
  return {
    id: message.id,
    subscriptionId: subscription.id,
    endpointUrl: subscription.endpointUrl,
    body: message.body,
    attempts: 0,
  };
}

/**
 * Deliver one job to the end: attempt, wait as the schedule says, attempt again, until it is
 * delivered, disabled or given up. For a service, prefer a queue; this is the loop without one.
 * @param deliverer - makes the attempts
 * @param job - the job
 * @param sleep - waits a number of ms (inject one that advances a fake clock in tests)
 * @param clock - the clock the waits are computed from
 * @returns the report of the last attempt
 */
export async function deliver(
  deliverer: Deliverer,
  job: DeliveryJob,
  sleep: (ms: number) => Promise<void>,
  clock: Clock = systemClock,
): Promise<DeliveryAttempt> {
  let step = await deliverer.attempt(job);
  while (!step.done) {
    await sleep(Math.max(0, step.at - clock.now()));
    step = await deliverer.attempt(step.job);
  }
  return step.report;
}
