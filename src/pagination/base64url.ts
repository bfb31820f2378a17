/**
 * Strict base64url (RFC 4648 section 5, no padding). Node's decoder skips characters outside the
 * alphabet, accepts padding and ignores stray trailing bits, so several strings decode to the same
 * bytes; a cursor must have exactly one spelling, so anything that does not re-encode to itself is
 * refused.
 * @module
 */

import { decodeBase64, encodeBase64Url as encode } from '../internal/base64.js';

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/**
 * Encode bytes as base64url without padding.
 * @param bytes - the bytes
 */
export function encodeBase64Url(bytes: Uint8Array): string {
  return encode(bytes);
}

/**
 * Decode canonical base64url, or `undefined` when the text is not the one spelling of some bytes
 * (padding, characters outside the alphabet, a length of 1 modulo 4, non-zero trailing bits).
 * @param text - the encoded text
 */
export function decodeBase64Url(text: string): Uint8Array | undefined {
  if (text.length % 4 === 1 || !ALPHABET.test(text)) return undefined;
  const padded = text.replaceAll('-', '+').replaceAll('_', '/');
  const bytes = decodeBase64(padded + '='.repeat((4 - (padded.length % 4)) % 4));
  return encode(bytes) === text ? bytes : undefined;
}
