/** Tracking ids: what is accepted from a request, and what is generated. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isConfigurationError,
  isWellFormedTrackingId,
  randomTrackingId,
  resolveTrackingId,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

const SAFE = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._:-'.split('');

describe('tracking id', () => {
  it('accepts exactly 1 to 128 letters, digits and ._:- (nothing that could break a header or a line)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 140, unit: 'binary' }), (value) => {
        const expected =
          value.length >= 1 && value.length <= 128 && [...value].every((c) => SAFE.includes(c));
        expect(isWellFormedTrackingId(value)).toBe(expected);
      }),
    );
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...SAFE), { minLength: 1, maxLength: 128 }), (chars) => {
        expect(isWellFormedTrackingId(chars.join(''))).toBe(true);
      }),
    );
    expect(isWellFormedTrackingId(undefined)).toBe(false);
    expect(isWellFormedTrackingId('a\r\nSet-Cookie: x')).toBe(false);
  });

  it('keeps a well-formed incoming id and otherwise asks the source', () => {
    expect(resolveTrackingId('abc-1', () => 'new')).toBe('abc-1');
    expect(resolveTrackingId('a b', () => 'new')).toBe('new');
    expect(resolveTrackingId(null, () => 'new')).toBe('new');
    expect(randomTrackingId()).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(resolveTrackingId(undefined)).not.toBe(resolveTrackingId(undefined));
    const error = thrown(() => resolveTrackingId(undefined, () => ''));
    expect(isConfigurationError(error) && error.code).toBe('invalid_tracking_id');
    expect((error as Error).message).toBe(
      `the tracking id source() must be a tracking id of 1 to 128 letters, digits, '.', '_', ':' or '-', got "".`,
    );
  });
});
