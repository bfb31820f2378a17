/** Verification for receivers of Standard Webhooks deliveries. @module */
import { timingSafeEqual } from 'node:crypto';
import { aClock, type Clock, systemClock } from '../../clock.js';
import { isArray } from '../../internal/describe.js';
import {
  checkValue,
  finiteNumber,
  INVALID,
  type Rule,
  readOptions,
  requiredValue,
  worded,
} from '../../internal/options.js';
import { readSafely } from '../../internal/read-once.js';
import { RAW_BODY, signatureDigest, WEBHOOK_SECRETS } from './signature.js';

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
      /** A header's value (the name in lower case), as `Headers.get` answers. */
      get(name: string): string | null;
    }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

// A bound on the signatures read from one header: a real sender rotates two or three secrets.
const MAX_SIGNATURES = 16;
const SECONDS = /^[0-9]{1,15}$/;
const VERIFY_RULES = {
  secrets: WEBHOOK_SECRETS,
  clock: aClock,
  toleranceSeconds: worded(finiteNumber(0), 'a number of seconds >= 0'),
};
// NaN compares false with everything: every timestamp would pass, replays included.
const CLOCK_READING: Rule<number> = {
  expected: 'a finite time in ms',
  read: (value) => (typeof value === 'number' && Number.isFinite(value) ? value : INVALID),
};
const MISSING_HEADERS =
  'The request needs the webhook-id, webhook-timestamp and webhook-signature headers.';

/**
 * Verify a delivery: every header present, the timestamp within the tolerance, and one `v1`
 * signature matching one of the secrets. Never throws for anything the request carries.
 * @param body - the raw body exactly as received (verify before parsing it)
 * @param headers - the request headers (any case)
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
  // Options of another kind hold no secret, and are refused as such.
  const given = typeof options === 'object' && options !== null && !isArray(options) ? options : {};
  const read = readOptions(given, 'verifyWebhook', VERIFY_RULES, {
    defaults: { clock: systemClock, toleranceSeconds: DEFAULT_WEBHOOK_TOLERANCE_SECONDS },
    example: '{ secrets: [secret] }',
  });
  const { clock, toleranceSeconds } = read;
  const keys = requiredValue(VERIFY_RULES.secrets, read.secrets, 'secrets');
  const raw = checkValue(RAW_BODY, body, 'verifyWebhook body');
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
  const now = Math.floor(checkValue(CLOCK_READING, clock.now(), 'clock.now()') / 1000);
  if (now - timestamp > toleranceSeconds) {
    return refuse(
      'timestamp_too_old',
      `The delivery was signed ${now - timestamp} s ago; at most ${toleranceSeconds} s are accepted.`,
    );
  }
  if (timestamp - now > toleranceSeconds) {
    return refuse(
      'timestamp_too_new',
      `The delivery is signed ${timestamp - now} s in the future; at most ${toleranceSeconds} s are accepted.`,
    );
  }
  const expected = keys.map((key) => signatureDigest(key, { id, timestamp, body: raw }));
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

// The headers come with the request: a getter, `get` or Proxy that throws is a header not there.
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
