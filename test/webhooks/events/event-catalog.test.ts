// The event catalog: known patterns, refusals with suggestions, bad definitions.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventPattern } from '../../../src/index.js';
import {
  defineEventCatalog,
  exampleEventCatalog,
  isConfigurationError,
  parseEventPattern,
} from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

const pattern = (text: string): EventPattern => {
  const parsed = parseEventPattern(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value;
};

describe('event catalog', () => {
  const catalog = defineEventCatalog({
    reservation: ['created', 'canceled', 'amended'],
    folio: ['created', 'charges-changed', 'closed'],
    unit: '*',
  });

  it.each([
    'reservation/*',
    'reservation/created',
    'folio/charges-changed',
    'unit/*',
    'unit/anything',
  ])('knows %s', (text) => {
    expect(catalog.check(pattern(text))).toBeUndefined();
  });

  it.each([
    ['folio/craeted', 'unknown_event', 'folio/created'],
    ['folio/charge-changed', 'unknown_event', 'folio/charges-changed'],
    ['reservation/cancelled', 'unknown_event', 'reservation/canceled'],
    ['reservations/created', 'unknown_topic', 'reservation/created'],
    ['fiolo/*', 'unknown_topic', 'folio/*'],
    ['units/x', 'unknown_topic', 'unit/*'],
  ])('refuses %s with %s and suggests %s', (text, code, suggestion) => {
    const error = catalog.check(pattern(text));
    expect(error?.code).toBe(code);
    expect(error?.suggestion).toBe(suggestion);
    expect(error?.message).toContain(`did you mean "${suggestion}"`);
  });

  it('lists its topics and their events', () => {
    expect(catalog.topics).toEqual(['reservation', 'folio', 'unit']);
    expect(catalog.eventsOf('folio')).toEqual(['created', 'charges-changed', 'closed']);
    expect(catalog.eventsOf('unit')).toBe('*');
    expect(catalog.eventsOf('nope')).toBeUndefined();
  });

  it('the example catalog holds what the specification names', () => {
    expect(exampleEventCatalog.topics).toEqual(['reservation', 'folio']);
    expect(exampleEventCatalog.eventsOf('folio')).toEqual(['created', 'charges-changed']);
    for (const text of ['reservation/*', 'folio/*', 'folio/created', 'folio/charges-changed']) {
      expect(exampleEventCatalog.check(pattern(text))).toBeUndefined();
    }
    expect(exampleEventCatalog.check(pattern('folio/closed'))?.code).toBe('unknown_event');
  });

  const DEFINITION =
    "defineEventCatalog definition must be an object mapping at least one topic to its events, such as { folio: ['created'], reservation: '*' } (leave the catalog out to accept any well-formed kind)";
  const TOPIC =
    'definition topic must be a topic name of 1 to 64 lower-case letters, digits and inner hyphens, such as folio';
  const LIST =
    "must be a non-empty array of event names such as ['created'], or '*' for any event of the topic";
  const EVENT =
    "must be an event name of 1 to 64 lower-case letters, digits and inner hyphens, such as created (write '*' in place of the list for any event)";
  it.each([
    [{}, `${DEFINITION}, got an object.`],
    [{ Folio: ['created'] }, `${TOPIC}, got "Folio".`],
    [{ '*': ['created'] }, `${TOPIC}, got "*".`],
    [{ 'a/b': '*' }, `${TOPIC}, got "a/b".`],
    [{ folio: ['Created'] }, `definition.folio[0] ${EVENT}, got "Created".`],
    [{ folio: [] }, `definition.folio ${LIST}, got an array.`],
    [{ folio: 'created' }, `definition.folio ${LIST}, got "created".`],
    [{ folio: null }, `definition.folio ${LIST}, got null.`],
    [
      { folio: ['created', 'created'] },
      'definition.folio[1] must be an event not listed before it, got "created".',
    ],
    [{ folio: ['*'] }, `definition.folio[0] ${EVENT}, got "*".`],
    [{ folio: ['a/b'] }, `definition.folio[0] ${EVENT}, got "a/b".`],
    [null, `${DEFINITION}, got null.`],
    [undefined, `${DEFINITION}, got undefined.`],
    [['folio/created'], `${DEFINITION}, got an array.`],
    ['folio', `${DEFINITION}, got "folio".`],
    [{ folio: [5, 'created'] }, `definition.folio[0] ${EVENT}, got 5.`],
    [{ folio: [Number.NaN] }, `definition.folio[0] ${EVENT}, got NaN.`],
    [{ folio: ['created', null] }, `definition.folio[1] ${EVENT}, got null.`],
    [{ folio: ['created', { name: 'closed' }] }, `definition.folio[1] ${EVENT}, got an object.`],
  ])('refuses the definition %j with a ConfigurationError', (definition, message) => {
    const caught = thrown(() => defineEventCatalog(definition as never));
    expect(isConfigurationError(caught)).toBe(true);
    expect((caught as { code: string }).code).toBe('invalid_event_catalog');
    expect((caught as Error).message).toBe(message);
  });

  it("refuses a definition whose getter throws as no plain data, the getter's error as the cause", () => {
    const boom = new Error('boom');
    const definition = Object.defineProperty({}, 'folio', {
      enumerable: true,
      get() {
        throw boom;
      },
    });
    const caught = thrown(() => defineEventCatalog(definition as never));
    expect(isConfigurationError(caught) && caught.code).toBe('invalid_event_catalog');
    expect((caught as Error).message).toBe(
      "defineEventCatalog definition must be an object mapping at least one topic to its events, such as { folio: ['created'], reservation: '*' } (leave the catalog out to accept any well-formed kind), got an object that threw when read.",
    );
    expect((caught as Error).cause).toBe(boom);
  });

  it('accepts only string event names, so that every kind it lists can be subscribed to', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom('created', 'closed', '5'), fc.anything()), {
          minLength: 1,
          maxLength: 4,
        }),
        (list) => {
          // Act
          let defined: ReturnType<typeof defineEventCatalog> | undefined;
          const caught = thrown(() => {
            defined = defineEventCatalog({ folio: list as string[] });
          });
          // Assert
          if (caught !== undefined) {
            expect(isConfigurationError(caught) && caught.code).toBe('invalid_event_catalog');
            return;
          }
          const events = defined!.eventsOf('folio');
          expect(Array.isArray(events)).toBe(true);
          for (const event of events as readonly string[]) {
            expect(typeof event).toBe('string');
            expect(defined!.check(pattern(`folio/${event}`))).toBeUndefined();
          }
        },
      ),
    );
  });
});
