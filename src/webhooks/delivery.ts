/** Delivery of a signed message to one subscription (see docs/delivery.md). @module */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { aClock, type Clock, systemClock } from '../clock.js';
import { ConfigurationError } from '../errors/index.js';
import type { SecretCipherError } from '../errors/secret-cipher-error.js';
import { isArray } from '../internal/describe.js';
import {
  aFunction,
  anything,
  INVALID,
  type Rule,
  readOptions,
  requiredValue,
  wholeNumber,
} from '../internal/options.js';
import { MAX_TIMER_MS } from '../internal/timers.js';
import { WebhookDeliverer } from './deliverer.js';
import type { WebhookTransport } from './http-transport.js';
import { httpTransport } from './http-transport.js';
import type { RetrySchedule } from './retry-schedule.js';
import { retrySchedule } from './retry-schedule.js';

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

/**
 * How an attempt ended. `lost`: the queue gave up on the job without an attempt finishing (a
 * BullMQ queue fails a job whose worker died during it more often than its `maxStalledCount`); the
 * job is kept for replay by the queue, not delivered.
 */
export type AttemptOutcome = 'delivered' | 'retry' | 'disabled' | 'failed' | 'lost';

/**
 * Why a delivery was given up. `no_secret`: the subscription has no secret (deleted, disabled,
 * unknown); `secret_unreadable`: it has secrets, but none can be decrypted with the configured
 * keys (the repository's `secretKeys` are not those the secrets were stored with), so nothing is
 * sent; the delivery can be replayed once the keys are right or the secret is rotated.
 */
export type DeliveryFailure =
  | 'attempts_exhausted'
  | 'max_age'
  | 'forbidden_address'
  | 'no_secret'
  | 'secret_unreadable'
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
  /** Which attempt this was, from 1 (counted afresh in each replay). */
  readonly attempt: number;
  /** The replay the attempt belongs to: absent for the publish's attempts, from 1 for replays. */
  readonly replay?: number;
  /** When it started, in ms. */
  readonly at: number;
  /**
   * How long the request took, in ms, from sending it to its answer or failure (0 on a clock that
   * did not move); absent when no request was sent.
   */
  readonly durationMs?: number;
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
    }
  | {
      /**
       * Not attempted: the subscription's receiver asked every delivery to wait (a 429 or 503
       * with Retry-After to another one); the job runs again at `at`, its attempts unchanged.
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

/** How deliveries are made. */
export interface DeliveryOptions {
  /**
   * Read at each attempt, so rotation applies at once; none ends the job (`no_secret`), and so
   * does a throw, except a {@link SecretCipherError} (secrets there but unreadable), which ends it
   * `secret_unreadable`.
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
  /** Make the next attempt of a job. Never rejects: every failure is a step. */
  attempt(job: DeliveryJob): Promise<DeliveryStep>;
  /**
   * Report a job the queue gave up on (outcome `lost`) to `onAttempt`. Never rejects.
   * @param job - as the queue holds it (`attempts`: those started, lost ones included)
   */
  lost?(job: DeliveryJob, error: { code: string; message: string }): Promise<DeliveryAttempt>;
}

/**
 * Make a deliverer.
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
  const read = readOptions(options, 'createDeliverer', DELIVERY_RULES, {
    defaults: {
      timeoutMs: 15_000,
      schedule: retrySchedule(),
      clock: systemClock,
      random: Math.random,
    },
    required: true,
    example: '{ secrets: (subscriptionId) => [secret] }',
  });
  const secrets = requiredValue(DELIVERY_RULES.secrets, read.secrets, 'secrets');
  // Made only when none is given: the default transport holds keep-alive agents of its own.
  const transport = read.transport ?? httpTransport();
  return new WebhookDeliverer({ ...read, secrets, transport });
}

// Extra headers node would refuse at every attempt (CR/LF, bad names): refused once, up front.
const HEADERS: Rule<Readonly<Record<string, string>>> = {
  expected: 'HTTP header names mapped to string values without control characters (CR, LF, NUL)',
  read(value, name) {
    if (typeof value !== 'object' || value === null || isArray(value)) return INVALID;
    const headers: Record<string, string> = Object.create(null);
    try {
      for (const [header, text] of Object.entries(value)) {
        validateHeaderName(header);
        if (typeof text !== 'string') throw new TypeError(`the value of ${header} is not a string`);
        validateHeaderValue(header, text);
        headers[header] = text;
      }
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new ConfigurationError(
        'invalid_option',
        `${name} must be ${HEADERS.expected}, got an object in which ${why}.`,
        { cause: error },
      );
    }
    return headers;
  },
};

const DELIVERY_RULES = {
  secrets: aFunction<DeliveryOptions['secrets']>(
    'gives the secrets to sign with: (subscriptionId) => string[]',
  ),
  transport: aFunction<WebhookTransport>('sends a request (see httpTransport)'),
  // Timers fire at once beyond 2^31 - 1 ms: a longer timeout would time every attempt out.
  timeoutMs: wholeNumber(1, MAX_TIMER_MS),
  schedule: anything('a RetrySchedule from retrySchedule()') as Rule<RetrySchedule>,
  clock: aClock,
  random: aFunction<() => number>('draws a number in [0, 1)'),
  onAttempt: aFunction<NonNullable<DeliveryOptions['onAttempt']>>('takes a DeliveryAttempt'),
  onGone: aFunction<NonNullable<DeliveryOptions['onGone']>>('takes a subscription id'),
  headers: HEADERS,
};

/** A new job for a message and a subscription, with no attempt made. */
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
 * @param sleep - waits a number of ms (inject one that advances a fake clock in tests)
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
