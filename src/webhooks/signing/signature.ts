/**
 * Signing per the Standard Webhooks specification, one signature per key: `v1` (HMAC-SHA256) for
 * each `whsec_` secret, `v1a` (ed25519) for each `whsk_` signing key. @module
 */
import type { KeyObject } from 'node:crypto';
import { concatBytes, decodeBase64, encodeBase64 } from '../../internal/base64.js';
import { nodeBuiltin } from '../../internal/node-builtin.js';
import {
  aFunction,
  checkValue,
  INVALID,
  listOf,
  type Rule,
  wholeNumber,
  withFields,
  worded,
} from '../../internal/options.js';
import { randomBytes } from '../../internal/random.js';
import { isBytes } from '../../internal/read-once.js';
import { hmacSha256, hmacSha256Base64 } from '../../internal/sha256.js';
import type { SigningSeed } from './ed25519-bytes.js';
import { secretRule, secretSize } from './secret-rule.js';
import {
  ed25519Signature,
  mismatchedSigningKey,
  WEBHOOK_SIGNING_KEY,
  WEBHOOK_SIGNING_KEY_PREFIX,
  WEBHOOK_SIGNING_SEED,
} from './signing-key.js';
import { webCryptoEd25519Sign, webCryptoHmac } from './web-crypto.js';

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
  /**
   * Space-separated signatures, one per key: `v1,<base64>` for a secret, `v1a,<base64>` for a
   * signing key.
   */
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

const RANDOM_SOURCE = aFunction<(size: number) => Uint8Array>(
  'returns that many random bytes, (size) => Uint8Array, such as crypto.randomBytes',
);

// The bytes become the secret: a refusal shows their number only.
const RANDOM_KEY = secretRule<Uint8Array>({
  expected: `a Uint8Array of the ${GENERATED_SECRET_BYTES} bytes asked for`,
  read: (value) => (isBytes(value) && value.length === GENERATED_SECRET_BYTES ? value : INVALID),
});

/**
 * A new random secret, `whsec_` and 32 random bytes in base64.
 * @param bytes - called with 32, returns exactly 32 random bytes.
 *   @defaultValue WebCrypto's `crypto.getRandomValues`
 * @throws ConfigurationError `invalid_option` when `bytes` is not a function or does not return
 * a Uint8Array of the 32 bytes asked for
 * @example
 * ```ts
 * generateWebhookSecret(); // 'whsec_V0zZ...='
 * ```
 */
export function generateWebhookSecret(bytes: (size: number) => Uint8Array = randomBytes): string {
  const source = checkValue(RANDOM_SOURCE, bytes, 'generateWebhookSecret bytes');
  const key = checkValue(
    RANDOM_KEY,
    source(GENERATED_SECRET_BYTES),
    'generateWebhookSecret bytes(32)',
  );
  return `${WEBHOOK_SECRET_PREFIX}${encodeBase64(key)}`;
}

// A refused secret shows its length only, after the prefix when it has one.
function secretLength(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith(WEBHOOK_SECRET_PREFIX)) {
    return secretSize(value);
  }
  return `${WEBHOOK_SECRET_PREFIX} and ${value.length - WEBHOOK_SECRET_PREFIX.length} characters`;
}

/** One webhook secret read into its key bytes. @internal */
export const WEBHOOK_SECRET: Rule<Uint8Array> = secretRule(
  {
    expected: `${WEBHOOK_SECRET_PREFIX} and the base64 of ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} random bytes (${MIN_BASE64_LENGTH} to ${MAX_BASE64_LENGTH} characters; generateWebhookSecret() makes one)`,
    code: 'invalid_webhook_secret',
    read(value) {
      if (typeof value !== 'string') return INVALID;
      const text = value.startsWith(WEBHOOK_SECRET_PREFIX)
        ? value.slice(WEBHOOK_SECRET_PREFIX.length)
        : value;
      if (text.length < MIN_BASE64_LENGTH || text.length > MAX_BASE64_LENGTH) return INVALID;
      const size = (text.length / 4) * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);
      if (
        !BASE64.test(text) ||
        size < WEBHOOK_SECRET_BYTES.min ||
        size > WEBHOOK_SECRET_BYTES.max
      ) {
        return INVALID;
      }
      return decodeBase64(text);
    },
  },
  secretLength,
);

const SECRET_LIST = worded(
  listOf(WEBHOOK_SECRET, 1),
  'a non-empty array of webhook secrets (two while rotating: the new one and the old one)',
);

/**
 * The secrets to sign or verify with, each read into its key bytes: one secret, or several while
 * rotating. @internal
 */
export const WEBHOOK_SECRETS: Rule<Uint8Array[]> = {
  expected: `a webhook secret (${WEBHOOK_SECRET_PREFIX}…), or a non-empty array of them (two while rotating: the new one and the old one)`,
  code: 'invalid_webhook_secret',
  read: (value, name) =>
    typeof value === 'string'
      ? [checkValue(WEBHOOK_SECRET, value, name)]
      : SECRET_LIST.read(value, name),
};

/**
 * The key bytes of a secret, written `whsec_<base64>` (the prefix may be left out).
 * @throws ConfigurationError `invalid_webhook_secret` when it is not base64 of 24 to 64 bytes
 *   (the message gives its length, never the secret)
 */
export function webhookSecretKey(secret: string): Uint8Array {
  return checkValue(WEBHOOK_SECRET, secret, 'webhook secret');
}

/** The raw HMAC-SHA256 of `id.timestamp.body` (the input checked by the caller). */
export function signatureDigest(key: Uint8Array, input: SignInput): Uint8Array {
  return hmacSha256(key, `${input.id}.${input.timestamp}.`, input.body);
}

/** {@link signatureDigest} in base64, as a `v1` signature carries it. */
function signatureBase64(key: Uint8Array, input: SignInput): string {
  return hmacSha256Base64(key, `${input.id}.${input.timestamp}.`, input.body);
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

/** A `webhook-id`: {@link isWebhookId}. @internal */
export const WEBHOOK_ID: Rule<string> = {
  expected: WEBHOOK_ID_RULE,
  read: (value) => (isWebhookId(value) ? value : INVALID),
};

/**
 * A body to sign or verify: the raw bytes, never the parsed JSON. `ArrayBuffer.isView` first: a
 * Proxy of bytes passes `instanceof` but is no bytes to hash. @internal
 */
export const RAW_BODY: Rule<string | Uint8Array> = {
  expected:
    'the raw body as sent, a string or a Uint8Array such as a Buffer (not the parsed JSON: serialising it again changes the bytes; wrap an ArrayBuffer with new Uint8Array(arrayBuffer))',
  read: (value) => (typeof value === 'string' || isBytes(value) ? value : INVALID),
};

const SIGN_INPUT = withFields(['id', 'timestamp', 'body'], 'an object { id, timestamp, body }');
const TIMESTAMP = worded(wholeNumber(0), 'whole seconds since the epoch, a whole number from 0');

/** A key read for signing: a secret's HMAC key bytes, or a signing key's ed25519 private key. */
type SigningKey = Uint8Array | KeyObject;

/** A key read for signing through WebCrypto: a secret's key bytes, or a signing key's seed. */
type SigningMaterial = Uint8Array | SigningSeed;

// The keys of either kind, told apart by their prefix as the specification means them to be; a
// signing key read by `signingKey` (node's private key, or the seed for WebCrypto).
function signingKeysRule<K>(signingKey: Rule<K>): Rule<(K | Uint8Array)[]> {
  const one: Rule<K | Uint8Array> = {
    expected: `a webhook secret (${WEBHOOK_SECRET_PREFIX}…) or a signing key (${WEBHOOK_SIGNING_KEY_PREFIX}…)`,
    code: 'invalid_webhook_secret',
    read: (value, name) =>
      typeof value === 'string' && value.startsWith(WEBHOOK_SIGNING_KEY_PREFIX)
        ? checkValue(signingKey, value, name)
        : checkValue(WEBHOOK_SECRET, value, name),
  };
  const list = worded(
    listOf(one, 1),
    `a non-empty array of webhook secrets (${WEBHOOK_SECRET_PREFIX}…) or signing keys (${WEBHOOK_SIGNING_KEY_PREFIX}…), two while rotating: the new one and the old one`,
  );
  return {
    expected: `a webhook secret (${WEBHOOK_SECRET_PREFIX}…) or signing key (${WEBHOOK_SIGNING_KEY_PREFIX}…), or a non-empty array of them (two while rotating: the new one and the old one)`,
    code: 'invalid_webhook_secret',
    read: (value, name) =>
      typeof value === 'string' ? [checkValue(one, value, name)] : list.read(value, name),
  };
}

/** The keys to sign with, each read: one, or several while rotating. @internal */
export const SIGNING_KEYS: Rule<SigningKey[]> = signingKeysRule(WEBHOOK_SIGNING_KEY);

// The keys of frozen lists of secrets, read once each: such a list reads the same every time (the
// webhook service hands its deliverer the same frozen list for each attempt of a subscription).
const FROZEN_KEYS = new WeakMap<readonly string[], readonly SigningKey[]>();

/** The keys to sign with, read (once for a frozen list). */
function signingKeysOf(keys: string | readonly string[]): readonly SigningKey[] {
  if (!frozenList(keys)) return checkValue(SIGNING_KEYS, keys, 'secrets');
  let read = FROZEN_KEYS.get(keys);
  if (read === undefined) {
    read = checkValue(SIGNING_KEYS, keys, 'secrets');
    FROZEN_KEYS.set(keys, read);
  }
  return read;
}

function frozenList(keys: unknown): keys is readonly string[] {
  try {
    return Array.isArray(keys) && Object.isFrozen(keys);
  } catch {
    return false; // a revoked proxy: read (and refused) as any other value
  }
}

const SIGNING_MATERIALS: Rule<SigningMaterial[]> = signingKeysRule(WEBHOOK_SIGNING_SEED);

// What is signed, each field read once: what is checked is what is signed.
function signedInput(input: SignInput, name: string): SignInput {
  const fields = checkValue(SIGN_INPUT, input, `${name} input`);
  return {
    id: checkValue(WEBHOOK_ID, fields.id, 'input.id'),
    timestamp: checkValue(TIMESTAMP, fields.timestamp, 'input.timestamp'),
    body: checkValue(RAW_BODY, fields.body, 'input.body'),
  };
}

function headersOf(signed: SignInput, signatures: readonly string[]): WebhookHeaders {
  return {
    'webhook-id': signed.id,
    'webhook-timestamp': String(signed.timestamp),
    'webhook-signature': signatures.join(' '),
  };
}

/**
 * Sign a message with every key in force: the headers to send with the body. Each `whsec_` secret
 * adds a `v1` signature (HMAC-SHA256), each `whsk_` signing key a `v1a` one (ed25519), in the
 * order given; a rotation from one kind to the other signs with both for a while. Secrets sign on
 * every runtime; a signing key needs `node:crypto`: {@link signWebhookAsync} runs everywhere.
 * @param keys - one secret or signing key, or several while rotating (the new one and the old one)
 * @throws ConfigurationError `invalid_webhook_secret` for a malformed secret or no key,
 * `invalid_webhook_signing_key` for a malformed signing key (either shown by its length, never its
 * text), `invalid_option` for an input that is no object or whose fields cannot be read (a getter
 * that throws), an id with spaces or commas, a timestamp that is no whole number, or a body that is
 * neither a string nor a Uint8Array; `unsupported_runtime` for a signing key on a runtime without
 * `node:crypto`
 * @example
 * ```ts
 * const headers = signWebhook({ id: 'msg_1', timestamp: 1614265330, body }, [secret]);
 * // During a move to asymmetric signatures: both a v1 and a v1a signature.
 * signWebhook({ id: 'msg_1', timestamp: 1614265330, body }, [signingKey, secret]);
 * ```
 */
export function signWebhook(input: SignInput, keys: string | readonly string[]): WebhookHeaders {
  const read = signingKeysOf(keys);
  const signed = signedInput(input, 'signWebhook');
  const signatures = read.map((key) =>
    key instanceof Uint8Array
      ? `v1,${signatureBase64(key, signed)}`
      : `v1a,${ed25519Signature(key, signed).toString('base64')}`,
  );
  return headersOf(signed, signatures);
}

/**
 * {@link signWebhook}, in a form that runs on every runtime: through `node:crypto` where the
 * runtime has it, else through WebCrypto (Cloudflare Workers without `nodejs_compat`, Vercel
 * Edge). The same headers, the same refusals (as a rejection).
 * @param keys - one secret or signing key, or several while rotating (the new one and the old one)
 * @example
 * ```ts
 * const headers = await signWebhookAsync({ id: 'msg_1', timestamp: 1614265330, body }, [secret]);
 * ```
 */
export async function signWebhookAsync(
  input: SignInput,
  keys: string | readonly string[],
): Promise<WebhookHeaders> {
  return nodeBuiltin('node:crypto') === undefined
    ? webCryptoSignWebhook(input, keys)
    : signWebhook(input, keys);
}

/** {@link signWebhook} through WebCrypto. @internal */
export async function webCryptoSignWebhook(
  input: SignInput,
  keys: string | readonly string[],
): Promise<WebhookHeaders> {
  const read = checkValue(SIGNING_MATERIALS, keys, 'secrets');
  const signed = signedInput(input, 'signWebhook');
  const content = concatBytes([`${signed.id}.${signed.timestamp}.`, signed.body]);
  const signatures = await Promise.all(
    read.map(async (key, index) => {
      if (key instanceof Uint8Array) {
        return `v1,${encodeBase64(await webCryptoHmac(key, [content]))}`;
      }
      const signature = await webCryptoEd25519Sign(key, content);
      if (signature === undefined) {
        throw mismatchedSigningKey(key, typeof keys === 'string' ? 'secrets' : `secrets[${index}]`);
      }
      return `v1a,${encodeBase64(signature)}`;
    }),
  );
  return headersOf(signed, signatures);
}
