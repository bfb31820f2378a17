/** The error of a signing secret that cannot be read back from its stored form. @module */
import { ApiConventionsError, type ErrorOptions } from './api-conventions-error.js';

/**
 * Codes of {@link SecretCipherError}. A test pins this list: removing or renaming one is a breaking
 * change.
 */
export const secretCipherErrorCodes = [
  // The stored form names a key id that none of the configured keys has.
  'unknown_secret_key',
  // The key is known but the text does not authenticate under it: tampered, or another key's.
  'secret_not_authentic',
  // The stored form is not one the cipher wrote (cut short, not base64url, another format).
  'malformed_stored_secret',
] as const;

/** A code of {@link SecretCipherError}. */
export type SecretCipherErrorCode = (typeof secretCipherErrorCodes)[number];

/** A stored signing secret that the configured keys cannot decrypt. */
export class SecretCipherError extends ApiConventionsError {
  declare readonly code: SecretCipherErrorCode;

  /** @param options - `cause`: the crypto module's error, when there is one */
  constructor(code: SecretCipherErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = 'SecretCipherError';
  }
}
