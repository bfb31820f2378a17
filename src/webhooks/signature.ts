/**
 * Signing per the Standard Webhooks specification: secrets written `whsec_<base64>`, the headers
 * `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of
 * id.timestamp.body>`, one signature per secret so that a secret can be rotated without a gap.
 * @module
 */
import { createHmac, randomBytes } from 'node:crypto';
import { ConfigurationError } from '../errors.js';

/** The prefix of a webhook secret. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** The fewest and most key bytes a secret may carry (the specification's 24 to 64). */
export const WEBHOOK_SECRET_BYTES: {
  /** The fewest key bytes. */
  readonly min: 24;
  /** The most key bytes. */
  readonly max: 64;
} = { min: 24, max: 64 };

/** The three headers of a signed delivery (a type alias, so that it fits any header record). */
export type WebhookHeaders = {
  /** The message id: the same on every retry of one message, so receivers can deduplicate. */
  readonly 'webhook-id': string;
  /** The signing time, in whole seconds since the Unix epoch. */
  readonly 'webhook-timestamp': string;
  /** Space-separated `v1,<base64>` signatures, one per secret. */
  readonly 'webhook-signature': string;
};

/** What is signed: the message id, the time and the exact body bytes. */
export interface SignInput {
  /** The message id (`webhook-id`). */
  readonly id: string;
  /** Seconds since the Unix epoch (`webhook-timestamp`). */
  readonly timestamp: number;
  /** The body exactly as sent. */
  readonly body: string | Uint8Array;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const ID = /^[\x21-\x7e]{1,256}$/;

/**
 * A new random secret, `whsec_` and 32 random bytes in base64.
 * @param bytes - a source of random bytes
 * @defaultValue `crypto.randomBytes`
 * @returns the secret to hand to the subscriber once and store for signing
 * @example
 * ```ts
 * generateWebhookSecret(); // 'whsec_V0zZ...='
 * ```
 */
export function generateWebhookSecret(bytes: (size: number) => Uint8Array = randomBytes): string {
  return `${WEBHOOK_SECRET_PREFIX}${Buffer.from(bytes(32)).toString('base64')}`;
}

/**
 * The key bytes of a secret, written `whsec_<base64>` (the prefix may be left out).
 * @param secret - the secret
 * @returns the key
 * @throws ConfigurationError `invalid_webhook_secret` when it is not base64 of 24 to 64 bytes
 */
export function webhookSecretKey(secret: string): Buffer {
  if (typeof secret !== 'string') {
    throw new ConfigurationError(
      'invalid_webhook_secret',
      `A webhook secret must be a string such as ${WEBHOOK_SECRET_PREFIX}<base64>; got ${typeof secret}.`,
    );
  }
  const text = secret.startsWith(WEBHOOK_SECRET_PREFIX)
    ? secret.slice(WEBHOOK_SECRET_PREFIX.length)
    : secret;
  const size = (text.length / 4) * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);
  if (!BASE64.test(text) || size < WEBHOOK_SECRET_BYTES.min || size > WEBHOOK_SECRET_BYTES.max) {
    throw new ConfigurationError(
      'invalid_webhook_secret',
      `A webhook secret is ${WEBHOOK_SECRET_PREFIX} followed by the base64 of ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} random bytes; make one with generateWebhookSecret().`,
    );
  }
  return Buffer.from(text, 'base64');
}

/**
 * The raw HMAC-SHA256 of `id.timestamp.body` under a key.
 * @param key - the key bytes of a secret
 * @param input - id, timestamp and body
 * @returns the 32-byte digest
 */
export function signatureDigest(key: Uint8Array, input: SignInput): Buffer {
  return createHmac('sha256', key)
    .update(`${input.id}.${input.timestamp}.`)
    .update(input.body)
    .digest();
}

/**
 * Sign a message with every secret in force: the headers to send with the body.
 * @param input - the message id, the time in seconds and the exact body
 * @param secrets - one secret, or several while rotating (the new one and the old one)
 * @returns the three `webhook-*` headers
 * @throws ConfigurationError `invalid_webhook_secret` for a malformed secret or none,
 * `invalid_option` for an id with spaces or commas or a timestamp that is no whole number
 * @example
 * ```ts
 * const headers = signWebhook({ id: 'msg_1', timestamp: 1614265330, body }, [secret]);
 * ```
 */
export function signWebhook(input: SignInput, secrets: string | readonly string[]): WebhookHeaders {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigurationError(
      'invalid_webhook_secret',
      'Sign with at least one secret (two while rotating: the new one and the old one).',
    );
  }
  if (typeof input.id !== 'string' || !ID.test(input.id) || input.id.includes(',')) {
    throw new ConfigurationError(
      'invalid_option',
      'The webhook id must be 1 to 256 visible ASCII characters without commas, such as msg_2KWPBgLlAfxdpx2AI54pPJ85f4W.',
    );
  }
  if (!Number.isSafeInteger(input.timestamp) || input.timestamp < 0) {
    throw new ConfigurationError(
      'invalid_option',
      `The webhook timestamp must be whole seconds since the epoch, got ${String(input.timestamp)}.`,
    );
  }
  const signatures = list.map(
    (secret) => `v1,${signatureDigest(webhookSecretKey(secret), input).toString('base64')}`,
  );
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': signatures.join(' '),
  };
}
