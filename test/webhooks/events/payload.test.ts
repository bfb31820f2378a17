/** The message envelope: the documented default, a custom one, and refusals. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createWebhookMessage,
  FakeClock,
  generateWebhookSecret,
  isConfigurationError,
  signWebhook,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5));

describe('createWebhookMessage', () => {
  it('serialises the default envelope: id, topic, type, accountId, propertyId, timestamp, data', () => {
    const message = createWebhookMessage(
      { accountCode: 'ACME', kind: 'reservation/created', propertyId: 'BER', data: { id: 'R1' } },
      { clock, generateId: () => 'msg_1' },
    );
    expect(message.id).toBe('msg_1');
    expect(message.body).toBe(
      '{"id":"msg_1","topic":"reservation","type":"reservation/created","accountId":"ACME","propertyId":"BER","timestamp":"2026-01-02T03:04:05.000Z","data":{"id":"R1"}}',
    );
    const accountLevel = JSON.parse(
      createWebhookMessage({ accountCode: 'ACME', kind: 'folio/created' }, { clock }).body,
    );
    expect(accountLevel).not.toHaveProperty('propertyId');
    expect(accountLevel.data).toBeNull();
    expect(accountLevel.id).toMatch(/^msg_[0-9a-f-]{36}$/);
  });

  it('builds a custom envelope when one is configured', () => {
    const message = createWebhookMessage(
      { accountCode: 'ACME', kind: 'folio/created' },
      {
        clock,
        generateId: () => 'm',
        envelope: (event, id, at) => ({ event: event.kind, id, at }),
      },
    );
    expect(JSON.parse(message.body)).toEqual({ event: 'folio/created', id: 'm', at: clock.now() });
  });

  it('refuses a malformed kind and an envelope JSON cannot hold', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const attempt of [
      () => createWebhookMessage({ accountCode: 'A', kind: 'folio/*' }),
      () => createWebhookMessage({ accountCode: 'A', kind: 'folio/x', data: cyclic }),
      () =>
        createWebhookMessage({ accountCode: 'A', kind: 'folio/x' }, { envelope: () => undefined }),
    ]) {
      const error = thrown(attempt);
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    }
  });

  it('refuses an envelope that fails with something other than an Error, quoting what it threw', () => {
    const error = thrown(() =>
      createWebhookMessage(
        { accountCode: 'A', kind: 'folio/x' },
        {
          envelope: () => {
            throw 'no tenant for account A';
          },
        },
      ),
    );
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(
      'The envelope cannot be serialised as JSON: no tenant for account A.',
    );
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a string', 'folio/created'],
  ])('refuses an event that is %s with invalid_option', (_, event) => {
    const error = thrown(() => createWebhookMessage(event as never));
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toMatch(/needs an event \{ accountCode, kind/);
  });

  it.each([
    ['options null', null, /options of createWebhookMessage must be an object/],
    ['a generateId that is no function', { generateId: 'msg_1' }, /generateId must be a function/],
    ['an envelope that is no function', { envelope: {} }, /envelope must be a function/],
    ['a clock without now()', { clock: {} }, /clock\.now must be a function/],
  ])('refuses %s with invalid_option', (_, options, message) => {
    const error = thrown(() =>
      createWebhookMessage({ accountCode: 'A', kind: 'folio/created' }, options as never),
    );
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    ['a number', () => 5, /got a number/],
    ['an id with a space', () => 'a b', /got "a b"/],
    ['an id with a comma', () => 'a,b', /got "a,b"/],
    ['an empty id', () => '', /got ""/],
    ['an id over 256 characters', () => 'x'.repeat(257), /got "x{64}"/],
  ])(
    'refuses an id source that returns %s, naming what signWebhook accepts',
    (_, generateId, got) => {
      const error = thrown(() =>
        createWebhookMessage(
          { accountCode: 'A', kind: 'folio/created' },
          {
            generateId: generateId as () => string,
          },
        ),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toMatch(
        /^generateId must return a message id signWebhook accepts, 1 to 256 visible ASCII characters without spaces or commas/,
      );
      expect((error as Error).message).toMatch(got);
    },
  );

  it('every id it returns is one signWebhook accepts; any other id source is refused', () => {
    const secret = generateWebhookSecret();
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.anything()), (id) => {
        // Act
        let message: ReturnType<typeof createWebhookMessage> | undefined;
        const error = thrown(() => {
          message = createWebhookMessage(
            { accountCode: 'A', kind: 'folio/created' },
            { clock, generateId: () => id as string },
          );
        });
        // Assert
        if (error !== undefined) {
          expect(isConfigurationError(error) && error.code).toBe('invalid_option');
          return;
        }
        expect(message!.id).toBe(id);
        const headers = signWebhook({ id: message!.id, timestamp: 1, body: message!.body }, secret);
        expect(headers['webhook-id']).toBe(id);
      }),
      { numRuns: 300 },
    );
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, 1e20, '2026-01-01'])(
    'blames the clock, not the envelope, when clock.now() returns %s',
    (time) => {
      const error = thrown(() =>
        createWebhookMessage(
          { accountCode: 'A', kind: 'folio/created' },
          { clock: { now: () => time as number } },
        ),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toMatch(
        /^clock\.now\(\) must return a time in ms that a Date can hold/,
      );
      expect((error as Error).message).not.toMatch(/envelope/);
    },
  );
});
