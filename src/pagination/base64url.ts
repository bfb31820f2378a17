/**
 * Strict base64url (RFC 4648 section 5, no padding). Node's decoder skips characters outside the
 * alphabet, accepts padding and ignores stray trailing bits, so several strings decode to the same
 * bytes; a cursor must have exactly one spelling, so anything that does not re-encode to itself is
 * refused.
 * @module
 */

import { decodeBase64Url as decodeLenient, encodeBase64Url } from '../internal/base64.js';

export { encodeBase64Url };

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/**
 * Decode canonical base64url, or `undefined` when the text is not the one spelling of some bytes
 * (padding, characters outside the alphabet, a length of 1 modulo 4, non-zero trailing bits).
 * @param text - the encoded text
 */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  if (text.length % 4 === 1 || !ALPHABET.test(text)) return undefined;
  const bytes = decodeLenient(text);
  return encodeBase64Url(bytes) === text ? bytes : undefined;
}
