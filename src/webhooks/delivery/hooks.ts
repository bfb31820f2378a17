/**
 * The steps a deliverer leaves to its owner, {@link DeliveryHooks}: where the secrets come from,
 * what a 410 does, where an attempt is recorded, and which subscriptions wait. `createDeliverer`
 * makes them from its options; the webhook service gives its own to the same deliverer.
 * @module
 */
import type { DeliveryAttempt } from './attempt.js';
import type { DeliveryJob } from './job.js';

/**
 * The steps of a delivery that its owner takes. The deliverer calls each at most once per attempt,
 * in this order: `waitUntil`, `secrets`, `headers`, `gone`, `recorded`; `lost` reports call
 * `recorded` alone.
 * @internal
 */
export interface DeliveryHooks {
  /**
   * The signing secrets of a subscription, read at each attempt. None ends the job `no_secret`,
   * and so does a throw, except a `SecretCipherError` (secrets there but unreadable), which ends
   * it `secret_unreadable`. Secrets (`whsec_…`) and signing keys (`whsk_…`) alike.
   */
  readonly secrets: (
    subscriptionId: string,
  ) => readonly string[] | undefined | Promise<readonly string[] | undefined>;
  /**
   * The subscription's own request headers, read at each attempt after its secrets: sent after the
   * deliverer's `headers` (replacing one of the same name, in any case), before `content-type` and
   * the signature headers, which always win. One that throws reads as none.
   */
  readonly headers?:
    | ((subscriptionId: string) => Readonly<Record<string, string>> | undefined)
    | undefined;
  /**
   * The subscription's endpoint answered 410 Gone: awaited before the attempt is recorded. What it
   * throws is ignored (the attempt is `disabled` all the same).
   */
  readonly gone?: ((subscriptionId: string) => void | Promise<void>) | undefined;
  /**
   * Records an attempt (or a job the queue lost); awaited before the deliverer answers, so the
   * record is written before the queue takes its next step with the job. What it throws is
   * ignored. `job` is the input as the queue gave it: for an `invalid_job` attempt it may be no
   * job at all, so read it with care.
   */
  readonly recorded?:
    | ((attempt: DeliveryAttempt, job: DeliveryJob) => void | Promise<void>)
    | undefined;
  /**
   * A time after `now` (ms) until which the job waits (its receiver asked every delivery to wait,
   * or the subscription's rate is spent), or `undefined` to attempt now; a promise of either when
   * the answer needs a store across the network (answer synchronously when it does not: no
   * promise is made then). A job that waits is deferred: no attempt, no report, its attempts
   * unchanged. Asked only of a job the schedule still allows an attempt of, so a job about to end
   * takes no turn of a rate. One that throws or rejects reads as `undefined`.
   */
  readonly waitUntil?:
    | ((subscriptionId: string, now: number) => number | undefined | Promise<number | undefined>)
    | undefined;
}
