/** Delivery of a signed message to one subscription (see docs/delivery.md). @module */
import { aClock, type Clock, systemClock } from '../../clock.js';
import { nodeBuiltin } from '../../internal/node-builtin.js';
import { aFunction, readOptions, requiredValue, wholeNumber } from '../../internal/options.js';
import { MAX_TIMER_MS } from '../../internal/timers.js';
import type { DeliveryAttempt } from './attempt.js';
import { ENDPOINT_PAUSE_OPTION, pauseWithinAge } from './endpoint-pause.js';
import { EXTRA_HEADERS } from './extra-headers.js';
import { fetchTransport } from './fetch-transport.js';
import type { DeliveryHooks } from './hooks.js';
import type { WebhookTransport } from './http-transport.js';
import { httpTransport } from './http-transport.js';
import type { DeliveryJob } from './job.js';
import type { DeliveryOptions } from './options.js';
import { retrySchedule, SCHEDULE_OPTION } from './retry-schedule.js';
import type { Deliverer } from './step.js';
import { WebhookDeliverer } from './webhook-deliverer.js';

/**
 * Make a deliverer.
 * @throws ConfigurationError `invalid_option` for a missing secrets function, a bad timeout, a
 * `maxEndpointPauseMs` above the schedule's `maxAgeMs` or extra headers that HTTP cannot carry
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
  const { secrets, onAttempt, onGone, ...read } = readDelivery(options);
  const hooks: DeliveryHooks = {
    secrets: requiredValue(DELIVERY_RULES.secrets, secrets, 'secrets'),
    gone: onGone,
    // Told the attempt alone, as the option says, not the job the record hook is given too.
    recorded: onAttempt && ((attempt) => onAttempt(attempt)),
  };
  return new WebhookDeliverer(withTransport(read), hooks);
}

/**
 * How a deliverer sends, as `createDeliverer` takes it; left out or `undefined`, the default.
 * @internal
 */
export type DelivererOptions = {
  readonly [K in
    | 'transport'
    | 'timeoutMs'
    | 'schedule'
    | 'maxEndpointPauseMs'
    | 'clock'
    | 'random'
    | 'headers']?: DeliveryOptions[K] | undefined;
};

/**
 * A deliverer whose steps are the given hooks (the webhook service's), its other options read and
 * checked as `createDeliverer` reads them.
 * @throws ConfigurationError `invalid_option` as `createDeliverer`
 * @internal
 */
export function hookedDeliverer(options: DelivererOptions, hooks: DeliveryHooks): Deliverer {
  return new WebhookDeliverer(withTransport(readDelivery(options)), hooks);
}

/** The options read once, the defaults filled in. */
function readDelivery(options: DeliveryOptions | DelivererOptions) {
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
  const { maxEndpointPauseMs, schedule } = read;
  return {
    ...read,
    maxEndpointPauseMs: pauseWithinAge(maxEndpointPauseMs, schedule, 'maxEndpointPauseMs'),
  };
}

/**
 * The settings with a transport: made only when none is given (it holds keep-alive agents):
 * `httpTransport` where the runtime has node:http(s) and node:dns, else `fetchTransport`.
 */
function withTransport<S extends { readonly transport: WebhookTransport | undefined }>(
  read: S,
): S & { readonly transport: WebhookTransport } {
  return { ...read, transport: read.transport ?? defaultTransport() };
}

function defaultTransport(): WebhookTransport {
  const nodeNetwork =
    nodeBuiltin('node:http') !== undefined &&
    nodeBuiltin('node:https') !== undefined &&
    nodeBuiltin('node:dns') !== undefined;
  return nodeNetwork ? httpTransport() : fetchTransport();
}

const DELIVERY_RULES = {
  secrets: aFunction<DeliveryOptions['secrets']>(
    'gives the secrets to sign with: (subscriptionId) => string[]',
  ),
  transport: aFunction<WebhookTransport>('sends a request (see httpTransport)'),
  // Timers fire at once beyond 2^31 - 1 ms: a longer timeout would time every attempt out.
  timeoutMs: wholeNumber(1, MAX_TIMER_MS),
  schedule: SCHEDULE_OPTION,
  maxEndpointPauseMs: ENDPOINT_PAUSE_OPTION,
  clock: aClock,
  random: aFunction<() => number>('draws a number in [0, 1)'),
  onAttempt: aFunction<NonNullable<DeliveryOptions['onAttempt']>>('takes a DeliveryAttempt'),
  onGone: aFunction<NonNullable<DeliveryOptions['onGone']>>('takes a subscription id'),
  headers: EXTRA_HEADERS,
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
