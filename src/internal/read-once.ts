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

/**
 * Whether a value is a Uint8Array (a Buffer too) whose bytes can be read: not a Proxy of one, which
 * passes `instanceof` but whose `length` and elements throw. @internal
 */
export function isBytes(value: unknown): value is Uint8Array {
  return ArrayBuffer.isView(value) && isInstance(value, Uint8Array);
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
