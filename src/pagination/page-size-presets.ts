/** The specification's page sizes as presets, and the rule for custom ones. @module */
import {
  checkValue,
  INVALID,
  type Rule,
  readOptions,
  wholeNumber,
  worded,
} from '../internal/options.js';

/** The default and the maximum number of items per page of an endpoint. */
export interface PageSizeLimits {
  /** Items per page when the request does not say. */
  readonly defaultSize: number;
  /** The most items a request may ask for; more is refused, never clamped. */
  readonly maxSize: number;
}

/** The page sizes of the specification's two kinds of data. */
export interface PageSizePresets {
  /** Business data, paged by page number: default 20, maximum 200. */
  readonly businessData: PageSizeLimits;
  /** Analytical data, paged by cursor: default 50, maximum 500. */
  readonly analyticalData: PageSizeLimits;
}

/**
 * The specification's page sizes: business data (reservations, folios) by page number, analytical
 * data (audit logs, exports) by cursor.
 * @example
 * ```ts
 * const validate = pageNumberValidator({ sizes: pageSizePresets.businessData });
 * ```
 */
export const pageSizePresets: PageSizePresets = Object.freeze({
  businessData: Object.freeze({ defaultSize: 20, maxSize: 200 }),
  analyticalData: Object.freeze({ defaultSize: 50, maxSize: 500 }),
});

const SIZE = worded(wholeNumber(), 'a whole number from 1 to 9007199254740991', 'invalid_limit');

/**
 * Page size limits: whole numbers, `1 <= defaultSize <= maxSize <= 2^53 - 1`, each read once.
 * @internal
 */
export const PAGE_SIZES: Rule<PageSizeLimits> = {
  expected: 'page size limits such as pageSizePresets.businessData',
  code: 'invalid_limit',
  read(value, name) {
    const { defaultSize, maxSize } = readOptions(
      value,
      name,
      { defaultSize: SIZE, maxSize: SIZE },
      { required: true, example: '{ defaultSize: 20, maxSize: 200 }' },
    );
    if (defaultSize === undefined || maxSize === undefined) return INVALID;
    const fitting = worded(
      wholeNumber(1, maxSize),
      `a whole number from 1 to maxSize (${maxSize})`,
      'invalid_limit',
    );
    checkValue(fitting, defaultSize, `${name}.defaultSize`);
    return { defaultSize, maxSize };
  },
};
