/** The strict reading of a numeric query parameter: `^[0-9]+$`, then the range. @module */
import type { PaginationErrorCode, PaginationIssue } from './pagination-error.js';
import { MISSING, REPEATED, type ReadableQuery, readParameter } from './query-input.js';

/** The rules of one numeric parameter. */
export interface DecimalRule {
  /** Parameter name, for example `pageSize`. */
  readonly name: string;
  /** Value when the parameter is absent. */
  readonly defaultValue: number;
  /** Smallest accepted value. */
  readonly minimum: number;
  /** Largest accepted value. */
  readonly maximum: number;
  /** Code for a value below `minimum`. */
  readonly tooSmall: PaginationErrorCode;
  /** Code for a value above `maximum`. */
  readonly tooLarge: PaginationErrorCode;
  /** Example value used in messages. */
  readonly example: number;
}

// Up to 15 digits the running value is exact (below 2^53).
const EXACT_DIGITS = 15;
// 16 digits above 2^53 exceed every maximum, and rounding keeps them above; 17 never fit.
const MAX_SIGNIFICANT_DIGITS = 16;

function longDecimalValue(text: string): number {
  let start = 0;
  while (start < text.length - 1 && text.charCodeAt(start) === 48) start++;
  return text.length - start > MAX_SIGNIFICANT_DIGITS ? Number.POSITIVE_INFINITY : Number(text);
}

/** A numeric parameter by its rule: the number, or the issue that refuses it. */
export function readDecimalParameter(
  query: ReadableQuery,
  rule: DecimalRule,
): number | PaginationIssue {
  const text = readParameter(query, rule.name);
  if (typeof text !== 'string') {
    if (text === MISSING) return rule.defaultValue;
    const example = `${rule.name}=${rule.example}`;
    return text === REPEATED
      ? repeatedIssue(rule.name, example)
      : notAStringIssue(rule.name, example);
  }
  // One pass, not a regular expression: every list request's success path runs this.
  const length = text.length;
  if (length === 0) return notADecimalIssue(rule, text);
  let value = 0;
  for (let i = 0; i < length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return notADecimalIssue(rule, text);
    value = value * 10 + digit;
  }
  if (length > EXACT_DIGITS) value = longDecimalValue(text);
  if (value < rule.minimum) {
    return {
      code: rule.tooSmall,
      parameter: rule.name,
      message: `${rule.name} must be at least ${rule.minimum}; got ${quote(text)}.`,
    };
  }
  if (value > rule.maximum) {
    return {
      code: rule.tooLarge,
      parameter: rule.name,
      message: `${rule.name} must be at most ${rule.maximum}; got ${quote(text)}. Ask for ${rule.maximum} or fewer and follow the next link for the rest.`,
    };
  }
  return value;
}

function notADecimalIssue(rule: DecimalRule, text: string): PaginationIssue {
  return {
    code: 'not_a_decimal_integer',
    parameter: rule.name,
    message: `${rule.name} must be a whole number written with the digits 0-9 only (for example ${rule.name}=${rule.example}); got ${quote(text)}.`,
  };
}

/** The issue of a parameter given more than once; `example` is a correct `name=value`. */
export function repeatedIssue(name: string, example: string): PaginationIssue {
  return {
    code: 'parameter_repeated',
    parameter: name,
    message: `${name} must appear at most once in the query, as in ${example}.`,
  };
}

/** The issue of a parameter that is not a string. */
export function notAStringIssue(name: string, example: string): PaginationIssue {
  return {
    code: 'parameter_not_a_string',
    parameter: name,
    message: `${name} must be a single plain value, as in ${example}, not a nested object.`,
  };
}

const MAX_ECHO = 40;

/** JSON-quoted and cut short, so a long or odd value cannot flood or break the message. */
export function quote(text: string): string {
  return JSON.stringify(text.length > MAX_ECHO ? `${text.slice(0, MAX_ECHO)}…` : text);
}
