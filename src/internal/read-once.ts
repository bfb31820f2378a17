/** Reads for the functions that never throw: a throwing getter or Proxy becomes a value. @module */

/** What {@link readSafely} answers for a read that threw. @internal */
export const UNREADABLE: unique symbol = Symbol('unreadable');

/**
 * `source[key]` read once: {@link UNREADABLE} when the read throws, `undefined` for a primitive.
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

/** `value instanceof type`, false where the check throws (a Proxy trap, a revoked proxy). @internal */
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
