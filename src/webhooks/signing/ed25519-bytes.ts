/**
 * An ed25519 key's bytes, as both node:crypto and WebCrypto read them: the DER around the raw
 * bytes (RFC 8410: PKCS#8 for the seed, SPKI for the public key), and a signing key read without
 * any cryptography. @module
 */

function fromHex(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  }
  return bytes;
}

/** The PKCS#8 DER of an ed25519 private key, before its 32-byte seed. @internal */
export const PKCS8_PREFIX: Uint8Array = fromHex('302e020100300506032b657004220420');

/** The SPKI DER of an ed25519 public key, before its 32 bytes. @internal */
export const SPKI_PREFIX: Uint8Array = fromHex('302a300506032b6570032100');

/** A `whsk_` signing key's bytes: the seed, and the public half when the text carries one. */
export interface SigningSeed {
  /** The 32-byte ed25519 seed. */
  readonly seed: Uint8Array;
  /** The public key written after the seed, to be checked against it; undefined when absent. */
  readonly publicHalf: Uint8Array | undefined;
  /** How a refusal shows the key: its prefix and length, never its text. */
  readonly shown: string;
}
