// The event-kind grammar, against a reference regular expression.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  eventPatternErrorCodes,
  MAX_EVENT_PART_LENGTH,
  parseEventKind,
  parseEventPattern,
  patternSelects,
} from '../../../src/index.js';

// The grammar, written independently of the parser: a part is lower-case letters and digits with
// single inner hyphens, at most MAX_EVENT_PART_LENGTH long; a pattern's event may be "*".
const PART = '[a-z0-9]+(?:-[a-z0-9]+)*';
const REFERENCE_PATTERN = new RegExp(`^(${PART})/(${PART}|\\*)$`);
const withinLength = (s: string) =>
  s.split('/').every((part) => part.length <= MAX_EVENT_PART_LENGTH);
const isPattern = (s: string) => REFERENCE_PATTERN.test(s) && withinLength(s);
const isKind = (s: string) => isPattern(s) && !s.endsWith('/*');

// Strings over the characters that matter, including long runs to cross the length bound.
const candidateArb = fc.oneof(
  fc.string({
    unit: fc.constantFrom('a', 'z', '0', '9', '-', '/', '*', 'A', ' ', '_', '.', 'é'),
    maxLength: 12,
  }),
  fc
    .tuple(
      fc.integer({ min: 1, max: MAX_EVENT_PART_LENGTH + 2 }),
      fc.constantFrom('/', '/*', '/x', ''),
      fc.integer({ min: 0, max: MAX_EVENT_PART_LENGTH + 2 }),
    )
    .map(([a, middle, b]) => `${'t'.repeat(a)}${middle}${'e'.repeat(b)}`),
);

describe('event-kind grammar', () => {
  it('the pattern parser accepts exactly the strings of the reference grammar', () => {
    fc.assert(
      fc.property(candidateArb, (candidate) => {
        const parsed = parseEventPattern(candidate);
        expect(parsed.ok).toBe(isPattern(candidate));
        if (parsed.ok) {
          expect(parsed.value.text).toBe(candidate);
          expect(
            `${parsed.value.topic}/${parsed.value.type === 'kind' ? parsed.value.event : '*'}`,
          ).toBe(candidate);
        } else {
          expect(eventPatternErrorCodes).toContain(parsed.error.code);
          expect(parsed.error.message.length).toBeGreaterThan(10);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('the kind parser accepts exactly the patterns that are not wildcards', () => {
    fc.assert(
      fc.property(candidateArb, (candidate) => {
        expect(parseEventKind(candidate).ok).toBe(isKind(candidate));
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws, whatever it is given', () => {
    fc.assert(
      fc.property(fc.anything(), (input) => {
        expect(parseEventPattern(input).ok).toBe(typeof input === 'string' && isPattern(input));
      }),
    );
  });

  it.each([
    ['reservation/*', 'topic'],
    ['folio/created', 'kind'],
    ['folio/charges-changed', 'kind'],
    ['v2/x1', 'kind'],
  ])('accepts %s as a %s pattern', (text, type) => {
    const parsed = parseEventPattern(text);
    expect(parsed.ok && parsed.value.type).toBe(type);
  });

  it.each([
    [42, 'pattern_not_string'],
    ['', 'pattern_empty'],
    ['*', 'pattern_wildcard_topic'],
    ['*/created', 'pattern_wildcard_topic'],
    ['*/*', 'pattern_wildcard_topic'],
    ['reservation', 'pattern_missing_slash'],
    ['a/b/c', 'pattern_too_many_segments'],
    ['/created', 'pattern_empty_topic'],
    ['folio/', 'pattern_empty_event'],
    ['Folio/created', 'pattern_invalid_topic'],
    ['fo lio/created', 'pattern_invalid_topic'],
    ['-folio/created', 'pattern_invalid_topic'],
    ['folio/created-', 'pattern_invalid_event'],
    ['folio/charges--changed', 'pattern_invalid_event'],
    ['folio/creat*', 'pattern_invalid_event'],
    ['folio/charges_changed', 'pattern_invalid_event'],
    [`${'t'.repeat(65)}/x`, 'pattern_invalid_topic'],
    [`${'t'.repeat(64)}/${'e'.repeat(65)}`, 'pattern_too_long'],
  ])('refuses %j with %s', (input, code) => {
    const parsed = parseEventPattern(input);
    expect(parsed.ok ? undefined : parsed.error.code).toBe(code);
  });

  it('messages say what to change', () => {
    const upper = parseEventPattern('Folio/created');
    expect(upper.ok ? '' : upper.error.message).toMatch(/"F" at position 0 \(use lower case\)/);
    const wildcard = parseEventKind('folio/*');
    expect(wildcard.ok ? '' : wildcard.error.code).toBe('pattern_wildcard_kind');
  });

  it('a topic wildcard selects every kind of its topic and only those; a kind selects itself', () => {
    const kinds = ['reservation/created', 'reservation/canceled', 'folio/created'].map((k) => {
      const parsed = parseEventKind(k);
      if (!parsed.ok) throw new Error(k);
      return parsed.value;
    });
    const pattern = (text: string) => {
      const parsed = parseEventPattern(text);
      if (!parsed.ok) throw new Error(text);
      return parsed.value;
    };
    expect(kinds.map((k) => patternSelects(pattern('reservation/*'), k))).toEqual([
      true,
      true,
      false,
    ]);
    expect(kinds.map((k) => patternSelects(pattern('folio/created'), k))).toEqual([
      false,
      false,
      true,
    ]);
  });
});
