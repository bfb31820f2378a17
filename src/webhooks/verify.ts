/**
 * Verification for receivers of Standard Webhooks deliveries: the signature is compared in
 * constant time against every secret in force, and the timestamp must lie within a tolerance of
 * the receiver's clock (replayed deliveries are refused).
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { ConfigurationError } from '../errors/index.js';
import { describe, isArray } from '../internal/describe.js';
import { isInstance, readFields, readList, readSafely } from '../internal/read-once.js';
import { signatureDigest, webhookSecretKey } from './signature.js';

/** Codes of a refused delivery. */
export const webhookVerificationErrorCodes = [
  'missing_header',
  'invalid_timestamp',
  'timestamp_too_old',
  'timestamp_too_new',
  'no_matching_signature',
] as const;

/** A code of {@link webhookVerificationErrorCodes}. */
export type WebhookVerificationErrorCode = (typeof webhookVerificationErrorCodes)[number];

/** The default tolerance between the signing time and the receiver's clock: five minutes. */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

/** How a receiver verifies. */
export interface VerifyWebhookOptions {
  /** The subscription's secret, or several while rotating. */
  secrets: string | readonly string[];
  /** The receiver's clock. @defaultValue {@link systemClock} */
  clock?: Clock;
  /** How far the timestamp may be from now, in seconds. @defaultValue 300 */
  toleranceSeconds?: number;
}

/** A verified delivery, or why it is refused. */
export type WebhookVerification =
  | {
      /** Verified. */
      readonly ok: true;
      /** The message id: deduplicate on it, retries carry the same. */
      readonly id: string;
      /** The signing time, in seconds. */
      readonly timestamp: number;
    }
  | {
      /** Refused. */
      readonly ok: false;
      /** Stable code. */
      readonly code: WebhookVerificationErrorCode;
      /** What is wrong. */
      readonly message: string;
    };

/** Request headers as node:http, fetch or a plain object gives them. */
export type HeaderSource =
  | {
      /**
       * A header's value, as `Headers.get` answers.
       * @param name - the header name, lower case
       */
      get(name: string): string | null;
    }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

// A bound on the signatures read from one header: a real sender rotates two or three secrets.
const MAX_SIGNATURES = 16;
const SECONDS = /^[0-9]{1,15}$/;
const OPTION_KEYS = ['secrets', 'clock', 'toleranceSeconds'] as const;
const NO_SECRET =
  'Verify with at least one secret (two while rotating): { secrets: [newSecret, oldSecret] }.';
const MISSING_HEADERS =
  'The request needs the webhook-id, webhook-timestamp and webhook-signature headers.';

/**
 * Verify a delivery: every header present, the timestamp within the tolerance, and one `v1`
 * signature matching one of the secrets. Never throws for anything the request carries.
 * @param body - the raw body exactly as received (verify before parsing it)
 * @param headers - the request headers (any case)
 * @param options - secrets, clock and tolerance
 * @returns the message id and time, or the refusal with a code
 * @throws ConfigurationError `invalid_webhook_secret` when a secret is malformed, `invalid_option`
 * for a negative tolerance, a body that is not the raw string or bytes (a Proxy of bytes included),
 * options that cannot be read (a getter that throws), or a clock whose time is not a finite number
 * @example
 * ```ts
 * const verdict = verifyWebhook(rawBody, req.headers, { secrets: process.env.WEBHOOK_SECRET! });
 * if (!verdict.ok) return res.writeHead(400).end(verdict.message);
 * ```
 */
export function verifyWebhook(
  body: string | Uint8Array,
  headers: HeaderSource,
  options: VerifyWebhookOptions,
): WebhookVerification {
  // Read once: an option whose read throws is a ConfigurationError, never the getter's own error.
  const read =
    typeof options === 'object' && options !== null
      ? readFields(options, OPTION_KEYS, 'invalid_option', 'the verifyWebhook options')
      : {};
  const list = typeof read.secrets === 'string' ? [read.secrets] : read.secrets;
  if (!isArray(list) || readSafely(list, 'length') === 0) {
    throw new ConfigurationError('invalid_webhook_secret', NO_SECRET);
  }
  const keys = readList(list, 'secrets', 'a list of whsec_ secrets', 'invalid_webhook_secret').map(
    (secret) => webhookSecretKey(secret as string),
  );
  const tolerance = read.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0) {
    throw new ConfigurationError(
      'invalid_option',
      `toleranceSeconds must be a number of seconds >= 0, got ${describe(tolerance)}.`,
    );
  }
  // `ArrayBuffer.isView` first: a Proxy of bytes passes `instanceof` but is no bytes to hash.
  if (typeof body !== 'string' && !(ArrayBuffer.isView(body) && isInstance(body, Uint8Array))) {
    throw new ConfigurationError(
      'invalid_option',
      'Verify the raw body as received (a string or a Buffer), not the parsed JSON: parsing and serialising again changes the bytes.',
    );
  }
  if (typeof headers !== 'object' || headers === null) {
    return refuse('missing_header', MISSING_HEADERS);
  }
  const id = header(headers, 'webhook-id');
  const stamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (id === undefined || stamp === undefined || signature === undefined) {
    return refuse('missing_header', MISSING_HEADERS);
  }
  if (!SECONDS.test(stamp)) {
    return refuse('invalid_timestamp', 'webhook-timestamp must be whole seconds since the epoch.');
  }
  const timestamp = Number(stamp);
  const clockNow = ((read.clock as Clock | undefined) ?? systemClock).now();
  if (typeof clockNow !== 'number' || !Number.isFinite(clockNow)) {
    // NaN compares false with everything: every timestamp would pass, replays included.
    throw new ConfigurationError(
      'invalid_option',
      `clock.now() must return a finite time in ms, got ${typeof clockNow === 'object' || typeof clockNow === 'function' ? describe(clockNow) : String(clockNow)}.`,
    );
  }
  const now = Math.floor(clockNow / 1000);
  if (now - timestamp > tolerance) {
    return refuse(
      'timestamp_too_old',
      `The delivery was signed ${now - timestamp} s ago; at most ${tolerance} s are accepted.`,
    );
  }
  if (timestamp - now > tolerance) {
    return refuse(
      'timestamp_too_new',
      `The delivery is signed ${timestamp - now} s in the future; at most ${tolerance} s are accepted.`,
    );
  }
  const expected = keys.map((key) => signatureDigest(key, { id, timestamp, body }));
  let matched = false;
  for (const candidate of signature.split(' ').slice(0, MAX_SIGNATURES)) {
    const comma = candidate.indexOf(',');
    if (comma === -1 || candidate.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(candidate.slice(comma + 1), 'base64');
    for (const digest of expected) {
      // Compare every candidate: the time taken does not depend on which one matches.
      if (given.length === digest.length && timingSafeEqual(given, digest)) matched = true;
    }
  }
  return matched
    ? { ok: true, id, timestamp }
    : refuse(
        'no_matching_signature',
        'No v1 signature matches a secret in force: check the secret, and verify the raw body before parsing it.',
      );
}

// A header's one value, or undefined. The headers come with the request, so a getter, a `get`
// or a Proxy that throws is a header that is not there, never a throw.
function header(headers: HeaderSource, name: string): string | undefined {
  let value: unknown;
  try {
    const get = readSafely(headers, 'get');
    if (typeof get === 'function') {
      value = get.call(headers, name);
    } else {
      const record = headers as Readonly<Record<string, unknown>>;
      value = record[name];
      if (value === undefined) {
        const key = Object.keys(record).find((k) => k.toLowerCase() === name);
        value = key === undefined ? undefined : record[key];
      }
    }
    if (isArray(value)) value = value.length === 1 ? value[0] : undefined;
  } catch {
    return undefined;
  }
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function refuse(code: WebhookVerificationErrorCode, message: string): WebhookVerification {
  return { ok: false, code, message };
}
