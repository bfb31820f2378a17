/**
 * Signing secrets at rest: AES-256-GCM under named keys, the first key encrypting and every key
 * decrypting, so that keys can be rotated (see docs/postgres.md). Two forms write and read one
 * stored format: `aesGcmSecretCipher` through `node:crypto`, synchronous, and
 * `aesGcmSecretCipherAsync` through WebCrypto, on every runtime. @module
 */
import { SecretCipherError } from '../../errors/secret-cipher-error.js';
import {
  concatBytes,
  decodeBase64,
  decodeBase64Url,
  encodeBase64Url,
  utf8,
} from '../../internal/base64.js';
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
import { randomBytes } from '../../internal/random.js';
import { isBytes } from '../../internal/read-once.js';
import { secretRule, secretSize } from './secret-rule.js';
import { webCryptoAesGcmOpen, webCryptoAesGcmSeal, webCryptoAesKey } from './web-crypto.js';

/**
 * Turns a signing secret into the text a repository stores, and back. `context` (the account and
 * the subscription id) is bound into the stored text, so that text copied to another subscription
 * does not decrypt there. `encrypt` and `decrypt` may answer at once or in a promise: the
 * repositories await either. {@link aesGcmSecretCipher} answers at once (`node:crypto`),
 * {@link aesGcmSecretCipherAsync} in a promise (WebCrypto, on every runtime); a cipher of your own
 * may do either (a key service's, for one).
 */
export interface SecretCipher {
  /** The id of the key that encrypts. */
  readonly keyId: string;
  /** The stored form of `secret`, naming the key that encrypted it; or a promise of it. */
  encrypt(secret: string, context: string): string | Promise<string>;
  /**
   * The secret of a stored form, or a promise of it.
   * @throws SecretCipherError `unknown_secret_key`, `secret_not_authentic` or
   *   `malformed_stored_secret` (a promise rejects with it)
   */
  decrypt(stored: string, context: string): string | Promise<string>;
  /** The id of the key a stored form names, or `undefined` for text this cipher did not write. */
  keyIdOf(stored: string): string | undefined;
}

/** A {@link SecretCipher} that answers at once: {@link aesGcmSecretCipher}'s. */
export interface SyncSecretCipher extends SecretCipher {
  /** The stored form of `secret`, naming the key that encrypted it. */
  encrypt(secret: string, context: string): string;
  /**
   * The secret of a stored form.
   * @throws SecretCipherError `unknown_secret_key`, `secret_not_authentic` or
   *   `malformed_stored_secret`
   */
  decrypt(stored: string, context: string): string;
}

/** A {@link SecretCipher} that answers in a promise: {@link aesGcmSecretCipherAsync}'s. */
export interface AsyncSecretCipher extends SecretCipher {
  /** The stored form of `secret`, naming the key that encrypted it. */
  encrypt(secret: string, context: string): Promise<string>;
  /**
   * The secret of a stored form; rejects with a SecretCipherError `unknown_secret_key`,
   * `secret_not_authentic` or `malformed_stored_secret`.
   */
  decrypt(stored: string, context: string): Promise<string>;
}

/** One key of {@link aesGcmSecretCipher} and {@link aesGcmSecretCipherAsync}. */
export interface SecretKey {
  /** Its name, kept beside each secret it encrypts: letters, digits, `_` and `-`, 1 to 64. */
  readonly id: string;
  /** 32 random bytes, or their base64 (e.g. `openssl rand -base64 32`). */
  readonly key: Uint8Array | string;
}

/** How {@link aesGcmSecretCipher} and {@link aesGcmSecretCipherAsync} are set up. */
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
const keyRule: Rule<Uint8Array> = secretRule(
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

// A copy: the caller's bytes may change after the cipher is made.
function keyBytes(value: unknown): Uint8Array | undefined {
  if (isBytes(value)) return new Uint8Array(value);
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  return BASE64.test(text) ? decodeBase64(text) : undefined;
}

/** A key as {@link SECRET_KEYS} reads it. @internal */
export interface ReadKey {
  readonly id: string;
  readonly key: Uint8Array;
}

// Two keys of one id: a stored secret would name a key that is not the one that encrypted it.
const uniqueKeyId = 'an id no earlier key has (give each key an id of its own)';

/**
 * The rule of a list of keys, newest first, each read and checked (used by the repositories'
 * `secretKeys` option too). @internal
 */
export const SECRET_KEYS: Rule<readonly ReadKey[]> = (() => {
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
const EXAMPLE = "{ keys: [{ id: '2025-01', key: process.env.SECRET_KEY }] }";

/** The keys of a factory's options, read and checked. */
function keysOf(options: AesGcmSecretCipherOptions, owner: string): readonly ReadKey[] {
  const read = readOptions(options, owner, RULES, { required: true, example: EXAMPLE });
  const keys = requiredValue(RULES.keys, read.keys, 'keys');
  if (keys[0] === undefined) throw invalidValue(SECRET_KEYS, keys, 'keys');
  return keys;
}

/**
 * A {@link SecretCipher} with AES-256-GCM through `node:crypto`, answering at once: a fresh 96-bit
 * IV per secret, the 128-bit tag checked on every decrypt. Rotate keys by putting a new key first:
 * secrets stored under the older ones still decrypt, and a repository's `reencryptSecrets()` moves
 * them to the new one. Encrypting and decrypting need `node:crypto` (Node, Bun, Deno, Workers with
 * `nodejs_compat`); {@link aesGcmSecretCipherAsync} is the form for every runtime, and each reads
 * what the other wrote.
 * @throws ConfigurationError `invalid_option` for no keys, a key that is not 32 bytes, a bad or
 *   repeated key id; `unsupported_runtime` from `encrypt` and `decrypt` on a runtime without
 *   `node:crypto`
 * @example
 * ```ts
 * import { randomBytes } from 'node:crypto';
 * const cipher = aesGcmSecretCipher({ keys: [{ id: '2025-01', key: randomBytes(32) }] });
 * const stored = cipher.encrypt('whsec_...', 'ACME/sub-1');
 * cipher.decrypt(stored, 'ACME/sub-1'); // 'whsec_...'
 * ```
 */
export function aesGcmSecretCipher(options: AesGcmSecretCipherOptions): SyncSecretCipher {
  return cipherOf(keysOf(options, 'aesGcmSecretCipher'));
}

/**
 * A {@link SecretCipher} with AES-256-GCM through WebCrypto (`crypto.subtle`), answering in a
 * promise: the form for runtimes without `node:crypto` (Cloudflare Workers without
 * `nodejs_compat`, Vercel Edge), and it runs on Node, Bun and Deno too. It writes and reads the
 * format of {@link aesGcmSecretCipher}, with the same keys, the same context bound as AAD and the
 * same errors: a secret either form encrypted, the other decrypts. Give it to a repository as its
 * `cipher`, which awaits it.
 * @throws ConfigurationError `invalid_option` for no keys, a key that is not 32 bytes, a bad or
 *   repeated key id
 * @example
 * ```ts
 * const cipher = aesGcmSecretCipherAsync({ keys: [{ id: '2025-01', key: env.SECRET_KEY }] });
 * const stored = await cipher.encrypt('whsec_...', 'ACME/sub-1');
 * await cipher.decrypt(stored, 'ACME/sub-1'); // 'whsec_...'
 * ```
 */
export function aesGcmSecretCipherAsync(options: AesGcmSecretCipherOptions): AsyncSecretCipher {
  const keys = keysOf(options, 'aesGcmSecretCipherAsync');
  const [{ id: keyId, key }] = keys as [ReadKey];
  const byId = new Map(keys.map(({ id, key }) => [id, key]));
  // Imported at first use, not when made: a Worker may make the cipher in its global scope, where
  // WebCrypto may not run. Keys are kept, not promises of them, which no other request awaits.
  const imported = new Map<string, Awaited<ReturnType<typeof webCryptoAesKey>>>();
  const importedKey = async (id: string, bytes: Uint8Array) => {
    const found = imported.get(id) ?? (await webCryptoAesKey(bytes));
    imported.set(id, found);
    return found;
  };
  return Object.freeze({
    keyId,
    async encrypt(secret: string, context: string): Promise<string> {
      const iv = randomBytes(IV_BYTES);
      const sealed = await webCryptoAesGcmSeal(
        await importedKey(keyId, key),
        iv,
        utf8(secret),
        utf8(context),
      );
      return storedForm(keyId, iv, sealed);
    },
    async decrypt(stored: string, context: string): Promise<string> {
      const parts = parse(stored);
      const found = await importedKey(parts.keyId, keyOf(byId, parts.keyId));
      let plain: Uint8Array;
      try {
        plain = await webCryptoAesGcmOpen(found, parts.iv, parts.sealed, utf8(context));
      } catch (cause) {
        throw notAuthentic(parts.keyId, cause);
      }
      return decoder.decode(plain);
    },
    keyIdOf,
  });
}

/** The cipher of keys read by {@link SECRET_KEYS}, through `node:crypto`. @internal */
export function cipherOf(keys: readonly ReadKey[]): SyncSecretCipher {
  const byId = new Map(keys.map(({ id, key }) => [id, key]));
  const [newest] = keys;
  if (newest === undefined) throw invalidValue(SECRET_KEYS, keys, 'keys');
  const { id: keyId, key } = newest;
  return Object.freeze({
    keyId,
    encrypt(secret: string, context: string): string {
      const crypto = nodeCrypto('Encrypting a secret (aesGcmSecretCipher)');
      const iv = crypto.randomBytes(IV_BYTES);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(utf8(context));
      const sealed = concatBytes([
        cipher.update(utf8(secret)),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return storedForm(keyId, iv, sealed);
    },
    decrypt(stored: string, context: string): string {
      const parts = parse(stored);
      const found = keyOf(byId, parts.keyId);
      const crypto = nodeCrypto('Decrypting a secret (aesGcmSecretCipher)');
      try {
        const decipher = crypto.createDecipheriv('aes-256-gcm', found, parts.iv, {
          authTagLength: TAG_BYTES,
        });
        decipher.setAAD(utf8(context));
        decipher.setAuthTag(parts.sealed.subarray(parts.sealed.length - TAG_BYTES));
        const body = parts.sealed.subarray(0, parts.sealed.length - TAG_BYTES);
        return decoder.decode(concatBytes([decipher.update(body), decipher.final()]));
      } catch (cause) {
        throw notAuthentic(parts.keyId, cause);
      }
    },
    keyIdOf,
  });
}

const decoder = new TextDecoder();

/** The stored form: `gcm1.<key id>.<iv>.<ciphertext and tag>`, base64url. */
function storedForm(keyId: string, iv: Uint8Array, sealed: Uint8Array): string {
  return `${FORMAT}.${keyId}.${encodeBase64Url(iv)}.${encodeBase64Url(sealed)}`;
}

/** The key of an id a stored form names. */
function keyOf(byId: ReadonlyMap<string, Uint8Array>, keyId: string): Uint8Array {
  const found = byId.get(keyId);
  if (found === undefined) {
    throw new SecretCipherError(
      'unknown_secret_key',
      `The secret was encrypted under key "${keyId}", which is not among the configured keys (${[...byId.keys()].join(', ')}); add that key after the newest.`,
    );
  }
  return found;
}

function notAuthentic(keyId: string, cause: unknown): SecretCipherError {
  return new SecretCipherError(
    'secret_not_authentic',
    `The secret stored under key "${keyId}" does not authenticate: it was changed, moved from another subscription, or that key id now names another key.`,
    { cause },
  );
}

/** The id of the key a stored form names, or `undefined` for text no cipher here wrote. */
function keyIdOf(stored: string): string | undefined {
  try {
    return parse(stored).keyId;
  } catch {
    return undefined;
  }
}

/** The parts of a stored form: `gcm1.<key id>.<iv>.<ciphertext and tag>`, base64url. */
function parse(stored: string): { keyId: string; iv: Uint8Array; sealed: Uint8Array } {
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
    const ivBytes = decodeBase64Url(iv);
    const sealedBytes = decodeBase64Url(sealed);
    if (ivBytes.length === IV_BYTES && sealedBytes.length >= TAG_BYTES) {
      return { keyId, iv: ivBytes, sealed: sealedBytes };
    }
  }
  throw new SecretCipherError(
    'malformed_stored_secret',
    `The stored secret is not in the form ${FORMAT}.<key id>.<iv>.<ciphertext>; it was not written by this cipher.`,
  );
}
