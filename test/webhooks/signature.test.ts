/** Signing per Standard Webhooks: the published test vector, the standardwebhooks package, rotation. */
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  generateWebhookSecret,
  isConfigurationError,
  signWebhook,
  WEBHOOK_SECRET_PREFIX,
  webhookSecretKey,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

// The test vector published with the standardwebhooks JavaScript library.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('signWebhook', () => {
  it('reproduces the published test vector of the specification', () => {
    const headers = signWebhook(
      { id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body },
      VECTOR.secret,
    );
    expect(headers).toEqual({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': String(VECTOR.timestamp),
      'webhook-signature': VECTOR.signature,
    });
    // The prefix is optional, as in the reference library.
    expect(
      signWebhook({ id: VECTOR.id, timestamp: VECTOR.timestamp, body: Buffer.from(VECTOR.body) }, [
        VECTOR.secret.slice(WEBHOOK_SECRET_PREFIX.length),
      ])['webhook-signature'],
    ).toBe(VECTOR.signature);
  });

  it('agrees with the standardwebhooks package: its sign gives the same, its verify accepts ours', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        fc.stringMatching(/^msg_[A-Za-z0-9]{1,30}$/),
        fc.string(),
        (key, id, body) => {
          const secret = `whsec_${Buffer.from(key).toString('base64')}`;
          const timestamp = Math.floor(Date.now() / 1000);
          const headers = signWebhook({ id, timestamp, body }, secret);
          const reference = new Webhook(secret);
          expect(headers['webhook-signature']).toBe(
            reference.sign(id, new Date(timestamp * 1000), body),
          );
          expect(() => reference.verify(body, { ...headers }, { jsonParse: false })).not.toThrow();
        },
      ),
    );
  });

  it('signs with every secret in force, so a receiver holding either one verifies (rotation)', () => {
    const [older, newer] = [generateWebhookSecret(), generateWebhookSecret()];
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = signWebhook({ id: 'msg_1', timestamp, body: '{}' }, [newer, older]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [older, newer]) {
      expect(() => new Webhook(secret).verify('{}', { ...headers })).not.toThrow();
    }
    expect(() => new Webhook(generateWebhookSecret()).verify('{}', { ...headers })).toThrow();
  });

  it('makes secrets of 32 random bytes with the whsec_ prefix', () => {
    const secret = generateWebhookSecret((n) => new Uint8Array(n).fill(7));
    expect(secret).toBe(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    expect(webhookSecretKey(secret)).toEqual(Buffer.alloc(32, 7));
  });

  it('refuses malformed secrets, ids and timestamps with a code and what to change', () => {
    for (const secret of ['', 'whsec_', 'whsec_abc', 'whsec_!!!!', `whsec_${'A'.repeat(100)}`]) {
      const error = thrown(() => signWebhook({ id: 'm', timestamp: 1, body: '' }, secret));
      expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_secret');
    }
    expect(
      isConfigurationError(thrown(() => signWebhook({ id: 'm', timestamp: 1, body: '' }, []))),
    ).toBe(true);
    // A secret read from a store as something else than text, such as a number.
    const notText = thrown(() => signWebhook({ id: 'm', timestamp: 1, body: '' }, [42 as never]));
    expect(isConfigurationError(notText) && notText.code).toBe('invalid_webhook_secret');
    expect((notText as Error).message).toBe(
      'A webhook secret must be a string such as whsec_<base64>; got number.',
    );
    const secret = generateWebhookSecret();
    for (const input of [
      { id: 'a b', timestamp: 1, body: '' },
      { id: 'a,b', timestamp: 1, body: '' },
      { id: 'm', timestamp: 1.5, body: '' },
    ]) {
      const error = thrown(() => signWebhook(input, secret));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
  });
});
