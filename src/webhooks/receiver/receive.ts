/**
 * The receiver's one step, free of any server: a delivery's raw body and headers in, the answer
 * out. Verify (`v1` with secrets, `v1a` with public keys), parse, claim the id, handle, mark it
 * handled; the fetch and node handlers only read the request and write this answer. @module
 */
import { aClock, type Clock, systemClock } from '../../clock.js';
import { problemDetails, problemResponse, type ResponseParts } from '../../http/problem-details.js';
import {
  aFunction,
  finiteNumber,
  readOptions,
  refused,
  requiredValue,
  wholeNumber,
  withMethods,
  worded,
} from '../../internal/options.js';
import { WEBHOOK_SECRETS } from '../signing/signature.js';
import {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  deliveryVerifier,
  type HeaderSource,
  WEBHOOK_PUBLIC_KEY_BYTES_LIST,
  type WebhookVerification,
} from '../signing/verify.js';
import { memorySeenStore, type WebhookSeenStore } from './seen-store.js';

/** One verified delivery, as the handler gets it. */
export interface ReceivedWebhook {
  /** The message id (`webhook-id`): the same on every retry of one message. */
  readonly id: string;
  /** The signing time, in seconds since the epoch (`webhook-timestamp`). */
  readonly timestamp: number;
  /** The body parsed as JSON. */
  readonly payload: unknown;
  /** The body as received, UTF-8. */
  readonly body: string;
}

/** Where a receiver's failure happened: in `handle`, or in the seen-store. */
export type WebhookReceiverPhase = 'handle' | 'seen';

/** A failure told to {@link WebhookReceiverOptions.onError}. */
export interface WebhookReceiverErrorEvent {
  /** What was thrown or rejected. */
  readonly error: unknown;
  /** Where. */
  readonly phase: WebhookReceiverPhase;
  /** The message id of the delivery. */
  readonly id: string;
}

/** How a receiver verifies, deduplicates and handles: `secrets`, `publicKeys` or both. */
export interface WebhookReceiverOptions {
  /** The subscription's secret (`whsec_…`), or several while rotating: they verify `v1`. */
  secrets?: string | readonly string[] | undefined;
  /** The sender's public key (`whpk_…`), or several while rotating: they verify `v1a`. */
  publicKeys?: string | readonly string[] | undefined;
  /** How far `webhook-timestamp` may be from now, in seconds. @defaultValue 300 */
  toleranceSeconds?: number | undefined;
  /**
   * Runs once per message id: the receiver answers 2xx only after it resolves, and 500 when it
   * throws or rejects (the sender then retries, and the retry runs it again).
   */
  handle: (delivery: ReceivedWebhook) => unknown;
  /** Where handled ids are kept. @defaultValue a {@link memorySeenStore} on `clock` */
  seen?: WebhookSeenStore | undefined;
  /**
   * How long a handled id is remembered: a delivery of it within that time answers 200 without
   * running `handle`. At least twice `toleranceSeconds`, so that no replay of a signed delivery
   * runs it again.
   * @defaultValue 86400 (a day)
   */
  seenTtlSeconds?: number | undefined;
  /**
   * How long a claim holds while `handle` runs: a duplicate within that time answers 409 and is
   * retried by its sender; a claim left by a process that stopped mid-handle lapses after it.
   * Longer than `handle` ever takes.
   * @defaultValue 120
   */
  claimSeconds?: number | undefined;
  /** The largest body read, in bytes; a larger one answers 413. @defaultValue 1048576 (1 MiB) */
  maxBodyBytes?: number | undefined;
  /** The receiver's clock (the tolerance; the default seen-store). @defaultValue {@link systemClock} */
  clock?: Clock | undefined;
  /**
   * Told of every failure of `handle` and of the seen-store; one that throws is ignored.
   * @defaultValue one line on `console.error`
   */
  onError?: ((event: WebhookReceiverErrorEvent) => void) | undefined;
}

/** The problem codes a receiver answers with. */
export const webhookReceiverProblemCodes = [
  // 401: a header missing, no signature matching a key in force, a timestamp that is no number
  'invalid_signature',
  // 401: the timestamp too far from now (a replay, or a clock off by more than the tolerance)
  'timestamp_out_of_tolerance',
  // 400: a verified body that is not JSON
  'invalid_json',
  // 405: a method other than POST
  'method_not_allowed',
  // 413: a body over maxBodyBytes
  'body_too_large',
  // 400: a body that could not be read to its end (the sender went away mid-body)
  'body_unreadable',
  // 409: another delivery of the id is being handled now
  'delivery_in_progress',
  // 500: handle threw or rejected
  'handler_failed',
  // 503: the seen-store failed
  'seen_store_unavailable',
] as const;

/** A code of {@link webhookReceiverProblemCodes}. */
export type WebhookReceiverProblemCode = (typeof webhookReceiverProblemCodes)[number];

/** The defaults of {@link WebhookReceiverOptions}. */
export const webhookReceiverDefaults: {
  /** How far the timestamp may be from now, in seconds. */
  readonly toleranceSeconds: 300;
  /** How long a handled id is remembered, in seconds: a day. */
  readonly seenTtlSeconds: 86_400;
  /** How long a claim holds while handle runs, in seconds. */
  readonly claimSeconds: 120;
  /** The largest body read: 1 MiB. */
  readonly maxBodyBytes: 1_048_576;
} = {
  toleranceSeconds: DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  seenTtlSeconds: 86_400,
  claimSeconds: 120,
  maxBodyBytes: 1_048_576,
};

const RULES = {
  secrets: WEBHOOK_SECRETS,
  publicKeys: WEBHOOK_PUBLIC_KEY_BYTES_LIST,
  toleranceSeconds: worded(finiteNumber(0), 'a number of seconds >= 0'),
  handle: aFunction<(delivery: ReceivedWebhook) => unknown>('takes the verified delivery'),
  seen: withMethods<WebhookSeenStore>(['claim', 'complete', 'release'], 'a seen-store'),
  seenTtlSeconds: worded(finiteNumber(1), 'a number of seconds >= 1'),
  claimSeconds: worded(finiteNumber(1), 'a number of seconds >= 1'),
  maxBodyBytes: wholeNumber(1),
  clock: aClock,
  onError: aFunction<(event: WebhookReceiverErrorEvent) => void>('takes an error event'),
};

const OK: ResponseParts = { status: 200, headers: {}, body: '' };
const decoder = new TextDecoder('utf-8', { fatal: false });

/** The receiver's settings, read once, and its one step. @internal */
export class WebhookReceiverCore {
  /** The largest body a handler reads. */
  readonly maxBodyBytes: number;
  readonly #verify: (
    raw: Uint8Array,
    headers: HeaderSource,
  ) => WebhookVerification | Promise<WebhookVerification>;
  readonly #handle: (delivery: ReceivedWebhook) => unknown;
  readonly #seen: WebhookSeenStore;
  readonly #seenMs: number;
  readonly #claimMs: number;
  readonly #onError: (event: WebhookReceiverErrorEvent) => void;

  constructor(options: WebhookReceiverOptions) {
    const read = readOptions(options, 'createWebhookReceiver', RULES, {
      required: true,
      defaults: { ...webhookReceiverDefaults, clock: systemClock },
      example: '{ secrets: [process.env.WEBHOOK_SECRET], handle: async (delivery) => {} }',
    });
    const secrets = read.secrets ?? [];
    const publicKeys = read.publicKeys ?? [];
    if (secrets.length === 0 && publicKeys.length === 0) {
      throw refused(
        'secrets',
        `${RULES.secrets.expected}, unless publicKeys holds a public key`,
        read.secrets,
        'invalid_webhook_secret',
      );
    }
    if (read.seenTtlSeconds < 2 * read.toleranceSeconds) {
      throw refused(
        'seenTtlSeconds',
        `at least twice toleranceSeconds (${2 * read.toleranceSeconds}), so that no replay within the tolerance runs handle again`,
        read.seenTtlSeconds,
      );
    }
    // node:crypto where the runtime has it, else WebCrypto.
    this.#verify = deliveryVerifier({
      secrets,
      publicKeys,
      clock: read.clock,
      toleranceSeconds: read.toleranceSeconds,
    });
    this.#handle = requiredValue(RULES.handle, read.handle, 'handle');
    this.#seen = read.seen ?? memorySeenStore({ clock: read.clock });
    this.#seenMs = read.seenTtlSeconds * 1000;
    this.#claimMs = read.claimSeconds * 1000;
    this.maxBodyBytes = read.maxBodyBytes;
    const onError = read.onError ?? logError;
    this.#onError = (event) => {
      try {
        onError(event);
      } catch {}
    };
  }

  /**
   * The answer to one delivery: 200 once `handle` resolved (or when the id was handled before),
   * else a problem.
   * @param body - the raw body, as received
   * @param headers - the request's headers
   */
  async receive(body: Uint8Array, headers: HeaderSource): Promise<ResponseParts> {
    const verdict = await this.#verify(body, headers);
    if (!verdict.ok) {
      const late = verdict.code === 'timestamp_too_old' || verdict.code === 'timestamp_too_new';
      return late
        ? problem(401, 'timestamp_out_of_tolerance', 'Timestamp out of tolerance', verdict.message)
        : problem(401, 'invalid_signature', 'Invalid webhook signature', verdict.message);
    }
    const { id, timestamp } = verdict;
    const text = decoder.decode(body);
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      return problem(400, 'invalid_json', 'Invalid JSON', 'The body is not JSON.');
    }
    let claim: string;
    try {
      claim = await this.#seen.claim(id, this.#claimMs);
    } catch (error) {
      this.#onError({ error, phase: 'seen', id });
      return unavailable();
    }
    if (claim === 'handled') return OK;
    if (claim !== 'claimed') {
      return problem(
        409,
        'delivery_in_progress',
        'Delivery in progress',
        'Another delivery of this message is being handled now; retry later.',
      );
    }
    try {
      await this.#handle({ id, timestamp, payload, body: text });
    } catch (error) {
      this.#onError({ error, phase: 'handle', id });
      await this.#release(id);
      return problem(500, 'handler_failed', 'Handler failed', 'The delivery was not handled.');
    }
    try {
      await this.#seen.complete(id, this.#seenMs);
    } catch (error) {
      // Handled: the sender is told so; the claim lapses after claimSeconds.
      this.#onError({ error, phase: 'seen', id });
    }
    return OK;
  }

  /** The answer to a method other than POST. */
  methodNotAllowed(): ResponseParts {
    const parts = problem(405, 'method_not_allowed', 'Method not allowed', 'Send POST.');
    return { ...parts, headers: { ...parts.headers, allow: 'POST' } };
  }

  /** The answer to a body over {@link maxBodyBytes}. */
  bodyTooLarge(): ResponseParts {
    return problem(
      413,
      'body_too_large',
      'Body too large',
      `The body is over ${this.maxBodyBytes} bytes.`,
    );
  }

  /** The answer to a body that could not be read to its end. */
  bodyUnreadable(): ResponseParts {
    return problem(400, 'body_unreadable', 'Body unreadable', 'The body could not be read.');
  }

  async #release(id: string): Promise<void> {
    try {
      await this.#seen.release(id);
    } catch (error) {
      this.#onError({ error, phase: 'seen', id });
    }
  }
}

function problem(
  status: number,
  code: WebhookReceiverProblemCode,
  title: string,
  detail: string,
): ResponseParts {
  return problemResponse(problemDetails({ code, title, status, detail }));
}

function unavailable(): ResponseParts {
  const parts = problem(
    503,
    'seen_store_unavailable',
    'Seen-store unavailable',
    'The receiver cannot tell whether this message was handled; retry later.',
  );
  return { ...parts, headers: { ...parts.headers, 'retry-after': '5' } };
}

function logError(event: WebhookReceiverErrorEvent): void {
  console.error(`webhook receiver: ${event.phase} failed for ${event.id}:`, event.error);
}
