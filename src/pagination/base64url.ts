/**
 * Strict base64url (RFC 4648 section 5, no padding). Node's decoder skips characters outside the
 * alphabet, accepts padding and ignores stray trailing bits, so several strings decode to the same
 * bytes; a cursor must have exactly one spelling, so anything that does not re-encode to itself is
 * refused.
 * @module
 */

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/**
 * Encode bytes as base64url without padding.
 * @param bytes - the bytes
 */
export function encodeBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

/**
 * Decode canonical base64url, or `undefined` when the text is not the one spelling of some bytes
 * (padding, characters outside the alphabet, a length of 1 modulo 4, non-zero trailing bits).
 * @param text - the encoded text
 */
export function decodeBase64Url(text: string): Buffer | undefined {
  if (text.length % 4 === 1 || !ALPHABET.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}
