/** Which IP addresses a webhook may never be sent to. @module */
import ipaddr from 'ipaddr.js';

// Cloud instance metadata services (AWS, GCP, Azure, OpenStack on IPv4; AWS on IPv6): named
// separately because they are the usual target of server-side request forgery.
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254']);

/**
 * The name of the non-public range an IP address belongs to, or undefined for a public unicast
 * address. Use it at delivery time too, on each address DNS resolves the endpoint's host to.
 * IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
 * @returns `'metadata'`, an ipaddr.js range name such as `'loopback'`, `'private'`,
 * `'linkLocal'`, `'uniqueLocal'`, `'unspecified'` or `'ipv4Compatible'`, `'notAnAddress'` when the
 * string is no IP address, or undefined when the address is public
 * @example
 * ```ts
 * forbiddenAddressRange('::ffff:127.0.0.1'); // 'loopback'
 * forbiddenAddressRange('8.8.8.8');          // undefined
 * ```
 */
export function forbiddenAddressRange(address: string): string | undefined {
  const literal = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(literal)) return 'notAnAddress';
  const parsed = ipaddr.process(literal);
  if (METADATA_ADDRESSES.has(parsed.toString())) {
    return 'metadata';
  }
  const range = parsed.range();
  if (range !== 'unicast') return range;
  // ::a.b.c.d (RFC 4291, deprecated) embeds an IPv4 address that ipaddr.js calls unicast.
  if (parsed instanceof ipaddr.IPv6 && parsed.parts.slice(0, 6).every((part) => part === 0)) {
    return 'ipv4Compatible';
  }
  return undefined;
}
