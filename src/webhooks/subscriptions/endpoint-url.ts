/** The endpointUrl policy: https, no userinfo, no non-public address in any spelling. @module */
import { isFourPartDecimal } from '../../internal/four-part-decimal.js';
import {
  aBoolean,
  INVALID,
  optionsOf,
  type Rule,
  readOptions,
  wholeNumber,
  worded,
} from '../../internal/options.js';
import type { AddressAllowList } from '../delivery/address-allow-list.js';
import { ALLOW_OPTION, addressAllowList } from '../delivery/address-allow-list.js';
import { forbiddenAddressRange } from '../delivery/forbidden-address.js';

/** Codes of the errors {@link checkEndpointUrl} returns. */
export const endpointUrlErrorCodes = [
  'url_too_long',
  'url_invalid',
  'url_scheme_not_allowed',
  'url_has_userinfo',
  'url_has_fragment',
  'url_forbidden_address',
  'url_forbidden_host',
] as const;

/** A code of {@link endpointUrlErrorCodes}. */
export type EndpointUrlErrorCode = (typeof endpointUrlErrorCodes)[number];

/** The default bound on the length of endpointUrl, in characters. */
export const DEFAULT_MAX_ENDPOINT_URL_LENGTH = 2048;

/** How strict the endpointUrl policy is. */
export interface EndpointUrlOptions {
  /** Accept `http:` as well as `https:` (in development, say). @defaultValue false */
  allowHttp?: boolean;
  /** The longest accepted URL, in characters. @defaultValue {@link DEFAULT_MAX_ENDPOINT_URL_LENGTH} */
  maxLength?: number;
  /**
   * Non-public ranges accepted (`10.0.0.0/8`), for tests and private deployments; give the SSRF
   * guard the same list. @defaultValue none
   */
  allow?: readonly string[];
}

/** Why an endpointUrl is refused. */
export interface EndpointUrlError {
  /** Stable code. */
  readonly code: EndpointUrlErrorCode;
  /** What is wrong and what to change. */
  readonly message: string;
}

/** The URL in its normalised (WHATWG) serialisation, or every rule it breaks. */
export type EndpointUrlResult =
  | {
      /** Accepted. */
      readonly ok: true;
      /** The URL to store, normalised. */
      readonly value: string;
    }
  | {
      /** Refused. */
      readonly ok: false;
      /** Every rule the URL breaks. */
      readonly errors: readonly EndpointUrlError[];
    };

const ENDPOINT_URL_RULES = {
  // Each entry checked as addressAllowList checks it, with its own code.
  allow: ALLOW_OPTION,
  // NaN or a string would compare false with every length and let any URL through.
  maxLength: worded(wholeNumber(), wholeNumber().expected, 'invalid_limit'),
  allowHttp: aBoolean,
};

const ENDPOINT_URL_EXAMPLE = "{ allowHttp: true, allow: ['10.0.0.0/8'] }";
const ENDPOINT_URL_FIELDS = optionsOf(ENDPOINT_URL_RULES, ENDPOINT_URL_EXAMPLE);

/**
 * The rule of an `endpointUrl` option elsewhere (the service's, `validateSubscriptionRequest`'s,
 * `createSubscription`'s): its keys read by the same rules as {@link endpointUrlPolicy} reads them
 * (a misspelt key refused with the nearest name, each value named `endpointUrl.key`), the options
 * given back checked and frozen. @internal
 */
export const ENDPOINT_URL_OPTION: Rule<EndpointUrlOptions> = {
  expected: ENDPOINT_URL_FIELDS.expected,
  read(value, name) {
    const fields = ENDPOINT_URL_FIELDS.read(value, name);
    if (fields === INVALID) return INVALID;
    const given = Object.entries(fields).filter(([, field]) => field !== undefined);
    return Object.freeze(Object.fromEntries(given)) as EndpointUrlOptions;
  },
};

/**
 * Check a webhook endpoint URL against the policy, reporting every rule it breaks. Host names are
 * not resolved here: a delivery must check the resolved addresses again with
 * {@link forbiddenAddressRange}.
 * @param input - the URL; anything that is not a string is `url_invalid`
 * @throws ConfigurationError `invalid_option` when `options` is not an object or cannot be read, or
 * for a misspelt option or an `allowHttp` that is not a boolean, `invalid_limit` when `maxLength`
 * is not a whole number of at least 1, and
 * `invalid_address_allow_list` when `allow` is not an array or holds a bad entry, whatever the input
 * @example
 * ```ts
 * checkEndpointUrl('https://hooks.example.com/in');  // { ok: true, value: 'https://hooks.example.com/in' }
 * checkEndpointUrl('https://[::ffff:10.0.0.1]/in'); // { ok: false, errors: [{ code: 'url_forbidden_address', ... }] }
 * ```
 */
export function checkEndpointUrl(
  input: unknown,
  options: EndpointUrlOptions = {},
): EndpointUrlResult {
  return endpointUrlPolicy(options)(input);
}

/**
 * The policy's check with its options read and checked once, so that a bad option is refused
 * before any URL is looked at (and an allow-list is parsed once for many URLs).
 * @throws ConfigurationError as {@link checkEndpointUrl} does for its options
 */
export function endpointUrlPolicy(
  options: EndpointUrlOptions = {},
): (input: unknown) => EndpointUrlResult {
  const { allow, maxLength, allowHttp } = readOptions(options, 'endpointUrl', ENDPOINT_URL_RULES, {
    defaults: { maxLength: DEFAULT_MAX_ENDPOINT_URL_LENGTH, allowHttp: false },
    example: ENDPOINT_URL_EXAMPLE,
  });
  const allowed = addressAllowList(allow);
  return (input) => check(input, maxLength, allowHttp, allowed);
}

function check(
  input: unknown,
  maxLength: number,
  allowHttp: boolean,
  allowed: AddressAllowList,
): EndpointUrlResult {
  if (typeof input !== 'string') {
    return fail(
      'url_invalid',
      'The URL must be a string such as https://hooks.example.com/webhooks.',
    );
  }
  if (input.length > maxLength) {
    return fail(
      'url_too_long',
      `The URL has ${input.length} characters; at most ${maxLength} are allowed.`,
    );
  }
  for (let i = 0; i < input.length; i++) {
    const c = input.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) {
      return fail(
        'url_invalid',
        `The URL contains a space or control character at position ${i}; percent-encode it or remove it.`,
      );
    }
  }
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return fail(
      'url_invalid',
      `"${input}" is not an absolute URL; write one such as https://hooks.example.com/webhooks.`,
    );
  }
  const errors: EndpointUrlError[] = [];
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) {
    const schemes = allowHttp ? 'https: or http:' : 'https:';
    errors.push({
      code: 'url_scheme_not_allowed',
      message: `The scheme is ${url.protocol}; use ${schemes}.`,
    });
  }
  if (url.username !== '' || url.password !== '') {
    errors.push({
      code: 'url_has_userinfo',
      message:
        'The URL carries a user name or password; remove it (credentials in URLs leak into logs).',
    });
  }
  if (input.includes('#')) {
    errors.push({
      code: 'url_has_fragment',
      message: 'The URL has a fragment ("#..."); remove it, it is never sent.',
    });
  }
  const hostError = checkHost(url.hostname, allowed);
  if (hostError !== undefined) errors.push(hostError);
  return errors.length === 0 ? { ok: true, value: url.href } : { ok: false, errors };
}

function checkHost(host: string, allowed: AddressAllowList): EndpointUrlError | undefined {
  // The WHATWG parser has already turned every IPv4 spelling (0x7f.1, 2130706433, 0177.0.0.1)
  // into four decimal parts, and compressed IPv6 literals, so one check covers every form.
  if (host.startsWith('[') || isFourPartDecimal(host)) {
    const range = forbiddenAddressRange(host);
    if (range === undefined || allowed.allows(host)) return undefined;
    return {
      code: 'url_forbidden_address',
      message: `The host ${host} is not a public address (${range} range); webhooks are only sent to public addresses. ${allowBoth(host)}`,
    };
  }
  if (!isLocalhostName(host)) return undefined;
  return {
    code: 'url_forbidden_host',
    message: `The host ${host} names this machine; webhooks are only sent to public hosts. Write the address instead (127.0.0.1 or [::1]): ${allowBoth('127.0.0.1')}`,
  };
}

// A local or private receiver needs the same address in two allow-lists: the one this policy
// reads and the one the delivery's transport connects under. Both named, or the next refusal
// comes from the other.
function allowBoth(address: string): string {
  const entry = `'${address.startsWith('[') ? address.slice(1, -1) : address}'`;
  return `To deliver to it (tests, a private network), allow it in both places: \`endpointUrl: { allow: [${entry}] }\` (where subscriptions are checked) and \`delivery: { transport: httpTransport({ allow: [${entry}] }) }\` (where deliveries connect).`;
}

// RFC 6761: localhost and every name under it resolve to loopback.
function isLocalhostName(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  return name === 'localhost' || name.endsWith('.localhost');
}

function fail(code: EndpointUrlErrorCode, message: string): EndpointUrlResult {
  return { ok: false, errors: [{ code, message }] };
}
