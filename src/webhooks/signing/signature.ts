/** Signing per the Standard Webhooks specification, one signature per secret. @module */
import { createHmac, randomBytes } from 'node:crypto';
import { ConfigurationError } from '../../errors/index.js';

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
  /** The body as sent: a string (signed as UTF-8) or a Uint8Array; wrap an ArrayBuffer in one. */
  readonly body: string | Uint8Array;
}

// The secret's base64 is read only once its length is within the bounds below, so that the
// expression never runs over a long input (a backtracking engine may exhaust its stack there).
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// Base64 of 24 bytes has 32 characters, of 64 bytes 88: padded, it is 4 characters per 3 bytes.
const MIN_BASE64_LENGTH = Math.ceil(WEBHOOK_SECRET_BYTES.min / 3) * 4;
const MAX_BASE64_LENGTH = Math.ceil(WEBHOOK_SECRET_BYTES.max / 3) * 4;
const MAX_ID_LENGTH = 256;
const GENERATED_SECRET_BYTES = 32;

/**
 * A new random secret, `whsec_` and 32 random bytes in base64.
 * @param bytes - called with 32, returns exactly 32 random bytes. @defaultValue `crypto.randomBytes`
 * @throws ConfigurationError `invalid_option` when `bytes` is not a function or does not return
 * a Uint8Array of the 32 bytes asked for
 * @example
 * ```ts
 * generateWebhookSecret(); // 'whsec_V0zZ...='
 * ```
 */
export function generateWebhookSecret(bytes: (size: number) => Uint8Array = randomBytes): string {
  if (typeof bytes !== 'function') {
    throw new ConfigurationError(
      'invalid_option',
      `generateWebhookSecret takes a source of random bytes, (size) => Uint8Array, such as crypto.randomBytes; got ${typeName(bytes)}.`,
    );
  }
  const key: unknown = bytes(GENERATED_SECRET_BYTES);
  if (!(key instanceof Uint8Array) || key.length !== GENERATED_SECRET_BYTES) {
    const got = key instanceof Uint8Array ? `${key.length} bytes` : typeName(key);
    throw new ConfigurationError(
      'invalid_option',
      `The random source given to generateWebhookSecret must return a Uint8Array of the ${GENERATED_SECRET_BYTES} bytes asked for; got ${got}.`,
    );
  }
  return `${WEBHOOK_SECRET_PREFIX}${Buffer.from(key).toString('base64')}`;
}

/**
 * The key bytes of a secret, written `whsec_<base64>` (the prefix may be left out).
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
  const expected = `A webhook secret is ${WEBHOOK_SECRET_PREFIX} followed by the base64 of ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} random bytes`;
  if (text.length < MIN_BASE64_LENGTH || text.length > MAX_BASE64_LENGTH) {
    throw new ConfigurationError(
      'invalid_webhook_secret',
      `${expected} (${MIN_BASE64_LENGTH} to ${MAX_BASE64_LENGTH} characters); this one has ${text.length}. Make one with generateWebhookSecret().`,
    );
  }
  const size = (text.length / 4) * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);
  if (!BASE64.test(text) || size < WEBHOOK_SECRET_BYTES.min || size > WEBHOOK_SECRET_BYTES.max) {
    throw new ConfigurationError(
      'invalid_webhook_secret',
      `${expected}; make one with generateWebhookSecret().`,
    );
  }
  return Buffer.from(text, 'base64');
}

/** The raw HMAC-SHA256 of `id.timestamp.body` under a key (the input checked by the caller). */
export function signatureDigest(key: Uint8Array, input: SignInput): Buffer {
  return createHmac('sha256', key)
    .update(`${input.id}.${input.timestamp}.`)
    .update(input.body)
    .digest();
}

/** True for an id that can be sent as `webhook-id`: 1 to 256 visible ASCII characters, no comma. */
export function isWebhookId(id: unknown): id is string {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) return false;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c < 0x21 || c > 0x7e || c === 0x2c) return false;
  }
  return true;
}

/** What a valid `webhook-id` is, for messages that refuse one. */
export const WEBHOOK_ID_RULE = `1 to ${MAX_ID_LENGTH} visible ASCII characters without spaces or commas, such as msg_2KWPBgLlAfxdpx2AI54pPJ85f4W`;

/**
 * Sign a message with every secret in force: the headers to send with the body.
 * @param secrets - one secret, or several while rotating (the new one and the old one)
 * @throws ConfigurationError `invalid_webhook_secret` for a malformed secret or none,
 * `invalid_option` for an input that is no object, an id with spaces or commas, a timestamp that
 * is no whole number, or a body that is neither a string nor a Uint8Array
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
  if (typeof input !== 'object' || input === null) {
    throw new ConfigurationError(
      'invalid_option',
      `signWebhook needs { id, timestamp, body }; got ${typeName(input)}.`,
    );
  }
  // Each field read once: what is checked is what is signed.
  const { id, timestamp, body } = input;
  if (!isWebhookId(id)) {
    throw new ConfigurationError('invalid_option', `The webhook id must be ${WEBHOOK_ID_RULE}.`);
  }
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new ConfigurationError(
      'invalid_option',
      `The webhook timestamp must be whole seconds since the epoch, got ${String(timestamp)}.`,
    );
  }
  if (typeof body !== 'string' && !(body instanceof Uint8Array)) {
    throw new ConfigurationError(
      'invalid_option',
      `Sign the body exactly as it is sent, a string or a Uint8Array such as a Buffer (wrap an ArrayBuffer with new Uint8Array(arrayBuffer)); got ${typeName(body)}.`,
    );
  }
  const signed = { id, timestamp, body };
  const signatures = list.map(
    (secret) => `v1,${signatureDigest(webhookSecretKey(secret), signed).toString('base64')}`,
  );
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures.join(' '),
  };
}

// Its type or class, never the value itself: a secret must not reach a log.
function typeName(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (typeof value === 'function') return 'a function';
  let name: string = typeof value;
  if (typeof value === 'object') {
    name = Array.isArray(value) ? 'array' : 'object';
    try {
      const className = Object.getPrototypeOf(value)?.constructor?.name;
      if (typeof className === 'string' && className !== '' && className !== 'Object') {
        name = className;
      }
    } catch {
      // A Proxy that refuses to say: it is an object.
    }
  }
  return `${'aeiouAEIOU'.includes(name.charAt(0)) ? 'an' : 'a'} ${name}`;
}
