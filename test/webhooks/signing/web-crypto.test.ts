/**
 * The signatures through WebCrypto (the runtimes without node:crypto) against the ones through
 * node:crypto: the same headers, the same verdicts, the same refusals. And the asynchronous forms,
 * the receiver and the deliveries' transport on a runtime without Node's modules, made here by
 * `process.getBuiltinModule` answering nothing.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ConfigurationError,
  createWebhookReceiver,
  FakeClock,
  generateWebhookKeyPair,
  generateWebhookKeyPairAsync,
  signWebhook,
  signWebhookAsync,
  verifyWebhook,
  verifyWebhookAsync,
  webhookPublicKeyOf,
  webhookPublicKeyOfAsync,
} from '../../../src/index.js';
import { webCryptoSignWebhook } from '../../../src/webhooks/signing/signature.js';
import { webCryptoVerifyWebhook } from '../../../src/webhooks/signing/verify.js';
import { webCryptoPublicKey } from '../../../src/webhooks/signing/web-crypto.js';
import { thrown } from '../../support/thrown.js';

const T = 1_700_000_000;
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

const secretArb = fc
  .uint8Array({ minLength: 24, maxLength: 64 })
  .map((key) => `whsec_${base64(key)}`);
const seedArb = fc.uint8Array({ minLength: 32, maxLength: 32 });
const pairArb = seedArb.map((seed) => generateWebhookKeyPair(() => seed));
const inputArb = fc.record({
  id: fc.stringMatching(/^msg_[A-Za-z0-9]{1,30}$/),
  timestamp: fc.integer({ min: T - 100, max: T + 100 }),
  body: fc.oneof(fc.string(), fc.uint8Array({ maxLength: 64 })),
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

// A runtime without Node's modules: process.getBuiltinModule answers nothing.
function withoutNodeModules(): void {
  vi.spyOn(process, 'getBuiltinModule').mockImplementation((() => undefined) as never);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('signing and verifying through WebCrypto', () => {
  it('signs as node:crypto does, with any mix of secrets and signing keys (ed25519 is deterministic)', async () => {
    await fc.assert(
      fc.asyncProperty(
        inputArb,
        fc.array(
          fc.oneof(
            secretArb,
            pairArb.map((pair) => pair.signingKey),
          ),
          {
            minLength: 1,
            maxLength: 3,
          },
        ),
        async (input, keys) => {
          expect(await webCryptoSignWebhook(input, keys)).toEqual(signWebhook(input, keys));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('derives the public key node:crypto derives from a seed', async () => {
    await fc.assert(
      fc.asyncProperty(seedArb, async (seed) => {
        const { publicKey } = generateWebhookKeyPair(() => seed);
        expect(`whpk_${base64(await webCryptoPublicKey(seed))}`).toBe(publicKey);
      }),
      { numRuns: 30 },
    );
  });

  it('gives the verdict node:crypto gives: signed, tampered, signed by another key, late or early', async () => {
    await fc.assert(
      fc.asyncProperty(
        inputArb,
        secretArb,
        pairArb,
        fc.constantFrom('v1', 'v1a', 'both'),
        fc.constantFrom('as signed', 'body changed', 'other key', 'signature mangled'),
        fc.integer({ min: -400, max: 400 }),
        async (input, secret, pair, scheme, change, skew) => {
          const keys =
            scheme === 'v1'
              ? [secret]
              : scheme === 'v1a'
                ? [pair.signingKey]
                : [secret, pair.signingKey];
          const headers: Record<string, string> = { ...signWebhook(input, keys) };
          let body = input.body;
          if (change === 'body changed') body = `${typeof body === 'string' ? body : ''}!`;
          if (change === 'signature mangled') {
            headers['webhook-signature'] = headers['webhook-signature']!.replace(/[A-Z]/g, 'a');
          }
          const other = generateWebhookKeyPair();
          const options = {
            secrets: change === 'other key' ? 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' : secret,
            publicKeys: change === 'other key' ? other.publicKey : pair.publicKey,
            clock: new FakeClock((input.timestamp + skew) * 1000),
          };
          expect(await webCryptoVerifyWebhook(body, headers, options)).toEqual(
            verifyWebhook(body, headers, options),
          );
        },
      ),
      { numRuns: 80 },
    );
  });

  it('refuses what node:crypto refuses, with the same message: a malformed secret, a key pair whose halves differ, no key', async () => {
    const { signingKey, publicKey } = generateWebhookKeyPair();
    const other = generateWebhookKeyPair();
    const seed = Buffer.from(signingKey.slice(5), 'base64');
    const wrongHalf = Buffer.from(other.publicKey.slice(5), 'base64');
    const mismatched = `whsk_${base64(Buffer.concat([seed, wrongHalf]))}`;
    const input = { id: 'msg_1', timestamp: T, body: '{}' };
    for (const keys of ['whsec_short', [signingKey, mismatched], [], 'nope']) {
      const sync = thrown(() => signWebhook(input, keys));
      const viaWeb = await rejection(webCryptoSignWebhook(input, keys));
      expect(viaWeb).toBeInstanceOf(ConfigurationError);
      expect(viaWeb).toEqual(sync);
      expect((viaWeb as ConfigurationError).message).toBe((sync as ConfigurationError).message);
    }
    for (const options of [{ publicKeys: signingKey }, {}, { secrets: [] }]) {
      const sync = thrown(() => verifyWebhook('{}', {}, options));
      const viaWeb = await rejection(webCryptoVerifyWebhook('{}', {}, options));
      expect((viaWeb as ConfigurationError).message).toBe((sync as ConfigurationError).message);
    }
    expect(publicKey.startsWith('whpk_')).toBe(true);
  });
});

describe('on a runtime without node:crypto', () => {
  it('the asynchronous forms sign and verify through WebCrypto, and the synchronous ed25519 one says what to use instead', async () => {
    const { signingKey, publicKey } = generateWebhookKeyPair();
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const input = { id: 'msg_1', timestamp: T, body: '{"a":1}' };
    const expected = signWebhook(input, [secret, signingKey]);
    withoutNodeModules();
    expect(await signWebhookAsync(input, [secret, signingKey])).toEqual(expected);
    const clock = new FakeClock(T * 1000);
    for (const options of [{ secrets: secret }, { publicKeys: publicKey }]) {
      expect(await verifyWebhookAsync(input.body, expected, { ...options, clock })).toEqual({
        ok: true,
        id: 'msg_1',
        timestamp: T,
      });
    }
    // v1 needs no node:crypto even in its synchronous form; v1a's does.
    expect(signWebhook(input, secret)['webhook-signature']).toBe(
      expected['webhook-signature'].split(' ')[0],
    );
    const error = thrown(() => signWebhook(input, signingKey));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).code).toBe('unsupported_runtime');
    expect((error as ConfigurationError).message).toBe(
      'A v1a signature (signWebhook) needs node:crypto, which this runtime does not have: use the asynchronous form (WebCrypto), or on Cloudflare Workers turn on the nodejs_compat flag.',
    );
  });

  it('key pairs and public keys come through WebCrypto: the same for the same seed, the same refusals', async () => {
    const seeds = [new Uint8Array(32).fill(9), Uint8Array.from({ length: 32 }, (_, i) => i)];
    const expected = seeds.map((seed) => generateWebhookKeyPair(() => seed));
    const mismatched = `whsk_${base64(Buffer.concat([Buffer.alloc(32, 9), Buffer.alloc(32, 1)]))}`;
    const syncRefusal = thrown(() => webhookPublicKeyOf(mismatched));
    withoutNodeModules();
    for (const [index, seed] of seeds.entries()) {
      const pair = await generateWebhookKeyPairAsync(() => seed);
      expect(pair).toEqual(expected[index]);
      expect(await webhookPublicKeyOfAsync(pair.signingKey)).toBe(pair.publicKey);
    }
    const fresh = await generateWebhookKeyPairAsync();
    expect(await webhookPublicKeyOfAsync(fresh.signingKey)).toBe(fresh.publicKey);
    expect(await rejection(webhookPublicKeyOfAsync(mismatched))).toEqual(syncRefusal);
    expect(await rejection(generateWebhookKeyPairAsync(() => new Uint8Array(31)))).toMatchObject({
      code: 'invalid_option',
    });
  });

  it('the receiver verifies v1 and v1a through WebCrypto', async () => {
    const { signingKey, publicKey } = generateWebhookKeyPair();
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"type":"reservation/created"}';
    const v1 = signWebhook({ id: 'msg_v1', timestamp: T, body }, secret);
    const v1a = signWebhook({ id: 'msg_v1a', timestamp: T, body }, signingKey);
    withoutNodeModules();
    const handled: string[] = [];
    const receiver = createWebhookReceiver({
      secrets: secret,
      publicKeys: publicKey,
      clock: new FakeClock(T * 1000),
      handle: ({ id }) => {
        handled.push(id);
      },
    });
    const post = (headers: Record<string, string>, text = body) =>
      receiver.fetch(
        new Request('http://localhost/hooks', { method: 'POST', headers, body: text }),
      );
    expect((await post(v1)).status).toBe(200);
    expect((await post(v1a)).status).toBe(200);
    expect((await post(v1a, `${body} `)).status).toBe(401);
    expect(handled).toEqual(['msg_v1', 'msg_v1a']);
  });
});
