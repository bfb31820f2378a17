/**
 * Verification for receivers of Standard Webhooks deliveries: `v1` signatures with `whsec_`
 * secrets, `v1a` signatures with `whpk_` public keys. @module
 */
import type { KeyObject } from 'node:crypto';
import { aClock, type Clock, systemClock } from '../../clock.js';
import { isArray } from '../../internal/describe.js';
import { nodeCrypto } from '../../internal/node-builtin.js';
import {
  checkValue,
  finiteNumber,
  INVALID,
  listOf,
  type Rule,
  readOptions,
  refused,
  worded,
} from '../../internal/options.js';
import { readSafely } from '../../internal/read-once.js';
import { RAW_BODY, signatureDigest, WEBHOOK_SECRETS } from './signature.js';
import {
  isEd25519Signature,
  signedContent,
  WEBHOOK_PUBLIC_KEY,
  WEBHOOK_PUBLIC_KEY_PREFIX,
} from './signing-key.js';

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

/** How a receiver verifies: with `secrets`, `publicKeys`, or both (at least one key in all). */
export interface VerifyWebhookOptions {
  /** The subscription's secret (`whsec_…`), or several while rotating: they verify `v1`. */
  secrets?: string | readonly string[] | undefined;
  /**
   * The sender's public key (`whpk_…`), or several while rotating: they verify `v1a`.
   * @defaultValue none
   */
  publicKeys?: string | readonly string[] | undefined;
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
const PUBLIC_KEY_LIST = worded(
  listOf(WEBHOOK_PUBLIC_KEY, 0),
  'an array of public keys (two while rotating: the new one and the old one)',
);

/** The public keys to verify with, each read: one, or several while rotating. @internal */
export const WEBHOOK_PUBLIC_KEYS: Rule<KeyObject[]> = {
  expected: `a public key (${WEBHOOK_PUBLIC_KEY_PREFIX}…), or an array of them (two while rotating: the new one and the old one)`,
  code: 'invalid_webhook_public_key',
  read: (value, name) =>
    typeof value === 'string'
      ? [checkValue(WEBHOOK_PUBLIC_KEY, value, name)]
      : PUBLIC_KEY_LIST.read(value, name),
};

const VERIFY_RULES = {
  secrets: WEBHOOK_SECRETS,
  publicKeys: WEBHOOK_PUBLIC_KEYS,
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
 * Verify a delivery: every header present, the timestamp within the tolerance, and one signature
 * matching one of the keys: a `v1` signature one of the secrets, or a `v1a` signature one of the
 * public keys. Entries of another scheme, or of a scheme no key given verifies, are skipped, as
 * the specification says. Never throws for anything the request carries.
 * @param body - the raw body exactly as received (verify before parsing it)
 * @param headers - the request headers (any case)
 * @throws ConfigurationError `invalid_webhook_secret` when a secret is malformed or no key is given,
 * `invalid_webhook_public_key` when a public key is malformed (a `whsk_` signing key included),
 * `invalid_option`
 * for a negative tolerance, a body that is not the raw string or bytes (a Proxy of bytes included),
 * options that cannot be read (a getter that throws), or a clock whose time is not a finite number
 * @example
 * ```ts
 * const verdict = verifyWebhook(rawBody, req.headers, { secrets: process.env.WEBHOOK_SECRET! });
 * if (!verdict.ok) return res.writeHead(400).end(verdict.message);
 * // Asymmetric signatures: the sender's public key.
 * verifyWebhook(rawBody, req.headers, { publicKeys: process.env.WEBHOOK_PUBLIC_KEY! });
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
    example: '{ secrets: [secret] } or { publicKeys: [publicKey] }',
  });
  const { clock, toleranceSeconds } = read;
  const keys = read.secrets ?? [];
  const publicKeys = read.publicKeys ?? [];
  if (keys.length === 0 && publicKeys.length === 0) {
    throw refused(
      'secrets',
      `${VERIFY_RULES.secrets.expected}, unless publicKeys holds a public key`,
      read.secrets,
      'invalid_webhook_secret',
    );
  }
  const raw = checkValue(RAW_BODY, body, 'verifyWebhook body');
  return verifyWith({ secrets: keys, publicKeys, clock, toleranceSeconds }, raw, headers);
}

/** The keys and settings of {@link verifyWebhook}, read once. @internal */
export interface VerifySettings {
  /** HMAC keys of the secrets. */
  readonly secrets: readonly Buffer[];
  /** ed25519 public keys. */
  readonly publicKeys: readonly KeyObject[];
  /** The receiver's clock. */
  readonly clock: Clock;
  /** The tolerance, in seconds. */
  readonly toleranceSeconds: number;
}

/**
 * {@link verifyWebhook} with its settings read before (a receiver reads its keys once, not on
 * every request); `body` is the raw body, checked by the caller. @internal
 */
export function verifyWith(
  settings: VerifySettings,
  raw: string | Uint8Array,
  headers: HeaderSource,
): WebhookVerification {
  const { secrets: keys, publicKeys, clock, toleranceSeconds } = settings;
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
  const content = { id, timestamp, body: raw };
  const expected = keys.map((key) => signatureDigest(key, content));
  let signed: Buffer | undefined;
  let matched = false;
  for (const candidate of signature.split(' ').slice(0, MAX_SIGNATURES)) {
    const comma = candidate.indexOf(',');
    if (comma === -1) continue;
    const scheme = candidate.slice(0, comma);
    if (scheme === 'v1') {
      const given = Buffer.from(candidate.slice(comma + 1), 'base64');
      for (const digest of expected) {
        // Compare every candidate: the time taken does not depend on which one matches.
        if (
          given.length === digest.length &&
          nodeCrypto('A v1 verification (verifyWebhook)').timingSafeEqual(given, digest)
        )
          matched = true;
      }
    } else if (scheme === 'v1a' && publicKeys.length > 0 && !matched) {
      // A public signature needs no constant time: the first match is enough.
      const given = Buffer.from(candidate.slice(comma + 1), 'base64');
      signed ??= signedContent(content);
      const bytes = signed;
      if (publicKeys.some((key) => isEd25519Signature(key, bytes, given))) matched = true;
    }
  }
  return matched
    ? { ok: true, id, timestamp }
    : refuse(
        'no_matching_signature',
        `No ${schemes(keys.length, publicKeys.length)} signature matches a key in force: check the key, and verify the raw body before parsing it.`,
      );
}

function schemes(secrets: number, publicKeys: number): string {
  if (publicKeys === 0) return 'v1';
  return secrets === 0 ? 'v1a' : 'v1 or v1a';
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
