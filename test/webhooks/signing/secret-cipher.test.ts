/** AES-256-GCM secrets at rest: round trips, key rotation, and typed errors for what fails. */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isConfigurationError } from '../../../src/errors/index.js';
import { SecretCipherError } from '../../../src/errors/secret-cipher-error.js';
import { aesGcmSecretCipher } from '../../../src/webhooks/signing/secret-cipher.js';

const key1 = randomBytes(32);
const key2 = randomBytes(32);

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(SecretCipherError);
    return (error as SecretCipherError).code;
  }
}

describe('aesGcmSecretCipher', () => {
  it('gives back every secret it stored, for its context only, never showing it', () => {
    const cipher = aesGcmSecretCipher({ keys: [{ id: 'k1', key: key1 }] });
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), (secret, context) => {
        const stored = cipher.encrypt(secret, context);
        expect(stored.startsWith('gcm1.k1.')).toBe(true);
        expect(cipher.keyIdOf(stored)).toBe('k1');
        expect(cipher.decrypt(stored, context)).toBe(secret);
        expect(codeOf(() => cipher.decrypt(stored, `${context}x`))).toBe('secret_not_authentic');
      }),
    );
    const stored = cipher.encrypt('whsec_topsecret', 'c');
    expect(stored).not.toContain('topsecret');
    expect(cipher.encrypt('whsec_topsecret', 'c')).not.toBe(stored);
  });

  it('encrypts with the first key and decrypts with every key', () => {
    const old = aesGcmSecretCipher({ keys: [{ id: 'k1', key: key1.toString('base64') }] });
    const rotated = aesGcmSecretCipher({
      keys: [
        { id: 'k2', key: key2 },
        { id: 'k1', key: key1 },
      ],
    });
    const before = old.encrypt('s', 'c');
    expect(rotated.decrypt(before, 'c')).toBe('s');
    expect(rotated.keyId).toBe('k2');
    expect(rotated.keyIdOf(rotated.encrypt('s', 'c'))).toBe('k2');
    expect(codeOf(() => old.decrypt(rotated.encrypt('s', 'c'), 'c'))).toBe('unknown_secret_key');
  });

  it('tells tampered, wrong-key and malformed text apart by code', () => {
    const cipher = aesGcmSecretCipher({ keys: [{ id: 'k1', key: key1 }] });
    const other = aesGcmSecretCipher({ keys: [{ id: 'k1', key: key2 }] });
    const stored = cipher.encrypt('whsec_abc', 'c');
    const last = stored.at(-2) === 'A' ? 'B' : 'A';
    const tampered = `${stored.slice(0, -2)}${last}${stored.at(-1)}`;
    expect(codeOf(() => cipher.decrypt(tampered, 'c'))).toBe('secret_not_authentic');
    expect(codeOf(() => other.decrypt(stored, 'c'))).toBe('secret_not_authentic');
    for (const text of ['whsec_plain', 'gcm1.k1.x', 'gcm1.k1.!!.??', 'gcm1.k1.AAAA.AAAA', '']) {
      expect(codeOf(() => cipher.decrypt(text, 'c'))).toBe('malformed_stored_secret');
      expect(cipher.keyIdOf(text)).toBeUndefined();
    }
  });

  it('refuses bad keys with a ConfigurationError that says what to change', () => {
    const refused = (options: unknown, message: RegExp) => {
      let error: unknown;
      try {
        aesGcmSecretCipher(options as never);
      } catch (e) {
        error = e;
      }
      expect(isConfigurationError(error)).toBe(true);
      expect((error as Error).message).toMatch(message);
    };
    refused(undefined, /options must be an object/);
    refused({}, /keys must be an array of at least 1/);
    refused({ keys: [] }, /keys must be an array of at least 1/);
    refused(
      { keys: [{ id: 'k', key: randomBytes(16) }] },
      /keys\[0\]\.key must be 32 bytes.*got 16 bytes/,
    );
    refused({ keys: [{ id: 'k', key: 'not base64!' }] }, /keys\[0\]\.key .*not base64/);
    refused({ keys: [{ id: 'a b', key: key1 }] }, /keys\[0\]\.id must be a key id/);
    refused({ keys: [{ key: key1 }] }, /keys\[0\]\.id must be a key id/);
    refused(
      {
        keys: [
          { id: 'k', key: key1 },
          { id: 'k', key: key2 },
        ],
      },
      /^keys\[1\]\.id must be an id no earlier key has \(give each key an id of its own\), got "k"\.$/,
    );
    refused({ keys: [{ id: 'k', key: key1, extra: 1 }] }, /no option "extra"/);
  });
});
