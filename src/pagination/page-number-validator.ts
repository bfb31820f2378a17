/** The validator of page-number pagination (`pageNumber`, `pageSize`). @module */
import { readOptions, wholeNumber } from '../internal/options.js';
import { type DecimalRule, readDecimalParameter } from './decimal-parameter.js';
import { PAGE_SIZES, type PageSizeLimits, pageSizePresets } from './page-size-presets.js';
import {
  type PaginationValidation,
  PROBLEM_RULES,
  type ProblemOptions,
  refusal,
} from './pagination-error.js';
import { type QueryInput, toReadableQuery } from './query-input.js';

/** An accepted page-number query. */
export interface PageNumberQuery {
  /** The page asked for, from 1. */
  readonly pageNumber: number;
  /** Items per page. */
  readonly pageSize: number;
}

/** Options of {@link pageNumberValidator}. */
export interface PageNumberValidatorOptions extends ProblemOptions {
  /** Default and maximum page size. @defaultValue `pageSizePresets.businessData` (20, 200) */
  sizes?: PageSizeLimits;
  /** The highest page number accepted. @defaultValue `Number.MAX_SAFE_INTEGER` */
  maxPageNumber?: number;
}

/**
 * Make the validator of a page-number endpoint; it takes any {@link QueryInput} and never throws.
 * @param options - page sizes, highest page number, status and problem type prefix
 * @returns `(query) => PaginationValidation<PageNumberQuery>`
 * @throws ConfigurationError for unusable options
 * @example
 * ```ts
 * const validate = pageNumberValidator(); // business data: default 20, at most 200
 * const result = validate('pageNumber=3&pageSize=50');
 * if (result.ok) result.value; // { pageNumber: 3, pageSize: 50 }
 * else result.problem; // { status: 400, code: 'page_size_too_large', ... }
 * ```
 */
export function pageNumberValidator(
  options: PageNumberValidatorOptions = {},
): (query: QueryInput) => PaginationValidation<PageNumberQuery> {
  const { sizes, maxPageNumber, status, typeBase } = readOptions(
    options,
    'pageNumberValidator',
    { ...PROBLEM_RULES, sizes: PAGE_SIZES, maxPageNumber: wholeNumber() },
    {
      defaults: {
        sizes: pageSizePresets.businessData,
        maxPageNumber: Number.MAX_SAFE_INTEGER,
        status: 400,
      },
      example: '{ sizes: pageSizePresets.businessData }',
    },
  );
  const problemOptions: ProblemOptions = {
    status,
    ...(typeBase === undefined ? {} : { typeBase }),
  };
  const pageNumberRule: DecimalRule = {
    name: 'pageNumber',
    defaultValue: 1,
    minimum: 1,
    maximum: maxPageNumber,
    tooSmall: 'page_number_too_small',
    tooLarge: 'page_number_too_large',
    example: 2,
  };
  const pageSizeRule: DecimalRule = {
    name: 'pageSize',
    defaultValue: sizes.defaultSize,
    minimum: 1,
    maximum: sizes.maxSize,
    tooSmall: 'page_size_too_small',
    tooLarge: 'page_size_too_large',
    example: sizes.defaultSize,
  };

  return (query) => {
    const readable = toReadableQuery(query);
    const pageNumber = readDecimalParameter(readable, pageNumberRule);
    const pageSize = readDecimalParameter(readable, pageSizeRule);
    if (typeof pageNumber === 'number' && typeof pageSize === 'number') {
      return { ok: true, value: { pageNumber, pageSize } };
    }
    return refusal([pageNumber, pageSize], problemOptions);
  };
}
