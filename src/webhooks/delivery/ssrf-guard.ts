/** The SSRF guard, applied at connection time so that DNS rebinding cannot slip through. @module */
import type { LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { ForbiddenAddressError } from '../../errors/forbidden-address-error.js';
import { requireNodeBuiltin } from '../../internal/node-builtin.js';
import { aFunction, readOptions } from '../../internal/options.js';
import { ALLOW_OPTION, addressAllowList } from './address-allow-list.js';
import { forbiddenAddressRange } from './forbidden-address.js';

/** A DNS lookup as `node:dns` `lookup` with `{ all: true }` calls it. */
export type DnsLookup = (
  hostname: string,
  options: { all: true; family?: number },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** The lookup a socket calls (the `lookup` option of `http.request` and `net.connect`). */
export type ConnectLookup = (
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: (
    error: NodeJS.ErrnoException | null,
    address: string | LookupAddress[],
    family?: number,
  ) => void,
) => void;

/** Where the guard draws the line. */
export interface SsrfGuardOptions {
  /** Non-public addresses and CIDR ranges deliveries may reach (tests, private deployments). */
  allow?: readonly string[];
  /** The resolver. @defaultValue `dns.lookup` */
  lookup?: DnsLookup;
}

/** The guard: a check for address literals and a lookup for host names. */
export interface SsrfGuard {
  /** The range (`loopback`, `private`, ...) that forbids this IP address, or undefined. */
  refusal(address: string): string | undefined;
  /** A lookup that resolves, refuses forbidden addresses, and hands over only checked ones. */
  readonly lookup: ConnectLookup;
}

/** The rules of {@link SsrfGuardOptions}. @internal */
export const SSRF_GUARD_RULES = {
  allow: ALLOW_OPTION,
  lookup: aFunction<DnsLookup>('resolves as dns.lookup does with { all: true }'),
};

/**
 * Make the guard.
 * @throws ConfigurationError `invalid_address_allow_list` for an entry that is no address or range,
 * `invalid_option` for options that are no object, a misspelt one or a lookup that is no function
 * @example
 * ```ts
 * const guard = ssrfGuard({ allow: ['127.0.0.1'] });
 * http.request(url, { lookup: guard.lookup });
 * ```
 */
export function ssrfGuard(options: SsrfGuardOptions = {}): SsrfGuard {
  const read = readOptions(options, 'ssrfGuard', SSRF_GUARD_RULES, {
    defaults: { allow: [] },
    example: "{ allow: ['127.0.0.1'] }",
  });
  const allowed = addressAllowList(read.allow);
  const resolve: DnsLookup =
    read.lookup ??
    (requireNodeBuiltin('node:dns', 'ssrfGuard', 'give it a lookup').lookup as DnsLookup);
  const refusal = (address: string): string | undefined =>
    allowed.allows(address) ? undefined : forbiddenAddressRange(address);
  const lookup: ConnectLookup = (hostname, lookupOptions, callback) => {
    const family =
      lookupOptions.family === 4 || lookupOptions.family === 'IPv4'
        ? 4
        : lookupOptions.family === 6 || lookupOptions.family === 'IPv6'
          ? 6
          : undefined;
    resolve(
      hostname,
      family === undefined ? { all: true } : { all: true, family },
      (error, found) => {
        if (error !== null) {
          callback(error, []);
          return;
        }
        const addresses = Array.isArray(found) ? found : [];
        if (addresses.length === 0) {
          callback(
            Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }),
            [],
          );
          return;
        }
        // Refuse when any address is forbidden: the socket may try them all in turn.
        for (const { address } of addresses) {
          const range = refusal(address);
          if (range !== undefined) {
            callback(new ForbiddenAddressError(hostname, address, range), []);
            return;
          }
        }
        if (lookupOptions.all === true) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
    );
  };
  return { refusal, lookup };
}

/**
 * The refusal of a URL host that is an address literal (sockets do not resolve those, so the
 * lookup never sees them), or undefined when the host is a name or a permitted address.
 * @param hostname - `URL.hostname` (IPv6 in brackets)
 */
export function literalHostRefusal(
  guard: Pick<SsrfGuard, 'refusal'>,
  hostname: string,
): ForbiddenAddressError | undefined {
  const literal =
    hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (!ipaddr.isValid(literal)) return undefined;
  const range = guard.refusal(literal);
  return range === undefined ? undefined : new ForbiddenAddressError(literal, literal, range);
}
