/**
 * Rules for secrets (webhook secrets, keys): a refusal describes the value by its type and size,
 * never by its text, so that no message carries key material into a log. @module
 */
import { describe } from '../../internal/describe.js';
import { INVALID, mustBe, type Rule } from '../../internal/options.js';
import { isBytes } from '../../internal/read-once.js';

/**
 * A secret as a refusal shows it: `a string of 12 characters`, `16 bytes`, `a number`, or what
 * `describe` says of anything else (which shows no text).
 * @internal
 */
export function secretSize(value: unknown): string {
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  if (isBytes(value)) return `${value.length} bytes`;
  if (typeof value === 'number' || typeof value === 'bigint') return `a ${typeof value}`;
  return describe(value);
}

/**
 * The rule read as it is, a refused value worded "`name` must be `expected`, got `size`.", with
 * `size` from `given` (by default {@link secretSize}) in place of the value.
 * @param given - how the refused value is shown, without its text
 * @internal
 */
export function secretRule<T>(
  rule: Rule<T>,
  given: (value: unknown) => string = secretSize,
): Rule<T> {
  return {
    expected: rule.expected,
    code: rule.code,
    read(value, name) {
      const read = rule.read(value, name);
      if (read !== INVALID) return read;
      throw mustBe(name, rule.expected, given(value), rule.code);
    },
  };
}
