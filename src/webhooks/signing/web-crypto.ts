/**
 * The signatures through WebCrypto, for runtimes without `node:crypto` (Cloudflare Workers without
 * `nodejs_compat`, Vercel Edge, browsers): HMAC-SHA256 for `v1`, ed25519 for `v1a`; and AES-256-GCM
 * for the secrets at rest. Every supported runtime has `crypto.subtle` with all three; Node's
 * `node:crypto` is used where present, as its synchronous forms need no import of a key per call.
 * @module
 */
import type { webcrypto } from 'node:crypto';
import { concatBytes } from '../../internal/base64.js';
import { constantTimeEqual } from '../../internal/sha256.js';
import { PKCS8_PREFIX, type SigningSeed } from './ed25519-bytes.js';

const HMAC = { name: 'HMAC', hash: 'SHA-256' } as const;
const ED25519 = { name: 'Ed25519' } as const;
const AES_GCM = { name: 'AES-GCM', length: 256 } as const;

function subtle(): webcrypto.SubtleCrypto {
  return globalThis.crypto.subtle as webcrypto.SubtleCrypto;
}

// WebCrypto takes a BufferSource backed by an ArrayBuffer; bytes backed by a SharedArrayBuffer are
// copied.
function source(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer
    ? (bytes as Uint8Array<ArrayBuffer>)
    : new Uint8Array(bytes);
}

/**
 * HMAC-SHA256 of the parts, one after the other.
 * @internal
 */
export async function webCryptoHmac(
  key: Uint8Array,
  parts: readonly (string | Uint8Array)[],
): Promise<Uint8Array> {
  const imported = await subtle().importKey('raw', source(key), HMAC, false, ['sign']);
  return new Uint8Array(await subtle().sign('HMAC', imported, source(concatBytes(parts))));
}

async function privateKey(seed: Uint8Array, extractable: boolean): Promise<webcrypto.CryptoKey> {
  return subtle().importKey(
    'pkcs8',
    source(concatBytes([PKCS8_PREFIX, seed])),
    ED25519,
    extractable,
    ['sign'],
  );
}

/**
 * The ed25519 public key of a seed: the `x` of the private key's JWK.
 * @internal
 */
export async function webCryptoPublicKey(seed: Uint8Array): Promise<Uint8Array> {
  const jwk = await subtle().exportKey('jwk', await privateKey(seed, true));
  const x = (jwk.x ?? '').replaceAll('-', '+').replaceAll('_', '/');
  const binary = atob(x + '='.repeat((4 - (x.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/**
 * The ed25519 signature of the bytes under a signing key's seed; undefined when the key carries a
 * public half that is not the seed's own.
 * @internal
 */
export async function webCryptoEd25519Sign(
  key: SigningSeed,
  content: Uint8Array,
): Promise<Uint8Array | undefined> {
  if (key.publicHalf !== undefined) {
    const own = await webCryptoPublicKey(key.seed);
    if (!constantTimeEqual(own, key.publicHalf)) return undefined;
  }
  const signed = await subtle().sign('Ed25519', await privateKey(key.seed, false), source(content));
  return new Uint8Array(signed);
}

/**
 * Whether `signature` is the ed25519 signature of the bytes under the raw public key; false for a
 * key WebCrypto refuses.
 * @internal
 */
export async function webCryptoEd25519Verify(
  publicKey: Uint8Array,
  content: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  if (signature.length !== 64) return false;
  try {
    const key = await subtle().importKey('raw', source(publicKey), ED25519, false, ['verify']);
    return await subtle().verify('Ed25519', key, source(signature), source(content));
  } catch {
    return false;
  }
}

/**
 * An AES-256-GCM key of 32 bytes, for {@link webCryptoAesGcmSeal} and {@link webCryptoAesGcmOpen}.
 * @internal
 */
export async function webCryptoAesKey(key: Uint8Array): Promise<webcrypto.CryptoKey> {
  return subtle().importKey('raw', source(key), AES_GCM, false, ['encrypt', 'decrypt']);
}

/**
 * The ciphertext of `plain` followed by its 128-bit tag, as `node:crypto`'s `aes-256-gcm` gives
 * them with `additional` as its AAD.
 * @internal
 */
export async function webCryptoAesGcmSeal(
  key: webcrypto.CryptoKey,
  iv: Uint8Array,
  plain: Uint8Array,
  additional: Uint8Array,
): Promise<Uint8Array> {
  const params = { name: 'AES-GCM', iv: source(iv), additionalData: source(additional) };
  return new Uint8Array(await subtle().encrypt(params, key, source(plain)));
}

/**
 * The plain bytes of a ciphertext followed by its 128-bit tag; rejects when the tag does not
 * authenticate it with `additional`.
 * @internal
 */
export async function webCryptoAesGcmOpen(
  key: webcrypto.CryptoKey,
  iv: Uint8Array,
  sealed: Uint8Array,
  additional: Uint8Array,
): Promise<Uint8Array> {
  const params = { name: 'AES-GCM', iv: source(iv), additionalData: source(additional) };
  return new Uint8Array(await subtle().decrypt(params, key, source(sealed)));
}
