/**
 * Verification for receivers of Standard Webhooks deliveries: `v1` signatures with `whsec_`
 * secrets, `v1a` signatures with `whpk_` public keys. @module
 */
import type { KeyObject } from 'node:crypto';
import { aClock, type Clock, systemClock } from '../../clock.js';
import { concatBytes, decodeBase64, encodeBase64 } from '../../internal/base64.js';
import { isArray } from '../../internal/describe.js';
import { nodeBuiltin, nodeCrypto } from '../../internal/node-builtin.js';
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
import { constantTimeEqual } from '../../internal/sha256.js';
import { RAW_BODY, signatureDigest, WEBHOOK_SECRETS } from './signature.js';
import {
  isEd25519Signature,
  signedContent,
  WEBHOOK_PUBLIC_KEY,
  WEBHOOK_PUBLIC_KEY_BYTES,
  WEBHOOK_PUBLIC_KEY_PREFIX,
} from './signing-key.js';
import { webCryptoEd25519Verify, webCryptoHmac } from './web-crypto.js';

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
// The public keys of either reading: node's key objects, or their bytes for WebCrypto.
function publicKeysRule<K>(one: Rule<K>): Rule<K[]> {
  const list = worded(
    listOf(one, 0),
    'an array of public keys (two while rotating: the new one and the old one)',
  );
  return {
    expected: `a public key (${WEBHOOK_PUBLIC_KEY_PREFIX}…), or an array of them (two while rotating: the new one and the old one)`,
    code: 'invalid_webhook_public_key',
    read: (value, name) =>
      typeof value === 'string' ? [checkValue(one, value, name)] : list.read(value, name),
  };
}

/** The public keys to verify with, each read: one, or several while rotating. @internal */
export const WEBHOOK_PUBLIC_KEYS: Rule<KeyObject[]> = publicKeysRule(WEBHOOK_PUBLIC_KEY);

/** {@link WEBHOOK_PUBLIC_KEYS} read into their bytes, for WebCrypto. @internal */
export const WEBHOOK_PUBLIC_KEY_BYTES_LIST: Rule<Uint8Array[]> =
  publicKeysRule(WEBHOOK_PUBLIC_KEY_BYTES);

// NaN compares false with everything: every timestamp would pass, replays included.
const CLOCK_READING: Rule<number> = {
  expected: 'a finite time in ms',
  read: (value) => (typeof value === 'number' && Number.isFinite(value) ? value : INVALID),
};
const MISSING_HEADERS =
  'The request needs the webhook-id, webhook-timestamp and webhook-signature headers.';

// The options of verifyWebhook, its public keys read by `publicKeys`.
function readVerifyOptions<K>(
  options: VerifyWebhookOptions,
  publicKeys: Rule<K[]>,
): VerifySettings<K> {
  const rules = {
    secrets: WEBHOOK_SECRETS,
    publicKeys,
    clock: aClock,
    toleranceSeconds: worded(finiteNumber(0), 'a number of seconds >= 0'),
  };
  // Options of another kind hold no secret, and are refused as such.
  const given = typeof options === 'object' && options !== null && !isArray(options) ? options : {};
  const read = readOptions(given, 'verifyWebhook', rules, {
    defaults: { clock: systemClock, toleranceSeconds: DEFAULT_WEBHOOK_TOLERANCE_SECONDS },
    example: '{ secrets: [secret] } or { publicKeys: [publicKey] }',
  });
  const secrets = read.secrets ?? [];
  const keys = read.publicKeys ?? [];
  if (secrets.length === 0 && keys.length === 0) {
    throw refused(
      'secrets',
      `${rules.secrets.expected}, unless publicKeys holds a public key`,
      read.secrets,
      'invalid_webhook_secret',
    );
  }
  return { secrets, publicKeys: keys, clock: read.clock, toleranceSeconds: read.toleranceSeconds };
}

/**
 * Verify a delivery: every header present, the timestamp within the tolerance, and one signature
 * matching one of the keys: a `v1` signature one of the secrets, or a `v1a` signature one of the
 * public keys. Entries of another scheme, or of a scheme no key given verifies, are skipped, as
 * the specification says. Never throws for anything the request carries. Needs `node:crypto`:
 * {@link verifyWebhookAsync} runs on every runtime.
 * @param body - the raw body exactly as received (verify before parsing it)
 * @param headers - the request headers (any case)
 * @throws ConfigurationError `invalid_webhook_secret` when a secret is malformed or no key is given,
 * `invalid_webhook_public_key` when a public key is malformed (a `whsk_` signing key included),
 * `invalid_option`
 * for a negative tolerance, a body that is not the raw string or bytes (a Proxy of bytes included),
 * options that cannot be read (a getter that throws), or a clock whose time is not a finite number;
 * `unsupported_runtime` on a runtime without `node:crypto`
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
  const settings = readVerifyOptions(options, WEBHOOK_PUBLIC_KEYS);
  const raw = checkValue(RAW_BODY, body, 'verifyWebhook body');
  return verifyWith(settings, raw, headers);
}

/**
 * {@link verifyWebhook}, in a form that runs on every runtime: through `node:crypto` where the
 * runtime has it, else through WebCrypto (Cloudflare Workers without `nodejs_compat`, Vercel
 * Edge). The same verdicts, the same refusals (as a rejection).
 * @param body - the raw body exactly as received (verify before parsing it)
 * @param headers - the request headers (any case)
 * @example
 * ```ts
 * const verdict = await verifyWebhookAsync(rawBody, request.headers, { secrets: env.WEBHOOK_SECRET });
 * ```
 */
export async function verifyWebhookAsync(
  body: string | Uint8Array,
  headers: HeaderSource,
  options: VerifyWebhookOptions,
): Promise<WebhookVerification> {
  if (nodeBuiltin('node:crypto') !== undefined) return verifyWebhook(body, headers, options);
  return webCryptoVerifyWebhook(body, headers, options);
}

/** {@link verifyWebhook} through WebCrypto. @internal */
export async function webCryptoVerifyWebhook(
  body: string | Uint8Array,
  headers: HeaderSource,
  options: VerifyWebhookOptions,
): Promise<WebhookVerification> {
  const settings = readVerifyOptions(options, WEBHOOK_PUBLIC_KEY_BYTES_LIST);
  const raw = checkValue(RAW_BODY, body, 'verifyWebhook body');
  return webCryptoVerifyWith(settings, raw, headers);
}

/** The keys and settings of {@link verifyWebhook}, read once. @internal */
export interface VerifySettings<K = KeyObject> {
  /** HMAC keys of the secrets. */
  readonly secrets: readonly Uint8Array[];
  /** ed25519 public keys: node's key objects, or their bytes for WebCrypto. */
  readonly publicKeys: readonly K[];
  /** The receiver's clock. */
  readonly clock: Clock;
  /** The tolerance, in seconds. */
  readonly toleranceSeconds: number;
}

/** A delivery whose headers are all there and whose timestamp is within the tolerance. */
interface Delivery {
  readonly id: string;
  readonly timestamp: number;
  /** The signatures, split at the commas: the scheme, and the signature's base64. */
  readonly signatures: readonly (readonly [string, string])[];
}

// The checks before any signature: the headers, and the timestamp against the clock.
function deliveryOf(
  settings: VerifySettings<unknown>,
  headers: HeaderSource,
): Delivery | WebhookVerification {
  const { clock, toleranceSeconds } = settings;
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
  const signatures: (readonly [string, string])[] = [];
  for (const candidate of signature.split(' ').slice(0, MAX_SIGNATURES)) {
    const comma = candidate.indexOf(',');
    if (comma !== -1) signatures.push([candidate.slice(0, comma), candidate.slice(comma + 1)]);
  }
  return { id, timestamp, signatures };
}

function verdictOf(delivery: Delivery, matched: boolean, settings: VerifySettings<unknown>) {
  return matched
    ? ({ ok: true, id: delivery.id, timestamp: delivery.timestamp } as const)
    : refuse(
        'no_matching_signature',
        `No ${schemes(settings.secrets.length, settings.publicKeys.length)} signature matches a key in force: check the key, and verify the raw body before parsing it.`,
      );
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
  const delivery = deliveryOf(settings, headers);
  if ('ok' in delivery) return delivery;
  const { secrets: keys, publicKeys } = settings;
  const content = { id: delivery.id, timestamp: delivery.timestamp, body: raw };
  const expected = keys.map((key) => signatureDigest(key, content));
  let signed: Buffer | undefined;
  let matched = false;
  for (const [scheme, text] of delivery.signatures) {
    if (scheme === 'v1') {
      const given = Buffer.from(text, 'base64');
      for (const digest of expected) {
        // Compare every candidate: the time taken does not depend on which one matches.
        if (
          given.length === digest.length &&
          nodeCrypto('A v1 verification (verifyWebhook)').timingSafeEqual(given, digest)
        ) {
          matched = true;
        }
      }
    } else if (scheme === 'v1a' && publicKeys.length > 0 && !matched) {
      // A public signature needs no constant time: the first match is enough.
      const given = Buffer.from(text, 'base64');
      signed ??= signedContent(content);
      const bytes = signed;
      if (publicKeys.some((key) => isEd25519Signature(key, bytes, given))) matched = true;
    }
  }
  return verdictOf(delivery, matched, settings);
}

/** {@link verifyWith} through WebCrypto, the public keys as their bytes. @internal */
export async function webCryptoVerifyWith(
  settings: VerifySettings<Uint8Array>,
  raw: string | Uint8Array,
  headers: HeaderSource,
): Promise<WebhookVerification> {
  const delivery = deliveryOf(settings, headers);
  if ('ok' in delivery) return delivery;
  const { secrets: keys, publicKeys } = settings;
  const content = concatBytes([`${delivery.id}.${delivery.timestamp}.`, raw]);
  let expected: Uint8Array[] | undefined;
  let matched = false;
  for (const [scheme, text] of delivery.signatures) {
    if (scheme === 'v1' && keys.length > 0) {
      expected ??= await Promise.all(keys.map((key) => webCryptoHmac(key, [content])));
      const given = lenientBase64(text);
      for (const digest of expected) {
        // Compare every candidate: the time taken does not depend on which one matches.
        if (constantTimeEqual(given, digest)) matched = true;
      }
    } else if (scheme === 'v1a' && publicKeys.length > 0 && !matched) {
      // A public signature needs no constant time: the first match is enough.
      const given = lenientBase64(text);
      for (const key of publicKeys) {
        if (await webCryptoEd25519Verify(key, content, given)) {
          matched = true;
          break;
        }
      }
    }
  }
  return verdictOf(delivery, matched, settings);
}

/**
 * The verification of deliveries with keys read once (a receiver's): through `node:crypto` where
 * the runtime has it, else through WebCrypto. @internal
 */
export function deliveryVerifier(
  settings: VerifySettings<Uint8Array>,
): (raw: Uint8Array, headers: HeaderSource) => WebhookVerification | Promise<WebhookVerification> {
  if (nodeBuiltin('node:crypto') === undefined) {
    return (raw, headers) => webCryptoVerifyWith(settings, raw, headers);
  }
  const publicKeys = settings.publicKeys.map((bytes, index) =>
    checkValue(
      WEBHOOK_PUBLIC_KEY,
      `${WEBHOOK_PUBLIC_KEY_PREFIX}${encodeBase64(bytes)}`,
      `publicKeys[${index}]`,
    ),
  );
  const read: VerifySettings = { ...settings, publicKeys };
  return (raw, headers) => verifyWith(read, raw, headers);
}

// The signature's base64 as node's decoder reads it: characters outside the alphabet skipped,
// padding optional, base64url accepted; what it cannot read gives no bytes (and matches nothing).
function lenientBase64(text: string): Uint8Array {
  const cleaned = text
    .replace(/[^A-Za-z0-9+/\-_]/g, '')
    .replaceAll('-', '+')
    .replaceAll('_', '/');
  const whole = cleaned.slice(0, cleaned.length - (cleaned.length % 4 === 1 ? 1 : 0));
  try {
    return decodeBase64(whole + '='.repeat((4 - (whole.length % 4)) % 4));
  } catch {
    return new Uint8Array(0);
  }
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
