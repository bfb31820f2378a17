/**
 * The options of `createDeliverer`: how deliveries are made. In a file of their own so that the
 * deliverer, which runs with them, need not import the module that reads them.
 * @module
 */
import type { Clock, systemClock } from '../../clock.js';
import type { SecretCipherError } from '../../errors/secret-cipher-error.js';
import type { DeliveryAttempt } from './attempt.js';
import type { httpTransport, WebhookTransport } from './http-transport.js';
import type { RetrySchedule, RetryScheduleOptions, retrySchedule } from './retry-schedule.js';

/** How deliveries are made. */
export interface DeliveryOptions {
  /**
   * Read at each attempt, so rotation applies at once; none ends the job (`no_secret`), and so
   * does a throw, except a {@link SecretCipherError} (secrets there but unreadable), which ends it
   * `secret_unreadable`. Each is a secret (`whsec_…`, a `v1` signature) or a signing key
   * (`whsk_…`, a `v1a` signature), in any mix.
   */
  secrets: (
    subscriptionId: string,
  ) => readonly string[] | undefined | Promise<readonly string[] | undefined>;
  /**
   * Sends the POST. @defaultValue {@link httpTransport}() with the SSRF guard and no allow-list,
   * where the runtime has node:http(s) and node:dns; `fetchTransport()` elsewhere
   */
  transport?: WebhookTransport;
  /** The timeout of one attempt, in ms, at most 2^31 - 1 (what timers hold). @defaultValue 15000 */
  timeoutMs?: number;
  /**
   * The retry schedule: one from {@link retrySchedule}, or its options (those left out take their
   * defaults). @defaultValue {@link retrySchedule}()
   */
  schedule?: RetrySchedule | RetryScheduleOptions;
  /**
   * The longest wait a receiver's `Retry-After` may ask for, in ms (with 429, 502, 503 or 504): a
   * longer one, a misprinted ten years, waits this long and the delivery is tried again within its
   * schedule. At most the schedule's `maxAgeMs`. @defaultValue 3600000 (1 h)
   */
  maxEndpointPauseMs?: number;
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
