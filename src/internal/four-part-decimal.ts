/** The IPv4 address a URL parser or a socket writes: four decimal parts. @module */
import ipaddr from 'ipaddr.js';

/** Four decimal parts, as the WHATWG parser writes an IPv4 address (no leading zeros). */
const FOUR_PART_DECIMAL = /^(0|[1-9]\d*)(\.(0|[1-9]\d*)){3}$/;

/**
 * `ipaddr.IPv4.isValidFourPartDecimal`, the form looked at first: that function tries to parse
 * first and throws inside for every name (`hooks.example.com`) and IPv6 address, which cost
 * several percent of a create's time; a text that is not four decimal parts is no IPv4 address
 * either way.
 * @internal
 */
export function isFourPartDecimal(text: string): boolean {
  return FOUR_PART_DECIMAL.test(text) && ipaddr.IPv4.isValidFourPartDecimal(text);
}
