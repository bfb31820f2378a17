/**
 * Checks of the client's options, made before any request is sent: each throws a
 * `ConfigurationError` (`invalid_option`) that names the option and says what it accepts.
 * @module
 */
import { ConfigurationError } from '../errors/index.js';
import { describe } from '../internal/describe.js';

/**
 * The options object of a client function: `undefined` gives `{}` when the options are optional.
 * @param value - what the caller passed
 * @param where - the function and what its options must hold, for the message
 * @param optional - whether `undefined` stands for "no options"
 * @throws ConfigurationError `invalid_option` for `null`, an array or anything else not an object
 */
export function optionsObject<T extends object>(
  value: T | undefined,
  where: string,
  optional: boolean,
): Partial<T> {
  if (value === undefined && optional) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(
      'invalid_option',
      `${where}, got ${describe(value)}${optional ? '; leave it out for the defaults' : ''}.`,
    );
  }
  return value;
}

/**
 * An optional function option, as given.
 * @param value - the option's value
 * @param name - the option, for the message
 * @param what - what the function does, for the message
 * @throws ConfigurationError `invalid_option` when it is given and is not a function
 */
export function optionalFunction<F>(
  value: F | undefined,
  name: string,
  what: string,
): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new ConfigurationError(
      'invalid_option',
      `${name} must be a function that ${what}, got ${describe(value)}.`,
    );
  }
  return value;
}

/**
 * An optional count of the list's pages or items (a page number, a page size, a limit): a whole
 * number from 1 to `Number.MAX_SAFE_INTEGER`, the range the list's query parameters accept.
 * @param value - the option's value
 * @param name - the option, for the message
 * @throws ConfigurationError `invalid_option` for anything else
 */
export function optionalCount(value: number | undefined, name: string): number | undefined {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
    throw new ConfigurationError(
      'invalid_option',
      `${name} must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER} (Number.MAX_SAFE_INTEGER), got ${describe(value)}.`,
    );
  }
  return value;
}
