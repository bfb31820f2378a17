/** Tests of path canonicalisation against a reference canonicaliser and the documented rules. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalPath,
  compileRoutes,
  DEFAULT_MAX_PATH_LENGTH,
  isConfigurationError,
  RAW_PER_CANONICAL,
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
    expect(canonicalPath('//booking/V1//bookings/%41bc/?x=1#f')).toBe('/booking/V1/bookings/Abc');
    expect(canonicalPath('/a/%2f%5c/b')).toBe('/a/%2F%5C/b');
    expect(canonicalPath('/é')).toBe('/%C3%A9');
    expect(canonicalPath('/a:b@c')).toBe('/a%3Ab%40c');
  });

  it('keeps backslashes and dot segments, as Express, Koa and Fastify route them, and reads absolute-form targets', () => {
    // Express 5 and Fastify 5 route `reservations/x\..\..\offers` to `reservations/:id`.
    expect(canonicalPath('/booking/v1/reservations/x\\..\\..\\offers')).toBe(
      '/booking/v1/reservations/x%5C..%5C..%5Coffers',
    );
    expect(canonicalPath('/a\\b')).toBe('/a%5Cb');
    expect(canonicalPath('/a/./b/../c/%2e%2E')).toBe('/a/./b/../c/..');
    // The Kelvin sign keeps its spelling here: only literal matching folds it.
    expect(canonicalPath('/boo\u212Aings')).toBe('/boo%E2%84%AAings');
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

  it('counts the maximum length on the canonical path: padding with // or escapes cannot push a path past it', () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[A-Za-z0-9_~-]{1,8}$/), { minLength: 1, maxLength: 6 }),
        fc.oneof(fc.tuple(fc.constantFrom('/', '//'), fc.integer({ min: 1, max: 2000 }))),
        (segments, [pad, times]) => {
          const path = `/${segments.join('/')}`;
          const padded = `${pad.repeat(times)}/${segments.join(`${pad.repeat(times)}/`)}`;
          // What the contract says for a given maximum: the canonical path when it fits, whatever
          // the padding, unless the raw path is past RAW_PER_CANONICAL times the maximum.
          const expected = (max: number) =>
            padded.length > max * RAW_PER_CANONICAL || path.length > max ? undefined : path;
          for (const max of [DEFAULT_MAX_PATH_LENGTH, path.length, path.length - 1 || 1]) {
            expect(canonicalPath(padded, { maxPathLength: max })).toBe(expected(max));
          }
        },
      ),
      { numRuns: 200 },
    );
    // One segment built from escapes of unreserved characters is its decoded length.
    expect(canonicalPath(`/${'%41'.repeat(DEFAULT_MAX_PATH_LENGTH - 1)}`)).toBe(
      `/${'A'.repeat(DEFAULT_MAX_PATH_LENGTH - 1)}`,
    );
  });

  it('takes a raw path of up to RAW_PER_CANONICAL times the maximum, and no longer: the work of a scan is bounded', () => {
    const max = 64;
    const raw = max * RAW_PER_CANONICAL;
    // `/a` and slashes up to exactly the raw limit; one more character is too long.
    const atLimit = `/a${'/'.repeat(raw - 2)}`;
    expect(canonicalPath(atLimit, { maxPathLength: max })).toBe('/a');
    expect(canonicalPath(`${atLimit}/`, { maxPathLength: max })).toBeUndefined();
    expect(canonicalPath(`${atLimit}?q=${'x'.repeat(raw)}`, { maxPathLength: max })).toBe('/a');
    // At the default: 32 KiB of raw path, more segments than a canonical path of the maximum
    // length holds (the room for them grows), and too long once canonical: dot segments stay.
    const climb = `${'/s'.repeat(6_000)}${'/..'.repeat(6_000)}/b`;
    expect(climb.length).toBeLessThanOrEqual(DEFAULT_MAX_PATH_LENGTH * RAW_PER_CANONICAL);
    expect(canonicalPath(climb)).toBeUndefined();
    expect(compileRoutes([{ route: 'GET /b' }]).match('GET', climb)).toEqual([]);
    // An absolute-form target with a backslash is read both ways, as Fastify and Express do.
    const both = compileRoutes([{ route: 'GET /b' }, { route: 'GET /{id}' }]).match(
      'GET',
      'http://h/a\\..\\b',
    );
    expect(both.map((m) => [m.key, m.plain])).toEqual([['GET /{id} id=a%5C..%5Cb', false]]);
    expect(
      canonicalPath(`${'/'.repeat(DEFAULT_MAX_PATH_LENGTH * RAW_PER_CANONICAL)}b`),
    ).toBeUndefined();
  });

  it('rejects a bad maxPathLength option with invalid_option', () => {
    for (const maxPathLength of [0, -1, 1.5, Number.NaN, 2 ** 21, Object.create(null), '8']) {
      const caught = thrown(() => canonicalPath('/', { maxPathLength }));
      expect(isConfigurationError(caught) && caught.code === 'invalid_option').toBe(true);
    }
  });

  it('rejects options it cannot read with invalid_option, not what the read threw', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const throwing = {
      get maxPathLength(): number {
        throw new Error('boom');
      },
    };
    for (const options of [proxy, throwing, { maxPathLength: proxy }, null]) {
      const caught = thrown(() => canonicalPath('/', options as never));
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
