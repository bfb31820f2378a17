/** The message envelope: the documented default, a custom one, and refusals. */
import { describe, expect, it } from 'vitest';
import { createWebhookMessage, FakeClock, isConfigurationError } from '../../src/index.js';
import { thrown } from '../support/thrown.js';

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
});
