/** Tests of path canonicalisation against a reference canonicaliser and the documented rules. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalPath,
  DEFAULT_MAX_PATH_LENGTH,
  isConfigurationError,
  VERSION_SEGMENT_PATTERN,
} from '../../src/index.js';
import {
  canonicalSegment,
  logicalSegmentArb,
  pathNoiseArb,
  rawPathArb,
  referenceCanonicalPath,
  spellingArb,
  spellSegment,
  withNoise,
} from '../support/routes.js';
import { thrown } from '../support/thrown.js';

describe('canonicalPath', () => {
  it('equals the reference canonicaliser on hostile raw targets', () => {
    fc.assert(
      fc.property(rawPathArb, (raw) => {
        expect(canonicalPath(raw)).toBe(referenceCanonicalPath(raw));
      }),
      { numRuns: 2000 },
    );
  });

  it('equals the reference canonicaliser on arbitrary strings, and never throws', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (tail) => {
        const raw = `/${tail}`;
        expect(canonicalPath(raw)).toBe(referenceCanonicalPath(raw));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives every spelling of a path its canonical form, case kept', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(logicalSegmentArb, spellingArb), { maxLength: 6 }),
        pathNoiseArb,
        (parts, noise) => {
          const raw = withNoise(
            parts.map(([chars, choices]) => spellSegment(chars, choices, false)),
            noise,
          );
          const expected = `/${parts.map(([chars]) => canonicalSegment(chars)).join('/')}`;
          expect(canonicalPath(raw)).toBe(expected);
        },
      ),
    );
  });

  it('is idempotent: a canonical path is its own canonical form', () => {
    fc.assert(
      fc.property(rawPathArb, (raw) => {
        const once = canonicalPath(raw);
        fc.pre(once !== undefined);
        expect(canonicalPath(once)).toBe(once);
      }),
    );
  });

  it('never throws on non-string input and answers undefined', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        fc.pre(typeof value !== 'string');
        expect(canonicalPath(value)).toBeUndefined();
      }),
    );
  });

  it('drops query and fragment, decodes unreserved escapes, upper-cases the others', () => {
    expect(canonicalPath('//booking/V1/./bookings/%41bc/?x=1#f')).toBe('/booking/V1/bookings/Abc');
    expect(canonicalPath('/a/%2f%5c/b')).toBe('/a/%2F%5C/b');
    expect(canonicalPath('/a/b/../../..')).toBe('/');
    expect(canonicalPath('/é')).toBe('/%C3%A9');
    expect(canonicalPath('/a:b@c')).toBe('/a%3Ab%40c');
  });

  it('treats a backslash as a separator and reads absolute-form targets', () => {
    expect(canonicalPath('/a\\b')).toBe('/a/b');
    expect(canonicalPath('https://api.example.com/a/b?q')).toBe('/a/b');
    expect(canonicalPath('http://api.example.com')).toBe('/');
  });

  it('answers undefined for malformed paths', () => {
    for (const raw of [
      '',
      '*',
      'a/b',
      '/%',
      '/%4',
      '/%zz',
      '/a\u0000',
      '/%00',
      '/%7F',
      '/\ud800',
      // A control character in the authority of an absolute-form target.
      'http://api.example\u0000.com/a',
      'http://api.example.com\u007f/a',
    ]) {
      expect(canonicalPath(raw)).toBeUndefined();
    }
  });

  it('refuses a path over the maximum length, counted before the query string', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 3 }), (max, over) => {
        const path = `/${'a'.repeat(max - 1 + over)}`;
        const canonical = canonicalPath(`${path}?${'q'.repeat(100)}`, { maxPathLength: max });
        expect(canonical).toBe(over === 0 ? path : undefined);
      }),
    );
    expect(canonicalPath(`/${'a'.repeat(DEFAULT_MAX_PATH_LENGTH)}`)).toBeUndefined();
  });

  it('rejects a bad maxPathLength option with invalid_option', () => {
    for (const maxPathLength of [0, -1, 1.5, Number.NaN, 2 ** 21]) {
      const caught = thrown(() => canonicalPath('/', { maxPathLength }));
      expect(isConfigurationError(caught) && caught.code === 'invalid_option').toBe(true);
    }
  });

  it('documents the version segment as v, a digit, then digits, letters and hyphens', () => {
    for (const yes of ['v1', 'V2', 'v0-nsfh', 'v1beta', 'v10']) {
      expect(VERSION_SEGMENT_PATTERN.test(yes)).toBe(true);
    }
    for (const no of ['v', 'vouchers', 'values', '1', 'v1.2', 'v-1', 'xv1']) {
      expect(VERSION_SEGMENT_PATTERN.test(no)).toBe(false);
    }
  });
});
