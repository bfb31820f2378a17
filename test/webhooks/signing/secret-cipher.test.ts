/**
 * AES-256-GCM secrets at rest: round trips, key rotation, and typed errors for what fails; and the
 * WebCrypto form against the node:crypto one: each decrypts what the other wrote, and both answer
 * any text with the same secret or the same error. A runtime without node:crypto is made here by
 * `process.getBuiltinModule` answering nothing.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isConfigurationError } from '../../../src/errors/index.js';
import { SecretCipherError } from '../../../src/errors/secret-cipher-error.js';
import {
  aesGcmSecretCipher,
  aesGcmSecretCipherAsync,
  type SecretKey,
} from '../../../src/webhooks/signing/secret-cipher.js';
import { thrown } from '../../support/thrown.js';

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

/** What a decrypt gives, as a value: the secret, or the error's class, code and message. */
async function outcome(decrypt: () => string | Promise<string>): Promise<unknown> {
  try {
    return { secret: await decrypt() };
  } catch (error) {
    const { name, code, message } = error as SecretCipherError;
    return { name, code, message };
  }
}

const keyArb = fc.uint8Array({ minLength: 32, maxLength: 32 });
const idArb = fc.constantFrom('k1', 'k2', '2025-01');
/** Keys, newest first, of distinct ids. */
const keysArb = fc.uniqueArray(fc.record({ id: idArb, key: keyArb }), {
  minLength: 1,
  maxLength: 3,
  selector: (key) => key.id,
});

/** Text a decrypt may be given: changed, cut or lengthened forms of a stored secret, or anything. */
function variantsOf(stored: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(stored),
    fc
      .tuple(fc.nat({ max: stored.length - 1 }), fc.constantFrom(...'AQgw_-.x0'))
      .map(([at, char]) => `${stored.slice(0, at)}${char}${stored.slice(at + 1)}`),
    fc.nat({ max: stored.length }).map((at) => stored.slice(0, at)),
    fc.stringMatching(/^[A-Za-z0-9_-]{0,8}$/).map((tail) => `${stored}${tail}`),
    fc.string(),
  );
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('aesGcmSecretCipherAsync (WebCrypto) against aesGcmSecretCipher (node:crypto)', () => {
  it('each decrypts what the other encrypted, under any of its keys, for that context only', async () => {
    await fc.assert(
      fc.asyncProperty(
        keysArb,
        fc.string({ minLength: 1 }),
        fc.string(),
        fc.string({ minLength: 1 }),
        fc.boolean(),
        async (keys, secret, context, other, asyncWrites) => {
          fc.pre(other !== context);
          const sync = aesGcmSecretCipher({ keys });
          const webCrypto = aesGcmSecretCipherAsync({ keys });
          const [writer, reader] = asyncWrites ? [webCrypto, sync] : [sync, webCrypto];
          // Written under the newest key, read by a cipher whose newest key is another one.
          const stored = await writer.encrypt(secret, context);
          expect(stored.startsWith(`gcm1.${keys[0]?.id}.`)).toBe(true);
          expect(webCrypto.keyIdOf(stored)).toBe(sync.keyIdOf(stored));
          expect(await reader.decrypt(stored, context)).toBe(secret);
          const rotated = [...keys.slice(1), ...keys.slice(0, 1)];
          const later = asyncWrites
            ? aesGcmSecretCipher({ keys: rotated })
            : aesGcmSecretCipherAsync({ keys: rotated });
          expect(await later.decrypt(stored, context)).toBe(secret);
          // The context is bound: another one's decrypt is refused, alike by both.
          const moved = await outcome(() => reader.decrypt(stored, other));
          expect(moved).toMatchObject({ code: 'secret_not_authentic' });
          expect(await outcome(() => writer.decrypt(stored, other))).toEqual(moved);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('answer any text with the same secret or the same error: tampered, wrong key, unknown key, malformed', async () => {
    const stored = fc
      .tuple(keysArb, fc.string({ minLength: 1, maxLength: 40 }), fc.string({ maxLength: 20 }))
      .chain(([keys, secret, context]) =>
        fc.tuple(
          fc.constant(keys),
          fc.constant(context),
          fc.constant(aesGcmSecretCipher({ keys }).encrypt(secret, context)).chain(variantsOf),
          // The readers' keys: the writer's, another key under the same id, or other ids.
          fc.oneof(
            fc.constant(keys),
            keyArb.map((key) => [{ id: keys[0]?.id ?? 'k1', key }]),
            keysArb,
          ),
        ),
      );
    await fc.assert(
      fc.asyncProperty(stored, async ([, context, text, readers]) => {
        const sync = aesGcmSecretCipher({ keys: readers });
        const webCrypto = aesGcmSecretCipherAsync({ keys: readers });
        const expected = await outcome(() => sync.decrypt(text, context));
        expect(await outcome(() => webCrypto.decrypt(text, context))).toEqual(expected);
        expect(webCrypto.keyIdOf(text)).toBe(sync.keyIdOf(text));
      }),
      { numRuns: 400 },
    );
  });

  it('refuses the wrong key, a tampered tag and malformed text with the synchronous codes and messages', async () => {
    const cipher = aesGcmSecretCipherAsync({ keys: [{ id: 'k1', key: key1 }] });
    const stored = await cipher.encrypt('whsec_abc', 'c');
    const last = stored.at(-2) === 'A' ? 'B' : 'A';
    const tampered = `${stored.slice(0, -2)}${last}${stored.at(-1)}`;
    const other = aesGcmSecretCipherAsync({ keys: [{ id: 'k1', key: key2 }] });
    const rotated = aesGcmSecretCipherAsync({ keys: [{ id: 'k2', key: key2 }] });
    const notAuthentic = {
      name: 'SecretCipherError',
      code: 'secret_not_authentic',
      message:
        'The secret stored under key "k1" does not authenticate: it was changed, moved from another subscription, or that key id now names another key.',
    };
    expect(await outcome(() => cipher.decrypt(tampered, 'c'))).toEqual(notAuthentic);
    expect(await outcome(() => other.decrypt(stored, 'c'))).toEqual(notAuthentic);
    expect(await outcome(() => rotated.decrypt(stored, 'c'))).toEqual({
      name: 'SecretCipherError',
      code: 'unknown_secret_key',
      message:
        'The secret was encrypted under key "k1", which is not among the configured keys (k2); add that key after the newest.',
    });
    for (const text of ['whsec_plain', 'gcm1.k1.x', 'gcm1.k1.!!.??', 'gcm1.k1.AAAA.AAAA', '']) {
      expect(await outcome(() => cipher.decrypt(text, 'c'))).toMatchObject({
        code: 'malformed_stored_secret',
      });
    }
    // A refusal is a rejected promise, never a throw at the call.
    expect(thrown(() => void cipher.decrypt('', 'c').catch(() => {}))).toBeUndefined();
  });

  it('refuses the same options with the same messages, naming itself', () => {
    const refusals: unknown[] = [
      undefined,
      {},
      { keys: [] },
      { keys: [{ id: 'k', key: randomBytes(16) }] },
      { keys: [{ id: 'k', key: 'not base64!' }] },
      { keys: [{ id: 'a b', key: key1 }] },
      {
        keys: [
          { id: 'k', key: key1 },
          { id: 'k', key: key2 },
        ],
      },
      { keys: [{ id: 'k', key: key1, extra: 1 }] },
    ];
    for (const options of refusals) {
      const sync = thrown(() => aesGcmSecretCipher(options as never)) as Error;
      const webCrypto = thrown(() => aesGcmSecretCipherAsync(options as never)) as Error;
      expect(isConfigurationError(webCrypto)).toBe(true);
      expect(webCrypto.message).toBe(
        sync.message.replaceAll('aesGcmSecretCipher', 'aesGcmSecretCipherAsync'),
      );
    }
  });

  it('keeps its own copy of the key bytes it was given', async () => {
    const bytes = new Uint8Array(key1);
    const keys: SecretKey[] = [{ id: 'k1', key: bytes }];
    const cipher = aesGcmSecretCipherAsync({ keys });
    bytes.fill(0);
    const stored = await cipher.encrypt('whsec_abc', 'c');
    expect(aesGcmSecretCipher({ keys: [{ id: 'k1', key: key1 }] }).decrypt(stored, 'c')).toBe(
      'whsec_abc',
    );
  });
});

describe('secrets at rest on a runtime without node:crypto', () => {
  it('the asynchronous form encrypts and decrypts; the synchronous one says what to use instead', async () => {
    const keys = [{ id: 'k1', key: key1 }];
    const sync = aesGcmSecretCipher({ keys });
    const written = sync.encrypt('whsec_abc', 'c');
    vi.spyOn(process, 'getBuiltinModule').mockImplementation((() => undefined) as never);
    const cipher = aesGcmSecretCipherAsync({ keys });
    expect(await cipher.decrypt(written, 'c')).toBe('whsec_abc');
    expect(await cipher.decrypt(await cipher.encrypt('whsec_def', 'c'), 'c')).toBe('whsec_def');
    expect(await outcome(() => cipher.decrypt(written, 'd'))).toMatchObject({
      code: 'secret_not_authentic',
    });
    for (const [run, what] of [
      [() => sync.encrypt('whsec_abc', 'c'), 'Encrypting'],
      [() => sync.decrypt(written, 'c'), 'Decrypting'],
    ] as const) {
      const error = thrown(run);
      expect(isConfigurationError(error)).toBe(true);
      expect((error as Error).message).toBe(
        `${what} a secret (aesGcmSecretCipher) needs node:crypto, which this runtime does not have: use the asynchronous form (WebCrypto), or on Cloudflare Workers turn on the nodejs_compat flag.`,
      );
    }
  });
});
