/**
 * The report of one delivery attempt: how it ended and, when given up, why. In a file of its own
 * so that the deliverer, which writes reports, and the channels and repositories, which read
 * them, need not import the module that makes deliverers.
 * @module
 */

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
