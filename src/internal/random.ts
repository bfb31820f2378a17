/** Random bytes from the runtime's WebCrypto, which every supported runtime has. @module */

/**
 * `size` random bytes (at most 65,536, WebCrypto's bound).
 * @param size - how many
 */
export function randomBytes(size: number): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(size));
}
