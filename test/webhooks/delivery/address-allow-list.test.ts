// The address allow-list: what its entries must be, and that allows() never throws.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addressAllowList, isConfigurationError, ssrfGuard } from '../../../src/index.js';
import { thrown } from '../../support/thrown.js';

describe('addressAllowList', () => {
  it.each([
    ['a string', '10.0.0.0/8', /got "10\.0\.0\.0\/8"/],
    ['null', null, /got null/],
    ['an object', { 0: '10.0.0.0/8' }, /got an object/],
    ['a number', 10, /got 10\./],
  ])(
    'refuses entries that are %s, not an array, with invalid_address_allow_list',
    (_, entries, got) => {
      for (const make of [
        () => addressAllowList(entries as never),
        () => ssrfGuard({ allow: entries as never }),
      ]) {
        const error = thrown(make);
        expect(isConfigurationError(error) && error.code).toBe('invalid_address_allow_list');
        expect((error as Error).message).toMatch(/must be an array of addresses and CIDR ranges/);
        expect((error as Error).message).toMatch(got);
      }
    },
  );

  it('never throws from allows(), and allows nothing that is not an address', () => {
    const list = addressAllowList(['10.0.0.0/8', '::1']);
    fc.assert(
      fc.property(fc.anything(), (address) => {
        if (typeof address === 'string') return;
        expect(list.allows(address as never)).toBe(false);
      }),
    );
    expect(list.allows('10.1.2.3')).toBe(true);
  });
});
