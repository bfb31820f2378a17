/**
 * The signing secrets as the PostgreSQL repository keeps them: sealed under its cipher (the
 * newest key encrypts, the key id stored beside the secret), or plain without one; and read back,
 * each refusal naming the subscription. @module
 */
import { isSecretCipherError, SecretCipherError } from '../errors/secret-cipher-error.js';
import type { SecretCipher } from '../webhooks/signing/secret-cipher.js';

/** The text the cipher binds a secret to: its account and subscription. @internal */
export const secretContext = (accountCode: string, id: string): string =>
  JSON.stringify([accountCode, id]);

/** Seals and opens a repository's signing secrets. @internal */
export class StoredSecrets {
  /** The cipher, or `undefined` where secrets are kept plain. */
  readonly cipher: SecretCipher | undefined;
  readonly #owner: string;

  /** @param owner - what takes the keys, for a refusal (`PostgresSubscriptionRepository.open`) */
  constructor(cipher: SecretCipher | undefined, owner: string) {
    this.cipher = cipher;
    this.#owner = owner;
  }

  /** How secrets are kept. */
  get atRest(): 'encrypted' | 'plain' {
    return this.cipher === undefined ? 'plain' : 'encrypted';
  }

  /**
   * A secret as stored: encrypted under the newest key, or plain; with the key id or null. The
   * cipher may answer at once or in a promise (aesGcmSecretCipherAsync's, a key service's).
   */
  async seal(accountCode: string, id: string, secret: string): Promise<[string, string | null]> {
    const cipher = this.cipher;
    if (cipher === undefined) return [secret, null];
    return [await cipher.encrypt(secret, secretContext(accountCode, id)), cipher.keyId];
  }

  /**
   * A stored secret as it signs.
   * @throws SecretCipherError naming the subscription when the keys cannot decrypt it
   */
  async open(
    accountCode: string,
    id: string,
    stored: string,
    keyId: string | null,
  ): Promise<string> {
    if (keyId === null) return stored;
    const named = { accountCode, subscriptionId: id };
    const whose = `A signing secret of subscription "${id}" (account "${accountCode}")`;
    if (this.cipher === undefined) {
      throw new SecretCipherError(
        'no_secret_keys',
        `${whose} is encrypted under key "${keyId}", but ${this.#owner} was given no secretKeys; pass the keys it was stored with.`,
        named,
      );
    }
    try {
      return await this.cipher.decrypt(stored, secretContext(accountCode, id));
    } catch (error) {
      if (!isSecretCipherError(error)) throw error;
      throw new SecretCipherError(error.code, `${whose} cannot be read: ${error.message}`, {
        ...named,
        cause: error,
      });
    }
  }

  /**
   * The readable ones of a subscription's secrets (newest first), and an error for each other.
   * A cipher's failure that is no SecretCipherError (a key service down) is thrown.
   */
  async openAll(
    accountCode: string,
    id: string,
    rows: readonly { secret: string; key_id: string | null }[],
  ): Promise<{ secrets: string[]; unreadable: SecretCipherError[] }> {
    const secrets: string[] = [];
    const unreadable: SecretCipherError[] = [];
    for (const row of rows) {
      try {
        secrets.push(await this.open(accountCode, id, row.secret, row.key_id));
      } catch (error) {
        if (!(error instanceof SecretCipherError)) throw error;
        unreadable.push(error);
      }
    }
    return { secrets, unreadable };
  }
}
