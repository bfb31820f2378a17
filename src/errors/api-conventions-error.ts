/** The base of every error the library throws, and guards that work across copies. @module */

// A registered symbol, so that the guards recognise errors from another copy of the package.
const BRAND = Symbol.for('api-conventions.error');
/** Options accepted by every error constructor. */
export interface ErrorOptions {
  /** The underlying error, if any. */
  cause?: unknown;
}

/** Base class of every error the library throws. `code` is stable and part of the public API. */
export class ApiConventionsError extends Error {
  /** Stable, machine-readable code. */
  readonly code: string;

  /** @param message - what went wrong and what to change */
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiConventionsError';
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * True for any error thrown by this library, including one from another copy of the package.
 * Never throws, whatever the value.
 * @param value - anything caught
 */
export function isApiConventionsError(value: unknown): value is ApiConventionsError {
  return errorName(value) !== undefined;
}

/**
 * The `name` of an error of this library (of any copy of the package), read once, or `undefined`
 * for anything else: a getter or Proxy that throws is not one of ours, and the guards answer.
 * @param value - anything caught
 * @internal
 */
export function errorName(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    const error = value as { [BRAND]?: unknown; code?: unknown; name?: unknown };
    if (error[BRAND] !== true || typeof error.code !== 'string') return undefined;
    const { name } = error;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}
