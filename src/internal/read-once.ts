/** Reads for the functions that never throw: a throwing getter or Proxy becomes a value. @module */

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
