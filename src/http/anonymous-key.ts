/**
 * The key anonymous requests are counted by: the client's network, so that the many addresses
 * one client holds (an IPv6 prefix, the spellings of one IPv4 address) share one counter.
 * @module
 */
import ipaddr from 'ipaddr.js';
import { isFourPartDecimal } from '../internal/four-part-decimal.js';
import { readOptions, wholeNumber } from '../internal/options.js';

/** The IPv6 prefix length anonymous requests are keyed by unless told: a site's delegation. */
export const DEFAULT_IPV6_SUBNET = 56;

/** The key of an address that cannot be read: every such request shares it. */
export const UNKNOWN_ADDRESS_KEY = 'unknown';

/** Options of {@link anonymousNetworkKey}. */
export interface AnonymousNetworkKeyOptions {
  /**
   * The IPv6 prefix length, from 1 to 128, that one client is taken to hold: every address in
   * one such network shares a key (128: each address its own).
   * @defaultValue 56
   */
  ipv6Subnet?: number | undefined;
}

/** The rule of `ipv6Subnet`, wherever it is given. @internal */
export const IPV6_SUBNET_RULE = wholeNumber(1, 128);

// Longer than any address with a zone a proxy or a socket writes: not read as one.
const MAX_ADDRESS_LENGTH = 100;

/**
 * The key of a client's network, for counting anonymous requests: an IPv4 address as itself
 * (`203.0.113.9`); an IPv4-mapped IPv6 address, in either spelling (`::ffff:203.0.113.9`,
 * `::ffff:cb00:7109`), as its IPv4 address; any other IPv6 address as its network of
 * `ipv6Subnet` bits (`2001:db8:0:100::/56`), whatever its spelling or zone. Anything else (no
 * address, an empty string, a host name, an address with a port, an IPv4 address spelled other
 * than as four decimal numbers, alone or as an IPv6 address's tail) never throws: it is the key
 * `unknown`, which all such requests share. Pure and cheap: call it from your own
 * `anonymous.key` to count by network too.
 * @param address - the address as the framework reports it (`req.ip`, `socket.remoteAddress`)
 * @param options - `ipv6Subnet`
 * @returns the key, at most 43 characters
 * @throws ConfigurationError `invalid_option` for options that are not an object or have an
 *   unknown key, or an `ipv6Subnet` that is not a whole number from 1 to 128
 * @example
 * ```ts
 * anonymousNetworkKey('2001:db8:1:2::7'); // '2001:db8:1::/56'
 * anonymousNetworkKey('::ffff:203.0.113.9'); // '203.0.113.9'
 * anonymousNetworkKey('2001:db8::1', { ipv6Subnet: 64 }); // '2001:db8::/64'
 * ```
 */
export function anonymousNetworkKey(
  address: unknown,
  options?: AnonymousNetworkKeyOptions,
): string {
  if (options === undefined) return networkKey(address, DEFAULT_IPV6_SUBNET);
  const { ipv6Subnet } = readOptions(options, 'anonymousNetworkKey', KEY_RULES, {
    defaults: { ipv6Subnet: DEFAULT_IPV6_SUBNET },
    example: '{ ipv6Subnet: 64 }',
  });
  return networkKey(address, ipv6Subnet);
}

const KEY_RULES = { ipv6Subnet: IPV6_SUBNET_RULE };

/**
 * {@link anonymousNetworkKey} with a prefix length already checked. @internal
 * @param subnet - a whole number from 1 to 128
 */
export function networkKey(address: unknown, subnet: number): string {
  if (typeof address !== 'string' || address === '' || address.length > MAX_ADDRESS_LENGTH) {
    return UNKNOWN_ADDRESS_KEY;
  }
  if (isFourPartDecimal(address)) return address;
  // ipaddr.js reads the loose IPv4 forms (`0xcb.0.113.9`, `3405803785`, `203.0.113.011` as octal)
  // too, alone or as an IPv6 address's tail: each address has one spelling of its IPv4 part here.
  if (!ipaddr.IPv6.isValid(address) || !decimalTail(address)) return UNKNOWN_ADDRESS_KEY;
  let parsed: ipaddr.IPv6;
  try {
    parsed = ipaddr.IPv6.parse(address);
  } catch {
    return UNKNOWN_ADDRESS_KEY;
  }
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  return `${maskedTo(parsed.parts, subnet).toString()}/${subnet}`;
}

/** An IPv6 address's IPv4 tail, if it has one, as four decimal numbers. */
function decimalTail(address: string): boolean {
  const zone = address.indexOf('%');
  const bare = zone === -1 ? address : address.slice(0, zone);
  if (!bare.includes('.')) return true;
  return isFourPartDecimal(bare.slice(bare.lastIndexOf(':') + 1));
}

/** The network of `bits` bits of an address's 16-bit parts, without its zone. */
function maskedTo(parts: readonly number[], bits: number): ipaddr.IPv6 {
  const masked = new Array<number>(8);
  for (let i = 0; i < 8; i++) {
    const kept = Math.min(16, Math.max(0, bits - i * 16));
    masked[i] = kept === 0 ? 0 : (parts[i] as number) & ((0xffff << (16 - kept)) & 0xffff);
  }
  return new ipaddr.IPv6(masked);
}
