/**
 * Base64 (RFC 4648 section 4, padded) without `Buffer`, which runtimes other than Node's family
 * may not have. Callers check the text's form first: `atob` is lenient about it. @module
 */

/**
 * Encode bytes as padded base64.
 * @param bytes - the bytes
 */
export function encodeBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * Decode base64 whose form the caller has checked.
 * @param text - the encoded text
 */
export function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * Encode bytes as base64url without padding (RFC 4648 section 5).
 * @param bytes - the bytes
 */
export function encodeBase64Url(bytes: Uint8Array): string {
  return encodeBase64(bytes).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

/**
 * Decode base64url (RFC 4648 section 5) whose alphabet the caller has checked, with or without
 * padding, as Node's `Buffer.from(text, 'base64url')` does: a last character that cannot make a
 * byte on its own is dropped.
 * @param text - the encoded text, of the characters `A-Z a-z 0-9 - _`
 */
export function decodeBase64Url(text: string): Uint8Array {
  const whole = text.length % 4 === 1 ? text.slice(0, -1) : text;
  const base64 = whole.replaceAll('-', '+').replaceAll('_', '/');
  return decodeBase64(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
}

/**
 * Encode bytes as lower-case hex.
 * @param bytes - the bytes
 */
export function encodeHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

const encoder = new TextEncoder();

/**
 * The UTF-8 bytes of a string.
 * @param text - the string
 */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/**
 * The UTF-8 bytes of the parts, one after the other.
 * @param parts - strings (encoded as UTF-8) and bytes
 */
export function concatBytes(parts: readonly (string | Uint8Array)[]): Uint8Array {
  const encoded = parts.map((part) => (typeof part === 'string' ? encoder.encode(part) : part));
  let size = 0;
  for (const part of encoded) size += part.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of encoded) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
