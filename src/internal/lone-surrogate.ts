/**
 * A UTF-16 surrogate without its other half. UTF-8 cannot carry one: it is written as U+FFFD, so
 * two strings that differ only there reach Redis (or any byte store) as the same bytes.
 * @module
 */

/** Matches one lone surrogate; its `source` composes into larger patterns. */
export const LONE_SURROGATE =
  /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
