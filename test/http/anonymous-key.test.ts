/**
 * The key of anonymous requests, against the rule itself: two addresses share a key exactly when
 * both are IPv6 (once an IPv4-mapped address is read as its IPv4 address) in the same network of
 * `ipv6Subnet` bits, or both the same IPv4 address; whatever their spelling. Anything that is no
 * address never throws and shares the key `unknown`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anonymousNetworkKey, isConfigurationError } from '../../src/index.js';
import { describe as describeValue } from '../../src/internal/describe.js';
import { thrown } from '../support/thrown.js';

const MAPPED_PREFIX = 0xffffn << 32n; // ::ffff:0:0/96
const ALL_128 = (1n << 128n) - 1n;

/** An address as a number: an IPv4 address (32 bits) or an IPv6 one (128 bits). */
type Address = { readonly v4: number } | { readonly v6: bigint };

/** What the rule counts an address as: an IPv4 address, or an IPv6 network of `bits` bits. */
function counted(address: Address, bits: number): string {
  if ('v4' in address) return `4:${address.v4}`;
  if (address.v6 >> 32n === 0xffffn) return `4:${Number(address.v6 & 0xffffffffn)}`;
  return `6:${address.v6 >> BigInt(128 - bits)}`;
}

// Spellings, written here from RFC 4291 section 2.2 and RFC 5952, not by the code under test.
const dotted = (v4: number): string =>
  [v4 >>> 24, (v4 >>> 16) & 0xff, (v4 >>> 8) & 0xff, v4 & 0xff].join('.');

const groupsOf = (v6: bigint): number[] =>
  Array.from({ length: 8 }, (_, i) => Number((v6 >> BigInt(112 - i * 16)) & 0xffffn));

/** The longest run of two or more zero groups as `::`. */
function compressed(groups: readonly string[], zero: (g: string) => boolean): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < groups.length; ) {
    if (!zero(groups[i] as string)) {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && zero(groups[j] as string)) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLength).join(':')}`;
}

type Spelling = 'plain' | 'full' | 'padded' | 'upper' | 'zone' | 'dottedTail';
const SPELLINGS: readonly Spelling[] = ['plain', 'full', 'padded', 'upper', 'zone', 'dottedTail'];

function spellV6(v6: bigint, spelling: Spelling): string {
  const groups = groupsOf(v6);
  const hex = groups.map((g) => g.toString(16));
  switch (spelling) {
    case 'plain':
      return compressed(hex, (g) => g === '0');
    case 'full':
      return hex.join(':');
    case 'padded':
      return groups.map((g) => g.toString(16).padStart(4, '0')).join(':');
    case 'upper':
      return compressed(hex, (g) => g === '0').toUpperCase();
    case 'zone':
      return `${compressed(hex, (g) => g === '0')}%eth0`;
    case 'dottedTail':
      return `${hex.slice(0, 6).join(':')}:${dotted(Number(v6 & 0xffffffffn))}`;
  }
}

function spell(address: Address, spelling: Spelling): string {
  if ('v4' in address) {
    // An IPv4 address alone, or mapped in any of the IPv6 spellings.
    return spelling === 'plain'
      ? dotted(address.v4)
      : spellV6(MAPPED_PREFIX | BigInt(address.v4), spelling);
  }
  return spellV6(address.v6, spelling);
}

// Addresses close to each other, so that many pairs share a network and many do not.
const BASES_V6 = [
  0x2001_0db8_0000_0000_0000_0000_0000_0000n,
  0x2001_0db8_0001_0100_0000_0000_0000_0001n,
  0xfe80_0000_0000_0000_0000_0000_0000_0001n,
  0n,
  MAPPED_PREFIX | 0xcb00_7109n,
];
const BASES_V4 = [0xcb00_7109, 0x7f00_0001, 0, 0xffff_ffff];

const nearV6: fc.Arbitrary<Address> = fc
  .tuple(fc.constantFrom(...BASES_V6), fc.array(fc.integer({ min: 0, max: 127 }), { maxLength: 3 }))
  .map(([base, flips]) => ({
    v6: flips.reduce((v, bit) => v ^ (1n << BigInt(bit)), base) & ALL_128,
  }));
const nearV4: fc.Arbitrary<Address> = fc
  .tuple(fc.constantFrom(...BASES_V4), fc.array(fc.integer({ min: 0, max: 31 }), { maxLength: 2 }))
  .map(([base, flips]) => ({ v4: flips.reduce((v, bit) => (v ^ (1 << bit)) >>> 0, base) }));
const anyV6: fc.Arbitrary<Address> = fc.bigInt({ min: 0n, max: ALL_128 }).map((v6) => ({ v6 }));
const anyV4: fc.Arbitrary<Address> = fc.integer({ min: 0, max: 0xffff_ffff }).map((v4) => ({ v4 }));
const address = fc.oneof(nearV6, nearV4, anyV6, anyV4);
const spelled = fc.tuple(address, fc.constantFrom(...SPELLINGS));

describe('anonymousNetworkKey', () => {
  it('gives two addresses one key exactly when the rule counts them as one client, whatever the spelling', () => {
    fc.assert(
      fc.property(
        spelled,
        spelled,
        fc.option(fc.integer({ min: 1, max: 128 }), { nil: undefined }),
        ([a, spellA], [b, spellB], ipv6Subnet) => {
          const bits = ipv6Subnet ?? 56;
          const options = ipv6Subnet === undefined ? undefined : { ipv6Subnet };
          const keyA = anonymousNetworkKey(spell(a, spellA), options);
          const keyB = anonymousNetworkKey(spell(b, spellB), options);
          expect(keyA).not.toBe('unknown');
          expect(keyA.length).toBeLessThanOrEqual(43);
          expect(keyA === keyB).toBe(counted(a, bits) === counted(b, bits));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('counts the three spellings of one IPv4 address once, and one /56 once', () => {
    const spellings = ['203.0.113.9', '::ffff:203.0.113.9', '::ffff:cb00:7109', '::FFFF:CB00:7109'];
    expect(new Set(spellings.map((a) => anonymousNetworkKey(a)))).toEqual(new Set(['203.0.113.9']));
    expect(anonymousNetworkKey('2001:db8:1:2ff::7')).toBe(anonymousNetworkKey('2001:db8:1:200::1'));
    expect(anonymousNetworkKey('2001:db8:1:2ff::7')).not.toBe(
      anonymousNetworkKey('2001:db8:1:300::1'),
    );
    expect(anonymousNetworkKey('2001:db8:1:2ff::7', { ipv6Subnet: 64 })).not.toBe(
      anonymousNetworkKey('2001:db8:1:200::1', { ipv6Subnet: 64 }),
    );
    expect(anonymousNetworkKey('2001:db8::1', { ipv6Subnet: 128 })).not.toBe(
      anonymousNetworkKey('2001:db8::2', { ipv6Subnet: 128 }),
    );
  });

  it('never throws on what is no address, and counts all of it under one key', () => {
    const garbage = [
      undefined,
      null,
      '',
      ' ',
      'localhost',
      'unknown',
      '203.0.113',
      '203.0.113.09',
      '0xcb.0.113.9',
      '3405803785',
      '203.0.113.9:443',
      '[2001:db8::1]',
      '[2001:db8::1]:443',
      '::ffff:203.0.113.09',
      '::ffff:0xcb.0.113.9',
      '2001:db8::1::2',
      '1:2:3:4:5:6:7:8:9',
      `2001:db8::1%${'z'.repeat(200)}`,
      '203.0.113.9, 198.51.100.1',
      42,
      {},
    ];
    for (const value of garbage) expect(anonymousNetworkKey(value)).toBe('unknown');
    fc.assert(
      fc.property(fc.string({ maxLength: 60, unit: 'binary' }), (value) => {
        const key = anonymousNetworkKey(value);
        expect(typeof key).toBe('string');
        expect(key.length).toBeLessThanOrEqual(43);
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses an ipv6Subnet outside 1 to 128 with the option named', () => {
    for (const ipv6Subnet of [0, 129, 56.5, Number.NaN, '56' as unknown as number]) {
      const error = thrown(() => anonymousNetworkKey('2001:db8::1', { ipv6Subnet }));
      expect(isConfigurationError(error)).toBe(true);
      expect((error as Error).message).toBe(
        `ipv6Subnet must be a whole number from 1 to 128, got ${describeValue(ipv6Subnet)}.`,
      );
    }
  });

  it('refuses options with a misspelt key, or that are not an object, naming what to give', () => {
    expect(
      thrown(() => anonymousNetworkKey('2001:db8::1', { ipv6subnet: 64 } as never)),
    ).toMatchObject({
      code: 'invalid_option',
      message:
        'anonymousNetworkKey has no option "ipv6subnet"; did you mean "ipv6Subnet"? Its options are ipv6Subnet.',
    });
    expect(thrown(() => anonymousNetworkKey('2001:db8::1', 64 as never))).toMatchObject({
      code: 'invalid_option',
      message:
        'anonymousNetworkKey options must be an object such as { ipv6Subnet: 64 }, or left out, got 64.',
    });
    expect(anonymousNetworkKey('2001:db8::1', {})).toBe(anonymousNetworkKey('2001:db8::1'));
  });
});
