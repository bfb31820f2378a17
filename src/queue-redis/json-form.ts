/**
 * A value in the form Redis will hold it as JSON, the same as `JSON.parse(JSON.stringify(value))`
 * gives, without writing and reading the text for a job of plain fields. @module
 */

/**
 * `value` as JSON stores it: `JSON.parse(JSON.stringify(value))`, which it throws as. An object
 * (of no class) whose own fields are all strings, numbers, booleans, null, undefined or symbols is
 * copied as JSON would store it: a fresh object of its fields in their order, a number that is not
 * finite as null, -0 as 0, undefined and symbols left out. Anything else (an array, an instance of
 * a class, a nested object, a function, a `toJSON`, a BigInt, a field named `__proto__`) goes
 * through the text. Each field is read as `JSON.stringify` reads it; only a getter that answers
 * differently each time is read again, when the value then goes through the text. @internal
 */
export function jsonForm(value: unknown): unknown {
  const copy = plainCopy(value);
  return copy === undefined ? JSON.parse(JSON.stringify(value)) : copy;
}

/** The copy of an object of plain fields as JSON stores it; undefined for anything else. */
function plainCopy(value: unknown): Record<string, unknown> | undefined {
  try {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return undefined;
    const fields = value as Record<string, unknown>;
    // JSON.stringify asks the object first for its toJSON (an inherited one included).
    if (fields.toJSON !== undefined) return undefined;
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(fields)) {
      // Set on a fresh object, it would set the copy's prototype: JSON.parse makes a field of it.
      if (key === '__proto__') return undefined;
      const field = fields[key];
      switch (typeof field) {
        case 'string':
        case 'boolean':
          copy[key] = field;
          break;
        case 'number':
          // JSON writes a number that is not finite as null, and -0 as 0.
          copy[key] = Number.isFinite(field) ? field + 0 : null;
          break;
        case 'undefined':
        case 'symbol':
          break; // left out of an object by JSON
        default:
          if (field !== null) return undefined;
          copy[key] = null;
      }
    }
    return copy;
  } catch {
    // A proxy or getter that throws: the text decides (and throws as JSON.stringify does).
    return undefined;
  }
}
