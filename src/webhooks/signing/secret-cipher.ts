/**
 * Signing secrets at rest: AES-256-GCM under named keys, the first key encrypting and every key
 * decrypting, so that keys can be rotated (see docs/postgres.md). @module
 */
import { SecretCipherError } from '../../errors/secret-cipher-error.js';
import { nodeCrypto } from '../../internal/node-builtin.js';
import {
  INVALID,
  invalidValue,
  listOf,
  optionsOf,
  type Rule,
  readOptions,
  refused,
  requiredValue,
} from '../../internal/options.js';
import { isInstance } from '../../internal/read-once.js';
import { secretRule, secretSize } from './secret-rule.js';

/**
 * Turns a signing secret into the text a repository stores, and back. `context` (the account and
 * the subscription id) is bound into the stored text, so that text copied to another subscription
 * does not decrypt there.
 */
export interface SecretCipher {
  /** The id of the key that encrypts. */
  readonly keyId: string;
  /** The stored form of `secret`, naming the key that encrypted it. */
  encrypt(secret: string, context: string): string;
  /**
   * The secret of a stored form.
   * @throws SecretCipherError `unknown_secret_key`, `secret_not_authentic` or
   *   `malformed_stored_secret`
   */
  decrypt(stored: string, context: string): string;
  /** The id of the key a stored form names, or `undefined` for text this cipher did not write. */
  keyIdOf(stored: string): string | undefined;
}

/** One key of {@link aesGcmSecretCipher}. */
export interface SecretKey {
  /** Its name, kept beside each secret it encrypts: letters, digits, `_` and `-`, 1 to 64. */
  readonly id: string;
  /** 32 random bytes, or their base64 (e.g. `openssl rand -base64 32`). */
  readonly key: Uint8Array | string;
}

/** How {@link aesGcmSecretCipher} is set up. */
export interface AesGcmSecretCipherOptions {
  /** The keys, newest first: the first encrypts, every one decrypts. */
  readonly keys: readonly SecretKey[];
}

const FORMAT = 'gcm1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

const keyIdRule: Rule<string> = {
  expected: 'a key id of 1 to 64 letters, digits, "_" or "-"',
  read: (value) => (typeof value === 'string' && KEY_ID.test(value) ? value : INVALID),
};

// A refused key is described by its length only: the message must never show key material.
const keyRule: Rule<Buffer> = secretRule(
  {
    expected: `${KEY_BYTES} bytes: a Buffer, or a base64 string of ${KEY_BYTES} random bytes (openssl rand -base64 32)`,
    read(value) {
      const bytes = keyBytes(value);
      return bytes?.length === KEY_BYTES ? bytes : INVALID;
    },
  },
  (value) => {
    if (typeof value !== 'string') return secretSize(value);
    const bytes = keyBytes(value);
    return bytes === undefined
      ? `a string of ${value.length} characters that is not base64`
      : `base64 of ${bytes.length} bytes`;
  },
);

function keyBytes(value: unknown): Buffer | undefined {
  if (isInstance(value, Uint8Array)) return Buffer.from(value);
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  return BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
}

// Two keys of one id: a stored secret would name a key that is not the one that encrypted it.
const uniqueKeyId = 'an id no earlier key has (give each key an id of its own)';

/**
 * The rule of a list of keys, newest first, each read and checked (used by the repositories'
 * `secretKeys` option too). @internal
 */
export const SECRET_KEYS: Rule<readonly { readonly id: string; readonly key: Buffer }[]> = (() => {
  const list = listOf(
    optionsOf({ id: keyIdRule, key: keyRule }, "{ id: '2025-01', key: process.env.SECRET_KEY }"),
    1,
  );
  return {
    expected: list.expected,
    read(value, name) {
      const keys = list.read(value, name);
      if (keys === INVALID) return INVALID;
      const read = keys.map(({ id, key }, index) => ({
        id: requiredValue(keyIdRule, id, `${name}[${index}].id`),
        key: requiredValue(keyRule, key, `${name}[${index}].key`),
      }));
      read.forEach(({ id }, index) => {
        if (read.findIndex((other) => other.id === id) !== index) {
          throw refused(`${name}[${index}].id`, uniqueKeyId, id);
        }
      });
      return read;
    },
  };
})();

const RULES = { keys: SECRET_KEYS };

/**
 * A {@link SecretCipher} with AES-256-GCM: a fresh 96-bit IV per secret, the 128-bit tag checked on
 * every decrypt. Rotate keys by putting a new key first: secrets stored under the older ones still
 * decrypt, and a repository's `reencryptSecrets()` moves them to the new one. Encrypting and
 * decrypting need `node:crypto` (Node, Bun, Deno, Workers with `nodejs_compat`).
 * @throws ConfigurationError `invalid_option` for no keys, a key that is not 32 bytes, a bad or
 *   repeated key id
 * @example
 * ```ts
 * import { randomBytes } from 'node:crypto';
 * const cipher = aesGcmSecretCipher({ keys: [{ id: '2025-01', key: randomBytes(32) }] });
 * const stored = cipher.encrypt('whsec_...', 'ACME/sub-1');
 * cipher.decrypt(stored, 'ACME/sub-1'); // 'whsec_...'
 * ```
 */
export function aesGcmSecretCipher(options: AesGcmSecretCipherOptions): SecretCipher {
  const read = readOptions(options, 'aesGcmSecretCipher', RULES, {
    required: true,
    example: "{ keys: [{ id: '2025-01', key: process.env.SECRET_KEY }] }",
  });
  return cipherOf(requiredValue(RULES.keys, read.keys, 'keys'));
}

/** The cipher of keys read by {@link SECRET_KEYS}. @internal */
export function cipherOf(
  keys: readonly { readonly id: string; readonly key: Buffer }[],
): SecretCipher {
  const byId = new Map(keys.map(({ id, key }) => [id, key]));
  const [newest] = keys;
  if (newest === undefined) throw invalidValue(SECRET_KEYS, keys, 'keys');
  const { id: keyId, key } = newest;
  return Object.freeze({
    keyId,
    encrypt(secret: string, context: string): string {
      const crypto = nodeCrypto('Encrypting a secret');
      const iv = crypto.randomBytes(IV_BYTES);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const sealed = Buffer.concat([
        cipher.update(secret, 'utf8'),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return `${FORMAT}.${keyId}.${iv.toString('base64url')}.${sealed.toString('base64url')}`;
    },
    decrypt(stored: string, context: string): string {
      const parts = parse(stored);
      const found = byId.get(parts.keyId);
      if (found === undefined) {
        throw new SecretCipherError(
          'unknown_secret_key',
          `The secret was encrypted under key "${parts.keyId}", which is not among the configured keys (${[...byId.keys()].join(', ')}); add that key after the newest.`,
        );
      }
      try {
        const decipher = nodeCrypto('Decrypting a secret').createDecipheriv(
          'aes-256-gcm',
          found,
          parts.iv,
          {
            authTagLength: TAG_BYTES,
          },
        );
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(parts.sealed.subarray(parts.sealed.length - TAG_BYTES));
        const body = parts.sealed.subarray(0, parts.sealed.length - TAG_BYTES);
        return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
      } catch (cause) {
        throw new SecretCipherError(
          'secret_not_authentic',
          `The secret stored under key "${parts.keyId}" does not authenticate: it was changed, moved from another subscription, or that key id now names another key.`,
          { cause },
        );
      }
    },
    keyIdOf(stored: string): string | undefined {
      try {
        return parse(stored).keyId;
      } catch {
        return undefined;
      }
    },
  });
}

/** The parts of a stored form: `gcm1.<key id>.<iv>.<ciphertext and tag>`, base64url. */
function parse(stored: string): { keyId: string; iv: Buffer; sealed: Buffer } {
  const parts = typeof stored === 'string' ? stored.split('.') : [];
  const [format, keyId, iv, sealed] = parts;
  if (
    parts.length === 4 &&
    format === FORMAT &&
    keyId !== undefined &&
    KEY_ID.test(keyId) &&
    iv !== undefined &&
    sealed !== undefined &&
    BASE64URL.test(iv) &&
    BASE64URL.test(sealed)
  ) {
    const ivBytes = Buffer.from(iv, 'base64url');
    const sealedBytes = Buffer.from(sealed, 'base64url');
    if (ivBytes.length === IV_BYTES && sealedBytes.length >= TAG_BYTES) {
      return { keyId, iv: ivBytes, sealed: sealedBytes };
    }
  }
  throw new SecretCipherError(
    'malformed_stored_secret',
    `The stored secret is not in the form ${FORMAT}.<key id>.<iv>.<ciphertext>; it was not written by this cipher.`,
  );
}
