/** The error of a signing secret that cannot be read back from its stored form. @module */
import { ApiConventionsError, type ErrorOptions, errorName } from './api-conventions-error.js';

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
  // The secret is stored encrypted, but the repository was given no keys.
  'no_secret_keys',
] as const;

/** A code of {@link SecretCipherError}. */
export type SecretCipherErrorCode = (typeof secretCipherErrorCodes)[number];

/** What a {@link SecretCipherError} is made with, besides its code and message. */
export interface SecretCipherErrorOptions extends ErrorOptions {
  /** The account of the subscription whose secret it is, when the repository knows it. */
  accountCode?: string | undefined;
  /** The subscription whose secret it is, when the repository knows it. */
  subscriptionId?: string | undefined;
}

/**
 * A stored signing secret that the configured keys cannot decrypt. A repository reading a
 * subscription's secrets names the subscription (`accountCode`, `subscriptionId`).
 */
export class SecretCipherError extends ApiConventionsError {
  declare readonly code: SecretCipherErrorCode;
  /** The account of the subscription, when known. */
  readonly accountCode: string | undefined;
  /** The subscription, when known. */
  readonly subscriptionId: string | undefined;

  /** @param options - `cause`: the crypto module's error, when there is one; the subscription */
  constructor(code: SecretCipherErrorCode, message: string, options?: SecretCipherErrorOptions) {
    super(code, message, options);
    this.name = 'SecretCipherError';
    this.accountCode = options?.accountCode;
    this.subscriptionId = options?.subscriptionId;
  }
}

/** True for a {@link SecretCipherError}, also from another copy of the package. */
export function isSecretCipherError(value: unknown): value is SecretCipherError {
  return errorName(value) === 'SecretCipherError';
}
