/**
 * Asymmetric Standard Webhooks signatures (`v1a`, ed25519): the key pair, its text forms
 * `whsk_` (the signing key) and `whpk_` (the public key), and the signature itself. @module
 */

import type { KeyObject } from 'node:crypto';
import type { ConfigurationError } from '../../errors/configuration-error.js';
import { concatBytes, decodeBase64, encodeBase64 } from '../../internal/base64.js';
import { setBounded } from '../../internal/bounded-map.js';
import { nodeBuiltin, nodeCrypto } from '../../internal/node-builtin.js';
import { aFunction, checkValue, INVALID, mustBe, type Rule } from '../../internal/options.js';
import { randomBytes } from '../../internal/random.js';
import { isBytes } from '../../internal/read-once.js';
import { constantTimeEqual } from '../../internal/sha256.js';
import { PKCS8_PREFIX, type SigningSeed, SPKI_PREFIX } from './ed25519-bytes.js';
import { secretRule, secretSize } from './secret-rule.js';
import { webCryptoPublicKey } from './web-crypto.js';

/** The prefix of a signing key (an ed25519 private key): `whsk_`. */
export const WEBHOOK_SIGNING_KEY_PREFIX = 'whsk_';

/** The prefix of a public key (an ed25519 public key): `whpk_`. */
export const WEBHOOK_PUBLIC_KEY_PREFIX = 'whpk_';

/** A signing key and the public key that verifies what it signs. */
export interface WebhookKeyPair {
  /** `whsk_` and the base64 of the 32-byte ed25519 seed: kept by the sender, never shown. */
  readonly signingKey: string;
  /** `whpk_` and the base64 of the 32-byte ed25519 public key: handed to receivers. */
  readonly publicKey: string;
}

const SEED_BYTES = 32;
// Base64 of 32 bytes: 43 characters and one `=`; of 64 bytes (seed and public key, as some
// senders store the pair): 86 and two.
const BASE64_32 = /^[A-Za-z0-9+/]{43}=$/;
const BASE64_64 = /^[A-Za-z0-9+/]{86}==$/;
// The DER of an ed25519 key with the raw bytes at the end (RFC 8410): PKCS#8 for the seed, SPKI
// for the public key.

// Reading a key into OpenSSL costs far more than a signature with it (an ed25519 private key
// derives its public point: about 15 times a signature), and the deliverer reads its keys at
// every attempt: the keys read last are kept, by their text, a bounded number of each kind.
const CACHED_KEYS = 1024;
const privateKeys = new Map<string, KeyObject>();
const publicKeys = new Map<string, KeyObject>();

function cached(
  cache: Map<string, KeyObject>,
  text: string,
  read: () => KeyObject | typeof INVALID,
): KeyObject | typeof INVALID {
  const found = cache.get(text);
  if (found !== undefined) return found;
  const key = read();
  if (key === INVALID) return INVALID;
  setBounded(cache, text, key, CACHED_KEYS);
  return key;
}

function privateKeyOf(seed: Uint8Array): KeyObject {
  return nodeCrypto('An ed25519 key (whsk_, whpk_)').createPrivateKey({
    key: Buffer.from(concatBytes([PKCS8_PREFIX, seed])),
    format: 'der',
    type: 'pkcs8',
  });
}

function rawPublicKey(key: KeyObject): Buffer {
  return nodeCrypto('An ed25519 key (whsk_, whpk_)')
    .createPublicKey(key)
    .export({ format: 'der', type: 'spki' })
    .subarray(SPKI_PREFIX.length);
}

// A refused key shows its prefix and its length only: never key material in a message.
function keyLength(prefix: string): (value: unknown) => string {
  return (value) =>
    typeof value === 'string' && value.startsWith(prefix)
      ? `${prefix} and ${value.length - prefix.length} characters`
      : secretSize(value);
}

// The form of a signing key, read without any cryptography.
function seedOf(value: unknown): SigningSeed | typeof INVALID {
  if (typeof value !== 'string' || !value.startsWith(WEBHOOK_SIGNING_KEY_PREFIX)) return INVALID;
  const text = value.slice(WEBHOOK_SIGNING_KEY_PREFIX.length);
  const shown = keyLength(WEBHOOK_SIGNING_KEY_PREFIX)(value);
  if (BASE64_32.test(text)) return { seed: decodeBase64(text), publicHalf: undefined, shown };
  if (!BASE64_64.test(text)) return INVALID;
  const pair = decodeBase64(text);
  return { seed: pair.subarray(0, SEED_BYTES), publicHalf: pair.subarray(SEED_BYTES), shown };
}

// The form of a public key, read without any cryptography.
function publicBytesOf(value: unknown): Uint8Array | typeof INVALID {
  if (typeof value !== 'string' || !value.startsWith(WEBHOOK_PUBLIC_KEY_PREFIX)) return INVALID;
  const text = value.slice(WEBHOOK_PUBLIC_KEY_PREFIX.length);
  return BASE64_32.test(text) ? decodeBase64(text) : INVALID;
}

const SIGNING_KEY_EXPECTED = `${WEBHOOK_SIGNING_KEY_PREFIX} and the base64 of a 32-byte ed25519 seed (44 characters; generateWebhookKeyPair() makes one)`;
const PUBLIC_KEY_EXPECTED = `${WEBHOOK_PUBLIC_KEY_PREFIX} and the base64 of a 32-byte ed25519 public key (44 characters; webhookPublicKeyOf(signingKey) gives it)`;

/**
 * The refusal of a signing key whose public half is not its seed's own, as the synchronous rule
 * words it. @internal
 */
export function mismatchedSigningKey(key: SigningSeed, name: string): ConfigurationError {
  return mustBe(name, SIGNING_KEY_EXPECTED, key.shown, 'invalid_webhook_signing_key');
}

/** A `whsk_` signing key read into the private key that signs (node:crypto). @internal */
export const WEBHOOK_SIGNING_KEY: Rule<KeyObject> = secretRule(
  {
    expected: SIGNING_KEY_EXPECTED,
    code: 'invalid_webhook_signing_key',
    read(value) {
      if (typeof value !== 'string') return INVALID;
      return cached(privateKeys, value, () => {
        const read = seedOf(value);
        if (read === INVALID) return INVALID;
        const key = privateKeyOf(read.seed);
        // The seed and its public key: taken only when the public half is the seed's own.
        return read.publicHalf === undefined ||
          constantTimeEqual(rawPublicKey(key), read.publicHalf)
          ? key
          : INVALID;
      });
    },
  },
  keyLength(WEBHOOK_SIGNING_KEY_PREFIX),
);

/**
 * A `whsk_` signing key read into its bytes, without cryptography (the WebCrypto forms check the
 * public half when they sign). @internal
 */
export const WEBHOOK_SIGNING_SEED: Rule<SigningSeed> = secretRule(
  { expected: SIGNING_KEY_EXPECTED, code: 'invalid_webhook_signing_key', read: seedOf },
  keyLength(WEBHOOK_SIGNING_KEY_PREFIX),
);

// The signing key in place of the public one: a mistake worth naming, as the key is secret.
function publicKeyGiven(value: unknown): string {
  return typeof value === 'string' && value.startsWith(WEBHOOK_SIGNING_KEY_PREFIX)
    ? `a signing key (${WEBHOOK_SIGNING_KEY_PREFIX}…), which must stay with the sender: give webhookPublicKeyOf(signingKey)`
    : keyLength(WEBHOOK_PUBLIC_KEY_PREFIX)(value);
}

/** A `whpk_` public key read into the key that verifies (node:crypto). @internal */
export const WEBHOOK_PUBLIC_KEY: Rule<KeyObject> = secretRule(
  {
    expected: PUBLIC_KEY_EXPECTED,
    code: 'invalid_webhook_public_key',
    read(value) {
      if (typeof value !== 'string') return INVALID;
      return cached(publicKeys, value, () => {
        const bytes = publicBytesOf(value);
        if (bytes === INVALID) return INVALID;
        try {
          return nodeCrypto('An ed25519 key (whsk_, whpk_)').createPublicKey({
            key: Buffer.from(concatBytes([SPKI_PREFIX, bytes])),
            format: 'der',
            type: 'spki',
          });
        } catch {
          return INVALID;
        }
      });
    },
  },
  publicKeyGiven,
);

/** A `whpk_` public key read into its 32 bytes, without cryptography. @internal */
export const WEBHOOK_PUBLIC_KEY_BYTES: Rule<Uint8Array> = secretRule(
  { expected: PUBLIC_KEY_EXPECTED, code: 'invalid_webhook_public_key', read: publicBytesOf },
  publicKeyGiven,
);

const RANDOM_SOURCE = aFunction<(size: number) => Uint8Array>(
  'returns that many random bytes, (size) => Uint8Array, such as crypto.randomBytes',
);

const RANDOM_SEED = secretRule<Uint8Array>({
  expected: `a Uint8Array of the ${SEED_BYTES} bytes asked for`,
  read: (value) => (isBytes(value) && value.length === SEED_BYTES ? value : INVALID),
});

/**
 * A new ed25519 key pair for `v1a` signatures: the sender signs with `signingKey`, receivers
 * verify with `publicKey`. Needs `node:crypto`: {@link generateWebhookKeyPairAsync} runs on every
 * runtime.
 * @param bytes - called with 32, returns exactly 32 random bytes (the seed).
 *   @defaultValue WebCrypto's `crypto.getRandomValues`
 * @throws ConfigurationError `invalid_option` when `bytes` is not a function or does not return
 *   a Uint8Array of the 32 bytes asked for; `unsupported_runtime` on a runtime without
 *   `node:crypto`
 * @example
 * ```ts
 * const { signingKey, publicKey } = generateWebhookKeyPair();
 * // signingKey: 'whsk_...' (keep it secret), publicKey: 'whpk_...' (give it to the receiver)
 * ```
 */
export function generateWebhookKeyPair(
  bytes: (size: number) => Uint8Array = randomBytes,
): WebhookKeyPair {
  const source = checkValue(RANDOM_SOURCE, bytes, 'generateWebhookKeyPair bytes');
  const seed = checkValue(RANDOM_SEED, source(SEED_BYTES), 'generateWebhookKeyPair bytes(32)');
  const key = privateKeyOf(seed);
  return {
    signingKey: `${WEBHOOK_SIGNING_KEY_PREFIX}${encodeBase64(seed)}`,
    publicKey: `${WEBHOOK_PUBLIC_KEY_PREFIX}${encodeBase64(rawPublicKey(key))}`,
  };
}

/**
 * {@link generateWebhookKeyPair}, in a form that runs on every runtime: through `node:crypto`
 * where the runtime has it, else through WebCrypto. The same pair for the same seed.
 * @param bytes - called with 32, returns exactly 32 random bytes (the seed).
 *   @defaultValue WebCrypto's `crypto.getRandomValues`
 * @example
 * ```ts
 * const { signingKey, publicKey } = await generateWebhookKeyPairAsync();
 * ```
 */
export async function generateWebhookKeyPairAsync(
  bytes: (size: number) => Uint8Array = randomBytes,
): Promise<WebhookKeyPair> {
  if (nodeBuiltin('node:crypto') !== undefined) return generateWebhookKeyPair(bytes);
  const source = checkValue(RANDOM_SOURCE, bytes, 'generateWebhookKeyPair bytes');
  const seed = checkValue(RANDOM_SEED, source(SEED_BYTES), 'generateWebhookKeyPair bytes(32)');
  return {
    signingKey: `${WEBHOOK_SIGNING_KEY_PREFIX}${encodeBase64(seed)}`,
    publicKey: `${WEBHOOK_PUBLIC_KEY_PREFIX}${encodeBase64(await webCryptoPublicKey(seed))}`,
  };
}

/**
 * The public key (`whpk_…`) of a signing key (`whsk_…`), to hand to receivers. Needs
 * `node:crypto`: {@link webhookPublicKeyOfAsync} runs on every runtime.
 * @throws ConfigurationError `invalid_webhook_signing_key` when it is not `whsk_` and the base64
 *   of a 32-byte seed (the message gives its length, never the key); `unsupported_runtime` on a
 *   runtime without `node:crypto`
 * @example
 * ```ts
 * webhookPublicKeyOf(process.env.WEBHOOK_SIGNING_KEY!); // 'whpk_...'
 * ```
 */
export function webhookPublicKeyOf(signingKey: string): string {
  const key = checkValue(WEBHOOK_SIGNING_KEY, signingKey, 'signing key');
  return `${WEBHOOK_PUBLIC_KEY_PREFIX}${encodeBase64(rawPublicKey(key))}`;
}

/**
 * {@link webhookPublicKeyOf}, in a form that runs on every runtime: through `node:crypto` where
 * the runtime has it, else through WebCrypto.
 * @example
 * ```ts
 * await webhookPublicKeyOfAsync(env.WEBHOOK_SIGNING_KEY); // 'whpk_...'
 * ```
 */
export async function webhookPublicKeyOfAsync(signingKey: string): Promise<string> {
  if (nodeBuiltin('node:crypto') !== undefined) return webhookPublicKeyOf(signingKey);
  const read = checkValue(WEBHOOK_SIGNING_SEED, signingKey, 'signing key');
  const own = await webCryptoPublicKey(read.seed);
  if (read.publicHalf !== undefined && !constantTimeEqual(own, read.publicHalf)) {
    throw mismatchedSigningKey(read, 'signing key');
  }
  return `${WEBHOOK_PUBLIC_KEY_PREFIX}${encodeBase64(own)}`;
}

/** The ed25519 signature of `id.timestamp.body` (the input checked by the caller). @internal */
export function ed25519Signature(
  key: KeyObject,
  content: { readonly id: string; readonly timestamp: number; readonly body: string | Uint8Array },
): Buffer {
  return nodeCrypto('A v1a signature (signWebhook)').sign(null, signedContent(content), key);
}

/** Whether `signature` is the ed25519 signature of `id.timestamp.body` under `key`. @internal */
export function isEd25519Signature(
  key: KeyObject,
  content: Buffer,
  signature: Uint8Array,
): boolean {
  return (
    signature.length === 64 &&
    nodeCrypto('A v1a verification (verifyWebhook)').verify(null, content, key, signature)
  );
}

/** The bytes a signature covers: `{id}.{timestamp}.{body}`. @internal */
export function signedContent(content: {
  readonly id: string;
  readonly timestamp: number;
  readonly body: string | Uint8Array;
}): Buffer {
  const head = `${content.id}.${content.timestamp}.`;
  return typeof content.body === 'string'
    ? Buffer.from(head + content.body, 'utf8')
    : Buffer.concat([Buffer.from(head, 'utf8'), content.body]);
}
