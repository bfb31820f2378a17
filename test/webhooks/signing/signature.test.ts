/** Signing per Standard Webhooks: the published test vector, the standardwebhooks package, rotation. */
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  generateWebhookSecret,
  isConfigurationError,
  signWebhook,
  verifyWebhook,
  WEBHOOK_SECRET_BYTES,
  WEBHOOK_SECRET_PREFIX,
  webhookSecretKey,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

const SECRET_EXPECTED =
  'whsec_ and the base64 of 24 to 64 random bytes (32 to 88 characters; generateWebhookSecret() makes one)';
const BODY_EXPECTED =
  'the raw body as sent, a string or a Uint8Array such as a Buffer (not the parsed JSON: serialising it again changes the bytes; wrap an ArrayBuffer with new Uint8Array(arrayBuffer))';
const WEBHOOK_ID_RULE =
  '1 to 256 visible ASCII characters without spaces or commas, such as msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';

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

  it('signs with a frozen list of secrets as with the same list unfrozen, each time, and refuses a frozen list of a malformed one each time', () => {
    const secrets = [generateWebhookSecret(), generateWebhookSecret()];
    const frozen = Object.freeze([...secrets]);
    for (let i = 0; i < 3; i++) {
      const input = { id: `msg_${i}`, timestamp: 1_700_000_000 + i, body: `{"n":${i}}` };
      expect(signWebhook(input, frozen)).toEqual(signWebhook(input, secrets));
    }
    const malformed = Object.freeze([secrets[0] as string, 'whsec_abc']);
    for (let i = 0; i < 2; i++) {
      const error = thrown(() => signWebhook({ id: 'm', timestamp: 1, body: '' }, malformed));
      expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_secret');
      expect((error as Error).message).toMatch(/^secrets\[1\] must be/);
    }
  });

  it('makes secrets of 32 random bytes with the whsec_ prefix', () => {
    const secret = generateWebhookSecret((n) => new Uint8Array(n).fill(7));
    expect(secret).toBe(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    expect(webhookSecretKey(secret)).toEqual(new Uint8Array(32).fill(7));
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
    expect((notText as Error).message).toBe(`secrets[0] must be ${SECRET_EXPECTED}, got a number.`);
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

describe('webhook secrets', () => {
  it('refuses a secret of ten million base64 characters by its length, in every function that reads one', () => {
    // Arrange: a secret far longer than the 88 characters of 64 bytes, all of it base64.
    const secret = `${WEBHOOK_SECRET_PREFIX}${'A'.repeat(10_000_000)}`;
    for (const [name, attempt] of [
      ['webhook secret', () => webhookSecretKey(secret)],
      ['secrets', () => signWebhook({ id: 'msg_1', timestamp: 1, body: '{}' }, secret)],
      ['secrets', () => verifyWebhook('{}', {}, { secrets: secret })],
    ] as const) {
      // Act
      const error = thrown(attempt);
      // Assert: its length, never its text
      expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_secret');
      expect((error as Error).message).toBe(
        `${name} must be ${SECRET_EXPECTED}, got whsec_ and 10000000 characters.`,
      );
    }
  });

  it('returns 24 to 64 key bytes or throws invalid_webhook_secret, for any string of any length', () => {
    const base64Char = fc.constantFrom(
      ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=',
    );
    const secretArb = fc.oneof(
      fc.string(),
      fc.string({ unit: base64Char, maxLength: 120 }),
      // Long base64 text, the shape that makes a backtracking engine recurse per group.
      fc
        .tuple(fc.integer({ min: 89, max: 3_000_000 }), fc.constantFrom('A', '+', 'z'))
        .map(([length, char]) => char.repeat(length)),
      fc.uint8Array({ minLength: 0, maxLength: 80 }).map((b) => Buffer.from(b).toString('base64')),
    );
    fc.assert(
      fc.property(secretArb, fc.boolean(), (text, prefixed) => {
        const secret = prefixed ? `${WEBHOOK_SECRET_PREFIX}${text}` : text;
        const error = thrown(() => webhookSecretKey(secret));
        if (error === undefined) {
          const key = webhookSecretKey(secret);
          expect(key.length).toBeGreaterThanOrEqual(WEBHOOK_SECRET_BYTES.min);
          expect(key.length).toBeLessThanOrEqual(WEBHOOK_SECRET_BYTES.max);
        } else {
          expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_secret');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('generates only secrets that webhookSecretKey accepts, or throws invalid_option naming what the random source must return', () => {
    // Arrange: random sources that return the bytes asked for, too few, too many, or no bytes.
    const sourceArb = fc.oneof(
      fc.constant((size: number) => new Uint8Array(size).fill(1)),
      fc.uint8Array({ maxLength: 100 }).map((bytes) => () => bytes),
      fc.anything().map((value) => () => value),
      fc.anything(),
    );
    fc.assert(
      fc.property(sourceArb, (source) => {
        // Act
        let secret: string | undefined;
        const error = thrown(() => {
          secret = generateWebhookSecret(source as never);
        });
        // Assert
        if (error === undefined) {
          expect(webhookSecretKey(secret!)).toHaveLength(32);
        } else {
          expect(isConfigurationError(error) && error.code).toBe('invalid_option');
          expect((error as Error).message).toMatch(/Uint8Array/);
        }
      }),
    );
  });

  const SOURCE =
    'generateWebhookSecret bytes must be a function that returns that many random bytes, (size) => Uint8Array, such as crypto.randomBytes';
  const BYTES = 'generateWebhookSecret bytes(32) must be a Uint8Array of the 32 bytes asked for';
  it.each([
    ['a string', 'x', `${SOURCE}, got "x".`],
    ['null', null, `${SOURCE}, got null.`],
    ['an array', [], `${SOURCE}, got an array.`],
    ['a number from the source', () => 5, `${BYTES}, got a number.`],
    ['text from the source', () => 'abc', `${BYTES}, got a string of 3 characters.`],
    ['null from the source', () => null, `${BYTES}, got null.`],
    ['16 bytes', () => new Uint8Array(16), `${BYTES}, got 16 bytes.`],
    ['100 bytes', () => new Uint8Array(100), `${BYTES}, got 100 bytes.`],
  ])('generateWebhookSecret refuses %s with invalid_option', (_, source, message) => {
    const error = thrown(() => generateWebhookSecret(source as never));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(message);
  });
});

describe('signWebhook: what it signs', () => {
  const secret = generateWebhookSecret((n) => new Uint8Array(n).fill(3));

  it.each([
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['a parsed object', {}, 'an object'],
    ['an array', [1], 'an array'],
    ['an ArrayBuffer', new ArrayBuffer(3), 'an object'],
    ['a number', 5, '5'],
    ['NaN', Number.NaN, 'NaN'],
    ['a DataView', new DataView(new ArrayBuffer(3)), 'an object'],
  ])('refuses a body that is %s with invalid_option, as verifyWebhook does', (_, body, got) => {
    const error = thrown(() => signWebhook({ id: 'msg_1', timestamp: 1, body } as never, secret));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(`input.body must be ${BODY_EXPECTED}, got ${got}.`);
    const verifying = thrown(() => verifyWebhook(body as never, {}, { secrets: secret }));
    expect(isConfigurationError(verifying) && verifying.code).toBe('invalid_option');
    expect((verifying as Error).message).toBe(
      `verifyWebhook body must be ${BODY_EXPECTED}, got ${got}.`,
    );
  });

  it('accepts exactly the bodies verifyWebhook accepts, and signs a Uint8Array like the string it encodes', () => {
    const bodyArb = fc.oneof(
      fc.string(),
      fc.uint8Array(),
      fc.string().map((text) => new TextEncoder().encode(text)),
      fc.anything(),
    );
    fc.assert(
      fc.property(bodyArb, (body) => {
        // Arrange
        const timestamp = Math.floor(Date.now() / 1000);
        // Act
        let headers: ReturnType<typeof signWebhook> | undefined;
        const signing = thrown(() => {
          headers = signWebhook({ id: 'msg_1', timestamp, body } as never, secret);
        });
        const verifying = thrown(() => verifyWebhook(body as never, {}, { secrets: secret }));
        // Assert
        expect(signing === undefined).toBe(verifying === undefined);
        if (signing !== undefined) {
          expect(isConfigurationError(signing) && signing.code).toBe('invalid_option');
          return;
        }
        expect(verifyWebhook(body as never, headers!, { secrets: secret }).ok).toBe(true);
        if (body instanceof Uint8Array) {
          const bytes = Buffer.from(body);
          expect(signWebhook({ id: 'msg_1', timestamp, body: bytes }, secret)).toEqual(headers);
        }
      }),
    );
  });

  it.each([
    ['null', null, 'null'],
    ['undefined', undefined, 'undefined'],
    ['a string', 'msg_1', '"msg_1"'],
  ])('refuses an input that is %s with invalid_option', (_, input, got) => {
    const error = thrown(() => signWebhook(input as never, secret));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(
      `signWebhook input must be an object { id, timestamp, body }, got ${got}.`,
    );
  });

  it('reads each field of the input once, and refuses one whose getter throws as no plain data', () => {
    const input = Object.defineProperty({ timestamp: 1, body: '' }, 'id', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    const error = thrown(() => signWebhook(input as never, secret));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(
      'signWebhook input must be an object { id, timestamp, body }, got an object that threw when read.',
    );
  });

  it.each([
    [
      'id',
      { id: 'a b', timestamp: 1, body: '' },
      `input.id must be ${WEBHOOK_ID_RULE}, got "a b".`,
    ],
    [
      'id',
      { id: ['m'], timestamp: 1, body: '' },
      `input.id must be ${WEBHOOK_ID_RULE}, got an array.`,
    ],
    [
      'timestamp',
      { id: 'm', timestamp: Number.NaN, body: '' },
      'input.timestamp must be whole seconds since the epoch, a whole number from 0, got NaN.',
    ],
    [
      'timestamp',
      { id: 'm', timestamp: '1', body: '' },
      'input.timestamp must be whole seconds since the epoch, a whole number from 0, got "1".',
    ],
  ])('refuses a bad %s, naming it', (_, input, message) => {
    const error = thrown(() => signWebhook(input as never, secret));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(message);
  });

  it.each([
    ['no secret', [], 'an array'],
    ['null', null, 'null'],
    ['a number', 42, '42'],
  ])('refuses %s as the secrets with invalid_webhook_secret', (_, secrets, got) => {
    const error = thrown(() => signWebhook({ id: 'm', timestamp: 1, body: '' }, secrets as never));
    expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_secret');
    expect((error as Error).message).toBe(
      `secrets must be a webhook secret (whsec_…) or signing key (whsk_…), or a non-empty array of them (two while rotating: the new one and the old one), got ${got}.`,
    );
  });

  it('refuses an id of ten million characters as it refuses any id over 256', () => {
    for (const id of ['x'.repeat(257), 'x'.repeat(10_000_000)]) {
      const error = thrown(() => signWebhook({ id, timestamp: 1, body: '' }, secret));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
    expect(signWebhook({ id: 'x'.repeat(256), timestamp: 1, body: '' }, secret)).toBeDefined();
  });
});
