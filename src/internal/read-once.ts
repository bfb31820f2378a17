/**
 * Configuration and input read once and safely: the fields of an options object and the elements of
 * a list, each read one time, so that a getter cannot answer one value to a check and another to
 * the code that uses it, and a read that throws (a getter, a revoked proxy) becomes a
 * `ConfigurationError` that says what to pass instead. For functions that never throw,
 * {@link readSafely} and {@link isInstance} turn such a read into a value the caller answers.
 * @module
 */
import { ConfigurationError, type ConfigurationErrorCode } from '../errors/index.js';
import { describe, isArray } from './describe.js';

/**
 * Read the named fields of an object once each.
 * @param source - an object
 * @param keys - the fields to read
 * @param code - the error code if a read throws
 * @param what - what the object is, for the message
 * @internal
 */
export function readFields<K extends string>(
  source: object,
  keys: readonly K[],
  code: ConfigurationErrorCode,
  what: string,
): Partial<Record<K, unknown>> {
  const fields: Partial<Record<K, unknown>> = {};
  try {
    for (const key of keys) fields[key] = (source as Record<K, unknown>)[key];
  } catch (cause) {
    throw new ConfigurationError(code, `Reading ${what} threw; pass plain data.`, { cause });
  }
  return fields;
}

/** The most elements a configuration list may hold: far more than any configuration needs. */
const MAX_LIST_LENGTH = 1 << 20;

/**
 * The elements of an array, read once each into an array of the caller's own.
 * @param value - the list as given
 * @param what - what it is, for messages (e.g. `resourceRules rows`)
 * @param expected - what it must be, for the message (e.g. `an array of route patterns`)
 * @param code - the error code when it is not an array or cannot be read
 * @internal
 */
export function readList(
  value: unknown,
  what: string,
  expected: string,
  code: ConfigurationErrorCode,
): unknown[] {
  if (!isArray(value)) {
    throw new ConfigurationError(code, `${what} must be ${expected}, got ${describe(value)}.`);
  }
  try {
    const { length } = value;
    if (length > MAX_LIST_LENGTH) {
      throw new ConfigurationError(
        code,
        `${what} holds ${length} elements; it must be ${expected} of at most ${MAX_LIST_LENGTH}.`,
      );
    }
    return Array.from({ length }, (_, index) => value[index]);
  } catch (cause) {
    if (cause instanceof ConfigurationError) throw cause;
    throw new ConfigurationError(code, `Reading ${what} threw; pass ${expected}.`, { cause });
  }
}

/** What {@link readSafely} answers for a read that threw. @internal */
export const UNREADABLE: unique symbol = Symbol('unreadable');

/**
 * `source[key]` read once, for the functions that never throw: {@link UNREADABLE} when the read
 * throws (a getter, a Proxy trap, a revoked proxy), `undefined` for a source that is not an object
 * or a function (nothing of a primitive is read).
 * @param source - anything
 * @param key - the member to read
 * @internal
 */
export function readSafely(source: unknown, key: PropertyKey): unknown {
  if ((typeof source !== 'object' && typeof source !== 'function') || source === null) {
    return undefined;
  }
  try {
    return (source as Record<PropertyKey, unknown>)[key];
  } catch {
    return UNREADABLE;
  }
}

/**
 * `value instanceof type`, false where the check throws (a Proxy whose `getPrototypeOf` trap
 * throws, a revoked proxy).
 * @param value - anything
 * @param type - the class
 * @internal
 */
export function isInstance<T>(
  value: unknown,
  type: abstract new (...args: never[]) => T,
): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}
