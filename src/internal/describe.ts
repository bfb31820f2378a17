/** Values as error messages show them, read without touching an object. @module */

/**
 * A value as it should appear in an error message. Never throws, whatever the value (a revoked
 * proxy, an object whose conversion to text throws): it reads nothing from an object.
 */
export function describe(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'bigint':
      return `${value}n`;
    case 'object':
      if (value === null) return 'null';
      return isArray(value) ? 'an array' : 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/** `Array.isArray`, false for a revoked proxy (on which it throws). */
export function isArray(value: unknown): value is readonly unknown[] {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}
