/**
 * Asymmetric signatures (`v1a`, ed25519): the key formats, signing with any mix of keys, and
 * verification. The oracles are node:crypto's ed25519 and @noble/ed25519, over the signed content
 * built here from the specification's text: `{msg_id}.{timestamp}.{payload}`.
 */
import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import * as noble from '@noble/ed25519';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FakeClock,
  generateWebhookKeyPair,
  generateWebhookSecret,
  isConfigurationError,
  signWebhook,
  verifyWebhook,
  WEBHOOK_PUBLIC_KEY_PREFIX,
  WEBHOOK_SIGNING_KEY_PREFIX,
  webhookPublicKeyOf,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

// The vector of the Go library of the Standard Webhooks repository (libraries/go): a 32-byte
// seed, base64, and the v1a signature of its message.
const VECTOR = {
  seed: 'VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature:
    'v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==',
};

/** The specification's signed content, `{msg_id}.{timestamp}.{payload}`, as bytes. */
function content(id: string, timestamp: number, body: string | Uint8Array): Uint8Array {
  const payload = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  return Buffer.concat([new TextEncoder().encode(`${id}.${timestamp}.`), payload]);
}

/** The raw 32 bytes of a `whpk_` text. */
function rawPublic(publicKey: string): Uint8Array {
  return Buffer.from(publicKey.slice('whpk_'.length), 'base64');
}

/** node:crypto's own verdict on an ed25519 signature, the key imported as a JWK. */
function nodeVerifies(publicKey: string, message: Uint8Array, signature: Uint8Array): boolean {
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(rawPublic(publicKey)).toString('base64url') },
    format: 'jwk',
  });
  return cryptoVerify(null, message, key, signature);
}

/** The signatures of one scheme in a `webhook-signature` header. */
function entries(header: string, scheme: string): Uint8Array[] {
  return header
    .split(' ')
    .filter((entry) => entry.startsWith(`${scheme},`))
    .map((entry) => Buffer.from(entry.slice(scheme.length + 1), 'base64'));
}

const ids = fc.stringMatching(/^[!-+\--~]{1,40}$/);
const timestamps = fc.integer({ min: 0, max: 4_000_000_000 });
const bodies = fc.oneof(fc.string(), fc.uint8Array({ maxLength: 200 }));
const seeds = fc.uint8Array({ minLength: 32, maxLength: 32 });
const pairOf = (seed: Uint8Array) => generateWebhookKeyPair(() => seed);

describe('webhook key pairs', () => {
  it('writes whsk_ and whpk_ as the base64 of the 32-byte seed and public key (noble agrees)', async () => {
    await fc.assert(
      fc.asyncProperty(seeds, async (seed) => {
        const { signingKey, publicKey } = pairOf(seed);
        expect(signingKey).toBe(`whsk_${Buffer.from(seed).toString('base64')}`);
        expect(rawPublic(publicKey)).toEqual(Buffer.from(await noble.getPublicKeyAsync(seed)));
        expect(webhookPublicKeyOf(signingKey)).toBe(publicKey);
      }),
      { numRuns: 50 },
    );
    expect(WEBHOOK_SIGNING_KEY_PREFIX).toBe('whsk_');
    expect(WEBHOOK_PUBLIC_KEY_PREFIX).toBe('whpk_');
    const random = generateWebhookKeyPair();
    expect(random.signingKey).toMatch(/^whsk_[A-Za-z0-9+/]{43}=$/);
    expect(random.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(generateWebhookKeyPair().signingKey).not.toBe(random.signingKey);
  });

  it('takes a whsk_ of the seed and its public key (64 bytes) only when the halves belong together', () => {
    const { signingKey, publicKey } = generateWebhookKeyPair();
    const seed = Buffer.from(signingKey.slice(5), 'base64');
    const both = `whsk_${Buffer.concat([seed, rawPublic(publicKey)]).toString('base64')}`;
    expect(webhookPublicKeyOf(both)).toBe(publicKey);
    const other = rawPublic(generateWebhookKeyPair().publicKey);
    const mismatched = `whsk_${Buffer.concat([seed, other]).toString('base64')}`;
    const error = thrown(() => webhookPublicKeyOf(mismatched));
    expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_signing_key');
  });

  it('refuses a random source that is no function or gives other than 32 bytes', () => {
    for (const bytes of [42, () => new Uint8Array(31), () => 'x'.repeat(32)]) {
      const error = thrown(() => generateWebhookKeyPair(bytes as never));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
  });
});

describe('v1a signatures', () => {
  it('reproduces the vector of the reference library', () => {
    const headers = signWebhook(
      { id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body },
      `whsk_${VECTOR.seed}`,
    );
    expect(headers['webhook-signature']).toBe(VECTOR.signature);
  });

  it('any id, timestamp and body signed verifies with node:crypto, noble and verifyWebhook', async () => {
    await fc.assert(
      fc.asyncProperty(seeds, ids, timestamps, bodies, async (seed, id, timestamp, body) => {
        // Arrange
        const { signingKey, publicKey } = pairOf(seed);
        // Act
        const headers = signWebhook({ id, timestamp, body }, [signingKey]);
        // Assert
        const [signature, ...more] = entries(headers['webhook-signature'], 'v1a');
        expect(more).toEqual([]);
        expect(signature).toHaveLength(64);
        const message = content(id, timestamp, body);
        expect(nodeVerifies(publicKey, message, signature!)).toBe(true);
        expect(await noble.verifyAsync(signature!, message, rawPublic(publicKey))).toBe(true);
        const clock = new FakeClock(timestamp * 1000);
        expect(verifyWebhook(body, { ...headers }, { publicKeys: publicKey, clock })).toEqual({
          ok: true,
          id,
          timestamp,
        });
      }),
      { numRuns: 60 },
    );
  });

  it('any single-byte change of the id, timestamp, body or signature fails verification', () => {
    fc.assert(
      fc.property(
        seeds,
        ids,
        fc.uint8Array({ minLength: 1, maxLength: 100 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        fc.constantFrom('body', 'signature', 'id', 'timestamp'),
        (seed, id, body, at, flip, part) => {
          // Arrange
          const { signingKey, publicKey } = pairOf(seed);
          const timestamp = 1_700_000_000;
          const headers = signWebhook({ id, timestamp, body }, signingKey);
          const changedBody = Uint8Array.from(body);
          let changed: Record<string, string> = { ...headers };
          // Act
          if (part === 'body') {
            changedBody[at % body.length]! ^= flip;
          } else if (part === 'signature') {
            const [signature] = entries(headers['webhook-signature'], 'v1a');
            signature![at % 64]! ^= flip;
            changed = {
              ...headers,
              'webhook-signature': `v1a,${Buffer.from(signature!).toString('base64')}`,
            };
          } else if (part === 'id') {
            const i = at % id.length;
            const c = String.fromCharCode(((id.charCodeAt(i) - 0x21 + 1) % 94) + 0x21);
            fc.pre(c !== ',');
            changed = { ...headers, 'webhook-id': id.slice(0, i) + c + id.slice(i + 1) };
          } else {
            changed = { ...headers, 'webhook-timestamp': String(timestamp + 1 + (at % 9)) };
          }
          // Assert
          const verdict = verifyWebhook(changedBody, changed, {
            publicKeys: publicKey,
            clock: new FakeClock(timestamp * 1000),
          });
          expect(verdict).toMatchObject({ ok: false, code: 'no_matching_signature' });
          expect(
            nodeVerifies(
              publicKey,
              content(changed['webhook-id']!, Number(changed['webhook-timestamp']), changedBody),
              entries(changed['webhook-signature']!, 'v1a')[0]!,
            ),
          ).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a v1 secret never verifies a v1a entry, and a public key never a v1 entry', () => {
    fc.assert(
      fc.property(seeds, ids, fc.string(), (seed, id, body) => {
        const { signingKey, publicKey } = pairOf(seed);
        const secret = generateWebhookSecret();
        const clock = new FakeClock(1_700_000_000_000);
        const input = { id, timestamp: 1_700_000_000, body };
        const asymmetric = signWebhook(input, signingKey);
        const symmetric = signWebhook(input, secret);
        // Each scheme's entry under the other's label too: the scheme is the key's, not the label's.
        const v1a = asymmetric['webhook-signature'].slice('v1a,'.length);
        const v1 = symmetric['webhook-signature'].slice('v1,'.length);
        const relabelled = { ...asymmetric, 'webhook-signature': `v1,${v1a} v1a,${v1}` };
        for (const headers of [asymmetric, relabelled]) {
          expect(verifyWebhook(body, headers, { secrets: secret, clock }).ok).toBe(false);
        }
        for (const headers of [symmetric, relabelled]) {
          expect(verifyWebhook(body, headers, { publicKeys: publicKey, clock }).ok).toBe(false);
        }
        expect(verifyWebhook(body, asymmetric, { publicKeys: publicKey, clock }).ok).toBe(true);
        expect(verifyWebhook(body, symmetric, { secrets: secret, clock }).ok).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('signs with every key in force, either kind, in the order given (a rotation)', async () => {
    const secret = generateWebhookSecret();
    const older = generateWebhookKeyPair();
    const newer = generateWebhookKeyPair();
    const input = { id: 'msg_rotating', timestamp: 1_700_000_000, body: '{"a":1}' };
    const headers = signWebhook(input, [newer.signingKey, older.signingKey, secret]);
    const schemes = headers['webhook-signature'].split(' ').map((entry) => entry.split(',')[0]);
    expect(schemes).toEqual(['v1a', 'v1a', 'v1']);
    const [first, second] = entries(headers['webhook-signature'], 'v1a');
    const message = content(input.id, input.timestamp, input.body);
    expect(await noble.verifyAsync(first!, message, rawPublic(newer.publicKey))).toBe(true);
    expect(await noble.verifyAsync(second!, message, rawPublic(older.publicKey))).toBe(true);
    const clock = new FakeClock(input.timestamp * 1000);
    for (const options of [
      { publicKeys: newer.publicKey },
      { publicKeys: [generateWebhookKeyPair().publicKey, older.publicKey] },
      { secrets: secret },
      { secrets: generateWebhookSecret(), publicKeys: [older.publicKey] },
    ]) {
      expect(verifyWebhook(input.body, headers, { ...options, clock }).ok).toBe(true);
    }
    const stranger = { publicKeys: generateWebhookKeyPair().publicKey, clock };
    expect(verifyWebhook(input.body, headers, stranger)).toMatchObject({
      ok: false,
      code: 'no_matching_signature',
    });
  });

  it('skips entries of other schemes and malformed ones, as the example header of the specification', () => {
    const { signingKey, publicKey } = generateWebhookKeyPair();
    const input = { id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', timestamp: 1674087231, body: '{}' };
    const v1a = signWebhook(input, signingKey)['webhook-signature'];
    const header = `v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v2,abc v1a, v1a,!!!! ${v1a}`;
    const clock = new FakeClock(input.timestamp * 1000);
    const headers = {
      'webhook-id': input.id,
      'webhook-timestamp': String(input.timestamp),
      'webhook-signature': header,
    };
    expect(verifyWebhook(input.body, headers, { publicKeys: publicKey, clock }).ok).toBe(true);
  });
});

describe('malformed keys', () => {
  const { signingKey, publicKey } = generateWebhookKeyPair();
  const input = { id: 'msg_1', timestamp: 1, body: '' };
  const options = (publicKeys: unknown) => ({ publicKeys: publicKeys as string });

  it.each([
    ['too short', `whpk_${Buffer.alloc(31).toString('base64')}`, 'whpk_ and 44 characters'],
    ['too long', `whpk_${Buffer.alloc(33).toString('base64')}`, 'whpk_ and 44 characters'],
    ['not base64', `whpk_${'*'.repeat(43)}=`, 'whpk_ and 44 characters'],
    ['without its prefix', publicKey.slice(5), 'a string of 44 characters'],
    ['a number', 42, '42'],
  ])('refuses a public key %s with invalid_webhook_public_key, never showing it', (_, key, got) => {
    const error = thrown(() => verifyWebhook('', {}, options(key)));
    expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_public_key');
    const message = (error as Error).message;
    expect(message).toContain(`got ${got}.`);
    if (typeof key === 'string') expect(message).not.toContain(key.slice(5, 20));
  });

  it('refuses a signing key given as a public key, saying so without showing it', () => {
    for (const given of [signingKey, [publicKey, signingKey]]) {
      const error = thrown(() => verifyWebhook('', {}, options(given)));
      expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_public_key');
      expect((error as Error).message).toContain('a signing key (whsk_…)');
      expect((error as Error).message).not.toContain(signingKey.slice(5));
    }
  });

  it('refuses any malformed whsk_ with invalid_webhook_signing_key, and no key at all', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 120 }), (text) => {
        const key = `whsk_${text}`;
        const error = thrown(() => signWebhook(input, [key]));
        if (/^[A-Za-z0-9+/]{43}=$/.test(text)) {
          expect(error).toBeUndefined();
        } else {
          // 64 bytes of base64 are taken only as a seed and its own public key: no string drawn
          // at random is one.
          expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_signing_key');
          expect((error as Error).message).toContain(`got whsk_ and ${text.length} characters.`);
        }
      }),
    );
    const none = thrown(() => verifyWebhook('', {}, { publicKeys: [] }));
    expect(isConfigurationError(none) && none.code).toBe('invalid_webhook_secret');
  });
});
