/** verifyWebhook for receivers: signatures from the standardwebhooks package, tolerance, tampering. */
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  FakeClock,
  generateWebhookSecret,
  isConfigurationError,
  signWebhook,
  verifyWebhook,
} from '../../../src/index.js';
import { revokedProxy, throwingGetters, throwingProxy } from '../../support/hostile.js';
import { thrown } from '../../support/thrown.js';

const T = 1_700_000_000;
const clock = new FakeClock(T * 1000);

describe('verifyWebhook', () => {
  it('accepts a delivery signed by the standardwebhooks package, with headers in any case', () => {
    const secret = generateWebhookSecret();
    const body = '{"type":"folio/created"}';
    const signature = new Webhook(secret).sign('msg_42', new Date(T * 1000), body);
    const verdict = verifyWebhook(
      body,
      { 'Webhook-Id': 'msg_42', 'webhook-timestamp': String(T), 'WEBHOOK-SIGNATURE': signature },
      { secrets: secret, clock },
    );
    expect(verdict).toEqual({ ok: true, id: 'msg_42', timestamp: T });
    const viaFetchHeaders = new Headers({
      'webhook-id': 'msg_42',
      'webhook-timestamp': String(T),
      'webhook-signature': `v2,abc v1,AAAA ${signature}`,
    });
    expect(verifyWebhook(Buffer.from(body), viaFetchHeaders, { secrets: [secret], clock }).ok).toBe(
      true,
    );
  });

  it('refuses timestamps outside the tolerance in either direction', () => {
    const secret = generateWebhookSecret();
    const at = (timestamp: number) =>
      verifyWebhook('x', signWebhook({ id: 'm', timestamp, body: 'x' }, secret), {
        secrets: secret,
        clock,
      });
    expect(at(T - 300).ok).toBe(true);
    expect(at(T + 300).ok).toBe(true);
    expect(at(T - 301)).toMatchObject({ ok: false, code: 'timestamp_too_old' });
    expect(at(T + 301)).toMatchObject({ ok: false, code: 'timestamp_too_new' });
    const strict = verifyWebhook(
      'x',
      signWebhook({ id: 'm', timestamp: T - 10, body: 'x' }, secret),
      {
        secrets: secret,
        clock,
        toleranceSeconds: 5,
      },
    );
    expect(strict).toMatchObject({ ok: false, code: 'timestamp_too_old' });
  });

  it('refuses missing headers and malformed timestamps without throwing', () => {
    const secret = generateWebhookSecret();
    const good = signWebhook({ id: 'm', timestamp: T, body: 'x' }, secret);
    const options = { secrets: secret, clock };
    expect(verifyWebhook('x', {}, options)).toMatchObject({ code: 'missing_header' });
    expect(verifyWebhook('x', { ...good, 'webhook-id': ['a', 'b'] }, options)).toMatchObject({
      code: 'missing_header',
    });
    for (const stamp of ['hello', '-1', '1e9', ' 1', '1.5']) {
      expect(verifyWebhook('x', { ...good, 'webhook-timestamp': stamp }, options)).toMatchObject({
        code: 'invalid_timestamp',
      });
    }
  });

  it('never throws for any headers a request can carry, and refuses all of them', () => {
    const secret = generateWebhookSecret();
    const value = fc.oneof(
      fc.string(),
      fc.array(fc.string(), { maxLength: 3 }),
      fc.constant(undefined),
    );
    fc.assert(
      fc.property(
        fc.record({ 'webhook-id': value, 'webhook-timestamp': value, 'webhook-signature': value }),
        fc.dictionary(fc.string(), value),
        (known, other) => {
          const verdict = verifyWebhook('{}', { ...other, ...known }, { secrets: secret, clock });
          expect(verdict.ok).toBe(false);
        },
      ),
    );
    expect(verifyWebhook('{}', null as never, { secrets: secret })).toMatchObject({
      code: 'missing_header',
    });
  });

  it('refuses a bad configuration with a ConfigurationError', () => {
    const parsed = thrown(() =>
      verifyWebhook({ type: 'x' } as never, {}, { secrets: generateWebhookSecret() }),
    );
    expect(isConfigurationError(parsed) && (parsed as Error).message).toContain('raw body');
    const list =
      'secrets must be a webhook secret (whsec_…), or a non-empty array of them (two while rotating: the new one and the old one)';
    const one =
      'must be whsec_ and the base64 of 24 to 64 random bytes (32 to 88 characters; generateWebhookSecret() makes one)';
    for (const [secrets, message] of [
      // A secret is shown by its length, never its text.
      ['nope', `secrets ${one}, got a string of 4 characters.`],
      [['whsec_nope'], `secrets[0] ${one}, got whsec_ and 4 characters.`],
      [[], `${list}, got an array.`],
      [undefined, `${list}, unless publicKeys holds a public key, got undefined.`],
      [null, `${list}, got null.`],
      [{ 0: 'whsec_x', length: 1 }, `${list}, got an object.`],
    ] as const) {
      const error = thrown(() => verifyWebhook('', {}, { secrets: secrets as never }));
      expect(isConfigurationError(error) && error.code).toBe('invalid_webhook_secret');
      expect((error as Error).message).toBe(message);
    }
    const typo = thrown(() =>
      verifyWebhook('', {}, { secrets: generateWebhookSecret(), toleranceSecond: 5 } as never),
    );
    expect(isConfigurationError(typo) && typo.code).toBe('invalid_option');
    expect((typo as Error).message).toBe(
      'verifyWebhook has no option "toleranceSecond"; did you mean "toleranceSeconds"? Its options are secrets, publicKeys, clock, toleranceSeconds.',
    );
    for (const toleranceSeconds of [-1, Number.NaN]) {
      const error = thrown(() =>
        verifyWebhook('', {}, { secrets: generateWebhookSecret(), toleranceSeconds }),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toBe(
        `toleranceSeconds must be a number of seconds >= 0, got ${toleranceSeconds}.`,
      );
    }
  });

  it('refuses a clock whose time is not a finite number instead of accepting any timestamp', () => {
    const secret = generateWebhookSecret();
    // Signed a year before the receiver's time: a replay.
    const headers = signWebhook({ id: 'msg_old', timestamp: T - 365 * 86_400, body: '{}' }, secret);
    for (const [time, got] of [
      [Number.NaN, 'NaN'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
      ['1700000000000' as never, '"1700000000000"'],
      [null as never, 'null'],
    ] as const) {
      const error = thrown(() =>
        verifyWebhook('{}', headers, { secrets: secret, clock: { now: () => time } }),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toBe(`clock.now() must be a finite time in ms, got ${got}.`);
    }
  });

  it('judges the timestamp by the system clock when no clock is given', () => {
    const secret = generateWebhookSecret();
    const verdictAt = (timestamp: number) => {
      const headers = signWebhook({ id: 'msg_now', timestamp, body: '{}' }, secret);
      return verifyWebhook('{}', headers, { secrets: secret });
    };
    const now = Math.floor(Date.now() / 1000);
    expect(verdictAt(now)).toEqual({ ok: true, id: 'msg_now', timestamp: now });
    // Signed at the fake clock's time, long ago by the system clock.
    expect(verdictAt(T)).toMatchObject({ ok: false, code: 'timestamp_too_old' });
  });

  it('accepts exactly what was signed: any change to id, timestamp, body or signature is refused', () => {
    const secret = generateWebhookSecret();
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z0-9_]{1,20}$/),
        fc.integer({ min: -300, max: 300 }),
        fc.uint8Array({ maxLength: 200 }),
        fc.nat(),
        fc.integer({ min: 0, max: 3 }),
        (id, skew, bytes, where, field) => {
          const body = Buffer.from(bytes);
          const headers = signWebhook({ id, timestamp: T + skew, body }, secret);
          expect(verifyWebhook(body, headers, { secrets: secret, clock })).toEqual({
            ok: true,
            id,
            timestamp: T + skew,
          });
          const changed = { ...headers };
          let changedBody = body;
          if (field === 0) changed['webhook-id'] = `${id}x`;
          if (field === 1) changed['webhook-timestamp'] = String(T + skew + (skew > 0 ? -1 : 1));
          if (field === 2) {
            changedBody = Buffer.concat([body, Buffer.from([where % 256])]);
          }
          if (field === 3) {
            const sig = Buffer.from(headers['webhook-signature'].slice(3), 'base64');
            const i = where % sig.length;
            sig.writeUInt8(sig.readUInt8(i) ^ 1, i);
            changed['webhook-signature'] = `v1,${sig.toString('base64')}`;
          }
          expect(verifyWebhook(changedBody, changed, { secrets: secret, clock })).toMatchObject({
            ok: false,
            code: 'no_matching_signature',
          });
        },
      ),
    );
  });

  it('reads headers that throw as absent and refuses a Proxy of bytes as a body, never throwing a TypeError', () => {
    // Arrange: a delivery correctly signed, then headers and bodies that throw when read.
    const secret = generateWebhookSecret();
    const headers = signWebhook({ id: 'm', timestamp: T, body: 'x' }, secret);
    const options = { secrets: secret, clock };
    const hostileHeaders: unknown[] = [
      throwingGetters(['webhook-signature'], { ...headers }),
      {
        get: () => {
          throw new Error('hostile get');
        },
      },
      throwingProxy(['get', 'ownKeys'], {}),
      revokedProxy({}),
      { ...headers, 'webhook-id': throwingProxy(['get'], ['m']) },
    ];
    for (const candidate of hostileHeaders) {
      // Act and assert
      expect(verifyWebhook('x', candidate as never, options)).toMatchObject({
        ok: false,
        code: 'missing_header',
      });
    }
    for (const body of [throwingProxy(['getPrototypeOf'], {}), new Proxy(Buffer.from('x'), {})]) {
      const error = thrown(() => verifyWebhook(body as never, headers, options));
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
  });
});
