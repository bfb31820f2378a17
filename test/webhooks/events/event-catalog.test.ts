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

  it.each([
    [{}, /at least one topic/],
    [{ Folio: ['created'] }, /not well formed/],
    [{ folio: ['Created'] }, /not well formed/],
    [{ folio: [] }, /non-empty list/],
    [{ folio: ['created', 'created'] }, /twice/],
    [{ folio: ['*'] }, /must name an event/],
    [{ folio: ['a/b'] }, /not well formed/],
    [null, /an object mapping each topic to its events.*got null/],
    [undefined, /an object mapping each topic to its events.*got undefined/],
    [['folio/created'], /an object mapping each topic to its events.*got an array/],
    ['folio', /an object mapping each topic to its events.*got a string/],
    [{ folio: [5, 'created'] }, /Topic "folio" lists a number at position 0; .* such as '5'/],
    [{ folio: ['created', null] }, /Topic "folio" lists null at position 1/],
    [{ folio: ['created', { name: 'closed' }] }, /lists an object at position 1/],
  ])('refuses the definition %j with a ConfigurationError', (definition, message) => {
    const caught = thrown(() => defineEventCatalog(definition as never));
    expect(isConfigurationError(caught)).toBe(true);
    expect((caught as { code: string }).code).toBe('invalid_event_catalog');
    expect((caught as Error).message).toMatch(message);
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
