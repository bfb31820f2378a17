/** Non-public addresses and ranges deliveries may reach (tests, private networks). @module */
import ipaddr from 'ipaddr.js';
import { checkValue, INVALID, listOf, type Rule, worded } from '../../internal/options.js';

/** A parsed allow-list. */
export interface AddressAllowList {
  /** True when the address (IPv6 in brackets or not) lies in an allowed range; IPv4-mapped as IPv4. */
  allows(address: string): boolean;
}

/**
 * Parse addresses (`127.0.0.1`, `::1`) and CIDR ranges (`10.0.0.0/8`); none allows nothing.
 * @throws ConfigurationError `invalid_address_allow_list` when `entries` is not an array or cannot
 * be read, or for an entry that is neither an address nor a range (the message names it)
 * @example
 * ```ts
 * addressAllowList(['127.0.0.1', '10.1.0.0/16']).allows('10.1.2.3'); // true
 * ```
 */
export function addressAllowList(entries: readonly string[] = []): AddressAllowList {
  const ranges = checkValue(ALLOW_LIST, entries, 'allow');
  return {
    allows(address) {
      if (ranges.length === 0 || typeof address !== 'string') return false;
      const literal =
        address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
      if (!ipaddr.isValid(literal)) return false;
      const parsed = ipaddr.process(literal);
      return ranges.some(
        ([range, bits]) => range.kind() === parsed.kind() && parsed.match(range as never, bits),
      );
    },
  };
}

type Range = readonly [ipaddr.IPv4 | ipaddr.IPv6, number];

const RANGE: Rule<Range> = {
  expected: 'an IP address or CIDR range such as 127.0.0.1 or 10.0.0.0/8',
  code: 'invalid_address_allow_list',
  read(entry) {
    if (typeof entry !== 'string') return INVALID;
    try {
      const [address, bits] = entry.includes('/')
        ? ipaddr.parseCIDR(entry)
        : ([ipaddr.process(entry), ipaddr.process(entry).kind() === 'ipv4' ? 32 : 128] as const);
      // A range written as IPv4-mapped IPv6 is matched as the IPv4 range it names.
      if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() && bits >= 96) {
        return [address.toIPv4Address(), bits - 96] as const;
      }
      return [address, bits] as const;
    } catch {
      return INVALID;
    }
  },
};

// Each entry read once: one whose read throws is the typed error, never the getter's own.
const ALLOW_LIST = worded(
  listOf(RANGE),
  "an array of addresses and CIDR ranges, such as ['127.0.0.1', '10.0.0.0/8'], even for one entry",
);

/**
 * The rule of an `allow` option (the SSRF guard's, the transport's, the endpoint URL policy's):
 * each entry checked as {@link addressAllowList} checks it, the list kept as written. @internal
 */
export const ALLOW_OPTION: Rule<readonly string[]> = worded(
  listOf<string>({
    ...RANGE,
    read: (entry, name) => (RANGE.read(entry, name) === INVALID ? INVALID : (entry as string)),
  }),
  ALLOW_LIST.expected,
);
