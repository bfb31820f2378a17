/**
 * The attempts of a deliverer: sign, send, decide from the answer what follows, report; the steps
 * its owner takes are its hooks.
 * @module
 */
import type { Clock } from '../../clock.js';
import { isApiConventionsError } from '../../errors/index.js';
import { isSecretCipherError } from '../../errors/secret-cipher-error.js';
import type { WebhookHeaders } from '../signing/signature.js';
import { signWebhookAsync } from '../signing/signature.js';
import type { AttemptOutcome, DeliveryAttempt } from './attempt.js';
import { reportAttempt } from './channels.js';
import { requestedPause } from './endpoint-pause.js';
import type { DeliveryHooks } from './hooks.js';
import type { TransportResponse, WebhookTransport } from './http-transport.js';
import type { DeliveryJob } from './job.js';
import { jobField, readJob, scheduleSpent } from './job.js';
import type { RetrySchedule } from './retry-schedule.js';
import { nextAttempt } from './retry-schedule.js';
import type { AttemptOptions, Deliverer, DeliveryStep } from './step.js';

/** How a deliverer sends, read and checked once. @internal */
export interface DelivererSettings {
  readonly transport: WebhookTransport;
  readonly timeoutMs: number;
  readonly schedule: RetrySchedule;
  /** The longest wait a receiver's Retry-After may ask for, in ms. */
  readonly maxEndpointPauseMs: number;
  readonly clock: Clock;
  readonly random: () => number;
  readonly headers: Readonly<Record<string, string>> | undefined;
}

/** The fields every report of an attempt carries; the ending adds the outcome. */
type Base = Omit<DeliveryAttempt, 'outcome'>;

/** What an attempt adds to the report's base. */
type Ending = Partial<DeliveryAttempt> & { readonly outcome: AttemptOutcome };

/** Why no answer came. */
interface Failure {
  readonly code: string;
  readonly message: string;
}

/** The receiver's answer, or why there was none. */
type Answer = (
  | { readonly response: TransportResponse; readonly error?: undefined }
  | { readonly response?: undefined; readonly error: Failure }
) & { readonly durationMs: number };

/** The status or the failure of an attempt that was sent, and how long it took. */
type Answered =
  | { readonly durationMs: number; readonly status: number }
  | { readonly durationMs: number; readonly error: Failure };

/**
 * Runs the attempts of jobs; never rejects. What its owner does (secrets, a 410, the record of an
 * attempt, subscriptions that wait) it asks of its hooks.
 * @internal
 */
export class WebhookDeliverer implements Deliverer {
  readonly #settings: DelivererSettings;
  readonly #hooks: DeliveryHooks;
  // The headers every request starts with, the configured ones over the user agent: made once.
  readonly #baseHeaders: Readonly<Record<string, string>>;

  constructor(settings: DelivererSettings, hooks: DeliveryHooks) {
    this.#settings = settings;
    this.#hooks = hooks;
    this.#baseHeaders = { 'user-agent': 'api-conventions-webhooks', ...settings.headers };
  }

  async lost(
    input: DeliveryJob,
    error: { code: string; message: string },
  ): Promise<DeliveryAttempt> {
    const at = this.#settings.clock.now();
    const job = readJob(input);
    return this.#report(input, {
      ...reportBase(job, input, at),
      attempt: typeof job === 'string' ? 0 : job.attempts,
      error: { code: String(error?.code), message: String(error?.message) },
      outcome: 'lost',
    });
  }

  async attempt(input: DeliveryJob, options?: AttemptOptions): Promise<DeliveryStep> {
    const at = this.#settings.clock.now();
    const job = readJob(input);
    if (typeof job === 'string') {
      // A job no attempt can deliver (a queue holding something else): fail it once, no retry.
      const error = { code: 'invalid_job', message: job };
      const base = reportBase(job, input, at);
      return this.#done(input, base, { error, outcome: 'failed', reason: 'invalid_job' });
    }
    // Attempts lost in crashes are counted by the queue: the schedule bounds them too. Before the
    // wait: a job that ends here takes no turn of its subscription's rate.
    const spent = scheduleSpent(this.#settings.schedule, job, at);
    if (spent !== undefined) {
      return this.#done(input, reportBase(job, input, at), notAttempted(job, spent));
    }
    let until = this.#waitUntil(job.subscriptionId, at);
    // An answer that takes a round trip: the attempt is still reported at `at`, the time it was
    // let go at (a rate counts it then).
    if (until !== undefined && typeof until !== 'number') until = await settled(until);
    if (until !== undefined) return { done: false, job: input, at: until, deferred: true };
    const base = reportBase(job, input, at);
    const signed = await this.#sign(job, at);
    if ('outcome' in signed) return this.#done(input, base, signed);
    const own = this.#subscriptionHeaders(job.subscriptionId);
    const answer = await this.#send(job, signed, own);
    try {
      options?.requestEnded?.();
    } catch {
      // The queue's business: the attempt goes on to its record whatever it threw.
    }
    return this.#follow(job, input, base, answer);
  }

  /** Until when the job waits: its receiver asked to, or its subscription's rate is spent. */
  #waitUntil(
    subscriptionId: string,
    now: number,
  ): number | undefined | Promise<number | undefined> {
    try {
      return this.#hooks.waitUntil?.(subscriptionId, now);
    } catch {
      return undefined; // a hook that fails holds nothing back
    }
  }

  /** The signature headers, or the ending of a job that cannot be signed. */
  async #sign(job: DeliveryJob, at: number): Promise<WebhookHeaders | Ending> {
    let secrets: readonly string[] | undefined;
    try {
      secrets = await this.#hooks.secrets(job.subscriptionId);
    } catch (caught) {
      // Secrets that exist but that no configured key decrypts: said so, not as none at all.
      if (isSecretCipherError(caught)) {
        const error = { code: caught.code, message: caught.message };
        return { error, outcome: 'failed', reason: 'secret_unreadable' };
      }
      secrets = undefined;
    }
    if (secrets === undefined || secrets === null || secrets.length === 0) {
      return { outcome: 'failed', reason: 'no_secret' };
    }
    try {
      const input = { id: job.id, timestamp: Math.floor(at / 1000), body: job.body };
      return await signWebhookAsync(input, secrets);
    } catch (caught) {
      // A malformed id or secret fails every attempt alike: no retry.
      const error = isApiConventionsError(caught)
        ? { code: caught.code, message: caught.message }
        : { code: 'invalid_job', message: String(caught) };
      return { error, outcome: 'failed', reason: 'invalid_job' };
    }
  }

  /** The subscription's own headers, when it has some. */
  #subscriptionHeaders(subscriptionId: string): Readonly<Record<string, string>> | undefined {
    try {
      return this.#hooks.headers?.(subscriptionId);
    } catch {
      return undefined; // a hook that fails adds nothing
    }
  }

  async #send(
    job: DeliveryJob,
    signature: WebhookHeaders,
    own: Readonly<Record<string, string>> | undefined,
  ): Promise<Answer> {
    const { transport, timeoutMs, clock } = this.#settings;
    const base = this.#baseHeaders;
    const started = clock.now();
    // A clock set backwards during the request reads as no time rather than a negative one.
    const took = () => Math.max(0, clock.now() - started);
    try {
      const response = await transport({
        url: job.endpointUrl,
        headers: {
          ...(own === undefined ? base : overlaid(base, own)),
          'content-type': 'application/json',
          ...signature,
        },
        body: job.body,
        timeoutMs,
      });
      return { response, durationMs: took() };
    } catch (caught) {
      const durationMs = took();
      if (isApiConventionsError(caught)) {
        return { error: { code: caught.code, message: caught.message }, durationMs };
      }
      const message = caught instanceof Error ? caught.message : String(caught);
      return { error: { code: 'connection_failed', message }, durationMs };
    }
  }

  /** What the answer means: done, or the job to retry and when. */
  async #follow(
    job: DeliveryJob,
    input: DeliveryJob,
    base: Base,
    answer: Answer,
  ): Promise<DeliveryStep> {
    const { response, durationMs } = answer;
    let answered: Answered;
    if (answer.error !== undefined) {
      const { error } = answer;
      if (error.code === 'forbidden_address') {
        return this.#done(input, base, {
          durationMs,
          error,
          outcome: 'failed',
          reason: 'forbidden_address',
        });
      }
      answered = { durationMs, error };
    } else {
      const { status } = answer.response;
      if (status >= 200 && status <= 299) {
        return this.#done(input, base, { durationMs, status, outcome: 'delivered' });
      }
      if (status === 410) {
        try {
          await this.#hooks.gone?.(job.subscriptionId);
        } catch {
          // Reported as disabled all the same: the receiver said it wants no more.
        }
        return this.#done(input, base, { durationMs, status, outcome: 'disabled', reason: 'gone' });
      }
      answered = { durationMs, status };
    }
    const firstAttemptAt = job.firstAttemptAt ?? base.at;
    const decision = nextAttempt(this.#settings.schedule, {
      attempts: base.attempt,
      firstAttemptAt,
      now: base.at,
      retryAfterMs: requestedPause(response, base.at, this.#settings.maxEndpointPauseMs),
      random: this.#draw(),
    });
    if (!decision.retry) {
      return this.#done(input, base, { ...answered, outcome: 'failed', reason: decision.reason });
    }
    const at = decision.at;
    const report = await this.#report(input, {
      ...base,
      ...answered,
      outcome: 'retry',
      nextAttemptAt: at,
    });
    return { done: false, job: { ...job, attempts: base.attempt, firstAttemptAt }, at, report };
  }

  async #done(input: DeliveryJob, base: Base, ending: Ending): Promise<DeliveryStep> {
    return { done: true, report: await this.#report(input, { ...base, ...ending }) };
  }

  /**
   * Publishes the attempt on its channel and has it recorded: the record is written before the
   * queue is told the step.
   */
  async #report(input: DeliveryJob, attempt: DeliveryAttempt): Promise<DeliveryAttempt> {
    reportAttempt(attempt);
    try {
      await this.#hooks.recorded?.(attempt, input);
    } catch {
      // A failing record or logger must not change what happens to the delivery.
    }
    return attempt;
  }

  #draw(): number {
    try {
      return this.#settings.random();
    } catch {
      return 0; // the full backoff: never sooner than the schedule allows
    }
  }
}

/**
 * `below` with `above` over it: a name of `above` replaces the same name of `below` in any case
 * (HTTP names are case-insensitive; both would be sent otherwise). Values that are no strings
 * (a row edited by hand) are left out.
 */
function overlaid(
  below: Readonly<Record<string, string>>,
  above: Readonly<Record<string, string>>,
): Record<string, string> {
  const names = Object.keys(above);
  const replaced = new Set(names.map((name) => name.toLowerCase()));
  // No prototype: a header named __proto__ is a header like any other.
  const out: Record<string, string> = Object.create(null);
  for (const name of Object.keys(below)) {
    if (!replaced.has(name.toLowerCase())) out[name] = below[name] as string;
  }
  for (const name of names) {
    const value = above[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/** The time a promised wait ends; one that rejects holds nothing back. */
async function settled(
  until: Promise<number | undefined> | number | undefined,
): Promise<number | undefined> {
  try {
    const at = await until;
    return typeof at === 'number' ? at : undefined;
  } catch {
    return undefined;
  }
}

function reportBase(job: DeliveryJob | string, input: DeliveryJob, at: number): Base {
  const replay = typeof job === 'string' ? undefined : job.replay;
  return {
    id: jobField(job, input, 'id'),
    subscriptionId: jobField(job, input, 'subscriptionId'),
    endpointUrl: jobField(job, input, 'endpointUrl'),
    attempt: typeof job === 'string' ? 1 : job.attempts + 1,
    ...(replay === undefined ? {} : { replay }),
    at,
  };
}

function notAttempted(job: DeliveryJob, spent: 'attempts_exhausted' | 'max_age'): Ending {
  return {
    attempt: job.attempts,
    error: {
      code: 'not_attempted',
      message: `${job.attempts} attempts were started, the last ones lost when their process died; the schedule allows no more (${spent}).`,
    },
    outcome: 'failed',
    reason: spent,
  };
}
