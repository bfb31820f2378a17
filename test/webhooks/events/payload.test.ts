/** The message envelope: the documented default, a custom one, and refusals. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createWebhookMessage,
  FakeClock,
  generateWebhookSecret,
  InvalidRequestError,
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

  const ID_RULE =
    '1 to 256 visible ASCII characters without spaces or commas, such as msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
  const EVENT = 'an object { accountCode, kind, propertyId?, data? } of plain data';
  const KIND =
    'an event kind <topic>/<event> of lower-case letters, digits and inner hyphens, such as folio/created (no wildcard; well-formed Unicode)';

  it.each([
    ['null', null, '', `event must be ${EVENT}, got null.`],
    ['undefined', undefined, '', `event must be ${EVENT}, got undefined.`],
    ['a string', 'folio/created', '', `event must be ${EVENT}, got "folio/created".`],
    ['an array', [], '', `event must be ${EVENT}, got an array.`],
    [
      'without an account code',
      { kind: 'folio/created' },
      '/accountCode',
      'event.accountCode must be the non-empty code of the account the event belongs to (well-formed Unicode, no NUL character), got undefined.',
    ],
    [
      'a wildcard kind',
      { accountCode: 'A', kind: 'folio/*' },
      '/kind',
      `event.kind must be ${KIND}, got "folio/*".`,
    ],
    [
      'a kind of NaN',
      { accountCode: 'A', kind: Number.NaN },
      '/kind',
      `event.kind must be ${KIND}, got NaN.`,
    ],
    [
      'an empty property id',
      { accountCode: 'A', kind: 'folio/x', propertyId: '' },
      '/propertyId',
      'event.propertyId must be a non-empty string (well-formed Unicode, no NUL character), or left out for an account-level event, got "".',
    ],
  ])(
    'refuses an event %s as input: InvalidRequestError invalid_event with its pointer',
    (_, event, pointer, message) => {
      const error = thrown(() => createWebhookMessage(event as never));
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({ code: 'invalid_event', pointer, message });
    },
  );

  it("refuses an event whose getter throws as input, the getter's error as the cause", () => {
    const boom = new Error('boom');
    const event = Object.defineProperty({ accountCode: 'A' }, 'kind', {
      enumerable: true,
      get() {
        throw boom;
      },
    });
    const error = thrown(() => createWebhookMessage(event as never));
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({
      code: 'invalid_event',
      pointer: '',
      message: `event must be ${EVENT}, got an object.`,
      cause: boom,
    });
  });

  it.each([
    [
      'a cycle',
      (() => {
        const cyclic: Record<string, unknown> = {};
        cyclic.self = cyclic;
        return cyclic;
      })(),
      'an object',
    ],
    ['a BigInt', 10n, '10n'],
  ])(
    'refuses data with %s as input under the default envelope, pointing at /data',
    (_, data, got) => {
      const error = thrown(() => createWebhookMessage({ accountCode: 'A', kind: 'folio/x', data }));
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({
        code: 'invalid_event',
        pointer: '/data',
        message: `event.data must be a JSON value (no cycle, no BigInt, no getter that throws), or left out, got ${got}.`,
      });
      expect((error as Error).cause).toBeInstanceOf(TypeError);
    },
  );

  it('refuses what an envelope of its own returns that JSON cannot hold, blaming the envelope', () => {
    for (const [result, got] of [
      [undefined, 'undefined'],
      [10n, '10n'],
      [() => 1, 'a function'],
    ] as const) {
      const error = thrown(() =>
        createWebhookMessage({ accountCode: 'A', kind: 'folio/x' }, { envelope: () => result }),
      );
      expect(isConfigurationError(error) && error.code).toBe('invalid_option');
      expect((error as Error).message).toBe(
        `envelope(event, id, at) must be a JSON value (no cycle, no BigInt, no getter that throws), got ${got}.`,
      );
    }
  });

  it('passes on what an envelope of its own throws, as it is', () => {
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
    expect(error).toBe('no tenant for account A');
  });

  it.each([
    [
      'options null',
      null,
      'createWebhookMessage options must be an object such as { clock, generateId, envelope }, or left out, got null.',
    ],
    [
      'options that are an array',
      [],
      'createWebhookMessage options must be an object such as { clock, generateId, envelope }, or left out, got an array.',
    ],
    [
      'a generateId that is no function',
      { generateId: 'msg_1' },
      'generateId must be a function that returns a message id, got "msg_1".',
    ],
    [
      'an envelope that is no function',
      { envelope: {} },
      'envelope must be a function that maps (event, id, at) to a JSON value, got an object.',
    ],
    ['a clock without now()', { clock: {} }, 'clock must be a Clock with now(), got an object.'],
    [
      'a misspelt option',
      { generateID: () => 'm' },
      'createWebhookMessage has no option "generateID"; did you mean "generateId"? Its options are clock, generateId, envelope.',
    ],
  ])('refuses %s with invalid_option', (_, options, message) => {
    const error = thrown(() =>
      createWebhookMessage({ accountCode: 'A', kind: 'folio/created' }, options as never),
    );
    expect(isConfigurationError(error) && error.code).toBe('invalid_option');
    expect((error as Error).message).toBe(message);
  });

  it.each([
    ['a number', () => 5, '5'],
    ['an id with a space', () => 'a b', '"a b"'],
    ['an id with a comma', () => 'a,b', '"a,b"'],
    ['an empty id', () => '', '""'],
    ['an id over 256 characters', () => 'x'.repeat(257), `"${'x'.repeat(64)}…"`],
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
      expect((error as Error).message).toBe(`generateId() must be ${ID_RULE}, got ${got}.`);
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
      expect((error as Error).message).toBe(
        `clock.now() must be a time in ms that a Date can hold (a finite number within ±8.64e15), got ${typeof time === 'string' ? `"${time}"` : time}.`,
      );
      expect((error as Error).message).not.toMatch(/envelope/);
    },
  );
});

// RFC 9562, section 5.7: a version 7 UUID is 48 bits of Unix time in ms (big-endian), the version
// 0b0111, 12 bits rand_a, the variant 0b10 and 62 bits rand_b, written as 8-4-4-4-12 hex digits.
describe('the default message id: msg_ and a version 7 UUID of the clock time', () => {
  const V7 = /^msg_([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const idAt = (now: number): string =>
    createWebhookMessage(
      { accountCode: 'ACME', kind: 'folio/created' },
      { clock: { now: () => now } },
    ).id;
  // The 48-bit time field as the RFC lays it out: the first 12 hex digits, dash removed.
  const timeOf = (id: string): number => {
    const [, high, low] = V7.exec(id) ?? [];
    expect(high, `${id} is no version 7 UUID`).toBeDefined();
    return Number.parseInt(`${high}${low}`, 16);
  };

  it('holds the clock time in ms in its first 48 bits, whole ms rounded down, in the id the body names', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 1 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (ms, part) => {
          // The clock's reading as a double: a part of a ms may round up to the next one.
          const now = Math.min(ms + part, 2 ** 48 - 1);
          const message = createWebhookMessage(
            { accountCode: 'ACME', kind: 'folio/created' },
            { clock: { now: () => now } },
          );
          expect(timeOf(message.id)).toBe(Math.floor(now));
          expect(JSON.parse(message.body).id).toBe(message.id);
        },
      ),
    );
  });

  it('clamps a time the 48 bits cannot hold: before 1970 to 0, after the year 10889 to the last ms', () => {
    expect(timeOf(idAt(-1))).toBe(0);
    expect(timeOf(idAt(-8.64e15))).toBe(0);
    expect(timeOf(idAt(2 ** 48))).toBe(2 ** 48 - 1);
    expect(timeOf(idAt(8.64e15))).toBe(2 ** 48 - 1);
  });

  it('sorts ids of different milliseconds by time, byte by byte', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 2 }),
        fc.integer({ min: 1, max: 2 ** 48 - 1 }),
        (a, gap) => {
          const b = Math.min(a + gap, 2 ** 48 - 1);
          const [first, second] = [idAt(a), idAt(b)];
          expect(first < second).toBe(true);
          expect(Buffer.compare(Buffer.from(first), Buffer.from(second))).toBe(-1);
        },
      ),
    );
  });

  it('gives ids made in the same millisecond apart by their random bits, each one signWebhook accepts', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5);
    const ids = Array.from({ length: 10_000 }, () => idAt(at));
    expect(new Set(ids).size).toBe(ids.length);
    const secret = generateWebhookSecret();
    for (const id of ids.slice(0, 100)) {
      expect(timeOf(id)).toBe(at);
      expect(signWebhook({ id, timestamp: 1, body: '{}' }, secret)['webhook-id']).toBe(id);
    }
  });
});
