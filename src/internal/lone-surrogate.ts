/**
 * Lone UTF-16 surrogates: UTF-8 writes each as U+FFFD, so strings differing only there would
 * share their bytes.
 * @module
 */

/** Matches one lone surrogate; its `source` composes into larger patterns. */
export const LONE_SURROGATE =
  /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
