/**
 * The rule of the extra request headers of deliveries (`createDeliverer`'s and the service's
 * `delivery.headers`): what node would refuse at every attempt (CR/LF, bad names) is refused once,
 * up front. @module
 */
import { isArray } from '../../internal/describe.js';
import { checkValue, INVALID, type Rule, withFields } from '../../internal/options.js';

// Node's rules (validateHeaderName and validateHeaderValue of node:http), written out so that the
// rule reads the same on every runtime: a token, and a value of tab, visible ASCII and Latin-1.
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

const NAME: Rule<string> = {
  expected: "an HTTP header name (letters, digits and !#$%&'*+-.^_`|~) such as user-agent",
  read(value) {
    return typeof value === 'string' && TOKEN.test(value) ? value : INVALID;
  },
};

const VALUE: Rule<string> = {
  expected: 'a string without control characters (CR, LF, NUL)',
  read(value) {
    return typeof value === 'string' && !INVALID_VALUE_CHAR.test(value) ? value : INVALID;
  },
};

/** Header names mapped to string values, each read once into a record of the deliverer's own. @internal */
export const EXTRA_HEADERS: Rule<Readonly<Record<string, string>>> = {
  expected:
    "an object of HTTP header names and string values, such as { 'user-agent': 'acme-webhooks/1.0' }",
  read(value, name) {
    if (typeof value !== 'object' || value === null || isArray(value)) return INVALID;
    let names: string[];
    try {
      names = Object.keys(value);
    } catch {
      return INVALID; // a Proxy that will not tell its keys
    }
    // Each value read once: a getter that throws is refused as no plain data.
    const fields = checkValue(withFields(names, EXTRA_HEADERS.expected), value, name);
    const headers: Record<string, string> = Object.create(null);
    for (const header of names) {
      checkValue(NAME, header, `${name} name`);
      headers[header] = checkValue(VALUE, fields[header], `${name}.${header}`);
    }
    return headers;
  },
};
