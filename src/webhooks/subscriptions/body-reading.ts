/**
 * Reading a parsed request body without trusting it: own fields read once, a getter or Proxy that
 * throws answered as an issue, and the shared shapes of issues (pointers, kinds, lone surrogates).
 * @module
 */
import { isArray } from '../../internal/describe.js';
import { LONE_SURROGATE } from '../../internal/lone-surrogate.js';
import { readSafely, UNREADABLE } from '../../internal/read-once.js';
import type {
  SubscriptionRequestErrorCode,
  SubscriptionRequestIssue,
} from './subscription-request-result.js';

/**
 * A lone UTF-16 surrogate in `value`, as an issue. Refused: UTF-8 cannot carry it, so the backends
 * would disagree (memory keeps it, PostgreSQL and PGlite store U+FFFD) and a URL would be
 * rewritten silently.
 * @internal
 */
export function loneSurrogateIssue(
  value: string,
  path: string,
  what: string,
): SubscriptionRequestIssue | undefined {
  const found = LONE_SURROGATE.exec(value);
  if (found === null) return undefined;
  const unit = value.charCodeAt(found.index).toString(16).toUpperCase();
  return {
    code: 'lone_surrogate',
    path,
    message: `${what} must be well-formed Unicode; this one has half of a surrogate pair (\\u${unit}) alone at position ${found.index}: send the whole character or remove it.`,
  };
}

/** One issue: one shape, one member order, for every issue. @internal */
export function issue(
  code: SubscriptionRequestErrorCode,
  path: string,
  message: string,
): SubscriptionRequestIssue {
  return { code, path, message };
}

/** RFC 6901: "~" is written "~0" and "/" is written "~1". @internal */
export function pointer(key: string): string {
  return `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/** The kind of a value, never the value itself: the message goes back to its sender. @internal */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * What an unreadable value is called: a body parsed from JSON has no getters and no Proxies; one
 * that does is answered, not thrown. @internal
 */
export const UNREADABLE_VALUE =
  'a value that cannot be read (a getter or Proxy that throws); send the parsed JSON';

/** A value that cannot be read, as an issue. @internal */
export function unreadableIssue(path: string, expected: string): SubscriptionRequestIssue {
  return { code: 'wrong_type', path, message: `${expected}; got ${UNREADABLE_VALUE}.` };
}

/** The own keys of a parsed body, or `undefined` when listing them throws. @internal */
export function ownKeys(fields: object): string[] | undefined {
  try {
    return Object.keys(fields);
  } catch {
    return undefined;
  }
}

/** An own field, read once: undefined when absent (or inherited), UNREADABLE when a read throws. @internal */
export function ownField(fields: object, name: string): unknown {
  let own: boolean;
  try {
    own = Object.hasOwn(fields, name);
  } catch {
    return UNREADABLE;
  }
  return own ? readSafely(fields, name) : undefined;
}
