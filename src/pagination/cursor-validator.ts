/** The validator of cursor pagination (`cursor`, `limit`), for analytical data. @module */
import { readOptions, wholeNumber, withMethods } from '../internal/options.js';
import type { CursorCodec } from './cursor-codec.js';
import { notAStringIssue, readDecimalParameter, repeatedIssue } from './decimal-parameter.js';
import { PAGE_SIZES, type PageSizeLimits, pageSizePresets } from './page-size-presets.js';
import {
  type PaginationIssue,
  type PaginationValidation,
  PROBLEM_RULES,
  type ProblemOptions,
  refusal,
} from './pagination-error.js';
import {
  MISSING,
  NOT_A_STRING,
  type QueryInput,
  REPEATED,
  type ReadableQuery,
  readParameter,
  toReadableQuery,
} from './query-input.js';

const CURSOR_EXAMPLE = 'cursor=<the cursor of the previous page>';

/** An accepted cursor query. */
export interface CursorQuery<S> {
  /** The cursor as sent, or `undefined` for the first page. */
  readonly cursor: string | undefined;
  /** The state the cursor carries (from the codec), or `undefined` for the first page or without a codec. */
  readonly state: S | undefined;
  /** Items per page. */
  readonly limit: number;
}

/** Options of {@link cursorValidator}. */
export interface CursorValidatorOptions<S> extends ProblemOptions {
  /** Default and maximum limit. @defaultValue `pageSizePresets.analyticalData` (50, 500) */
  sizes?: PageSizeLimits;
  /** The codec that verifies cursors; without one a cursor passes as an opaque string. */
  codec?: CursorCodec<S>;
  /** Longest cursor accepted without a codec (the codec has its own bound). @defaultValue 4096 */
  maxCursorLength?: number;
}

/**
 * Make the validator of a cursor endpoint; it takes any {@link QueryInput} and never throws. With
 * a codec, a tampered, expired, foreign or differently bound cursor is refused.
 * @param options - limits, codec, status and problem type prefix
 * @returns `(query) => PaginationValidation<CursorQuery<S>>`
 * @throws ConfigurationError for unusable options
 * @example
 * ```ts
 * const validate = cursorValidator({ codec }); // analytical data: default 50, at most 500
 * const result = validate(request.query);
 * if (result.ok) result.value.state; // what codec.encode() was given for this page
 * ```
 */
export function cursorValidator<S = unknown>(
  options: CursorValidatorOptions<S> = {},
): (query: QueryInput) => PaginationValidation<CursorQuery<S>> {
  const { sizes, codec, maxCursorLength, status, typeBase } = readOptions(
    options,
    'cursorValidator',
    {
      ...PROBLEM_RULES,
      sizes: PAGE_SIZES,
      // Checked here, not when the first cursor arrives: a wrong codec would fail every request.
      codec: withMethods<CursorCodec<S>>(['decode'], 'a codec from createCursorCodec()'),
      // NaN or a string would compare false with every length and let any cursor through.
      maxCursorLength: wholeNumber(),
    },
    {
      defaults: { sizes: pageSizePresets.analyticalData, maxCursorLength: 4096, status: 400 },
      example: '{ codec, sizes: pageSizePresets.analyticalData }',
    },
  );
  const problemOptions: ProblemOptions = {
    status,
    ...(typeBase === undefined ? {} : { typeBase }),
  };
  const limitRule = {
    name: 'limit',
    defaultValue: sizes.defaultSize,
    minimum: 1,
    maximum: sizes.maxSize,
    tooSmall: 'limit_too_small',
    tooLarge: 'limit_too_large',
    example: sizes.defaultSize,
  } as const;

  const readCursor = (
    readable: ReadableQuery,
    query: QueryInput,
  ): { cursor: string | undefined; state: S | undefined } | PaginationIssue => {
    const cursor = readParameter(readable, 'cursor');
    if (cursor === MISSING) return { cursor: undefined, state: undefined };
    if (cursor === REPEATED) return repeatedIssue('cursor', CURSOR_EXAMPLE);
    if (cursor === NOT_A_STRING) return notAStringIssue('cursor', CURSOR_EXAMPLE);
    if (codec === undefined) {
      if (cursor.length === 0 || cursor.length > maxCursorLength) {
        return {
          code: 'cursor_malformed',
          parameter: 'cursor',
          message: `cursor must be a non-empty token of at most ${maxCursorLength} characters, sent exactly as received; omit it to start from the first page.`,
        };
      }
      return { cursor, state: undefined };
    }
    const decoded = codec.decode(cursor, { query });
    if (!decoded.ok) return { code: decoded.code, parameter: 'cursor', message: decoded.message };
    return { cursor, state: decoded.state };
  };

  return (query) => {
    const readable = toReadableQuery(query);
    const cursor = readCursor(readable, query);
    const limit = readDecimalParameter(readable, limitRule);
    if ('code' in cursor || typeof limit !== 'number')
      return refusal([cursor, limit], problemOptions);
    return { ok: true, value: { cursor: cursor.cursor, state: cursor.state, limit } };
  };
}
