/** The failures of a paged list request, and their problem details (RFC 9457). @module */
import { type ProblemDetails, problemDetails } from '../http/problem-details.js';
import { aString, wholeNumber, worded } from '../internal/options.js';

/** Codes of a refused paged list request, each ending a problem `type` URI; a test pins them. */
export const paginationErrorCodes = [
  'parameter_repeated',
  'parameter_not_a_string',
  'not_a_decimal_integer',
  'page_number_too_small',
  'page_number_too_large',
  'page_size_too_small',
  'page_size_too_large',
  'limit_too_small',
  'limit_too_large',
  'cursor_malformed',
  'cursor_invalid_signature',
  'cursor_expired',
  'cursor_query_mismatch',
] as const;

/** A code of a refused paged list request. */
export type PaginationErrorCode = (typeof paginationErrorCodes)[number];

const TITLES: Readonly<Record<PaginationErrorCode, string>> = {
  parameter_repeated: 'Query parameter repeated',
  parameter_not_a_string: 'Query parameter is not a plain value',
  not_a_decimal_integer: 'Query parameter is not a whole number',
  page_number_too_small: 'Page number too small',
  page_number_too_large: 'Page number too large',
  page_size_too_small: 'Page size too small',
  page_size_too_large: 'Page size too large',
  limit_too_small: 'Limit too small',
  limit_too_large: 'Limit too large',
  cursor_malformed: 'Cursor malformed',
  cursor_invalid_signature: 'Cursor not recognised',
  cursor_expired: 'Cursor expired',
  cursor_query_mismatch: 'Cursor belongs to another query',
};

/** One refused query parameter. */
export interface PaginationIssue {
  /** Stable code of the failure. */
  readonly code: PaginationErrorCode;
  /** The query parameter at fault, for example `pageSize`. */
  readonly parameter: string;
  /** What is wrong and what to send instead. */
  readonly message: string;
}

/** How a refused request is answered. */
export interface ProblemOptions {
  /** HTTP status of the refusal (some platforms answer 422). @defaultValue 400 */
  status?: number;
  /** Prefix of the problem `type` URI. @defaultValue `urn:api-conventions:problem:` */
  typeBase?: string;
}

/** The rules of {@link ProblemOptions}, which both validators take. @internal */
export const PROBLEM_RULES = {
  status: worded(wholeNumber(400, 499), 'a client error code from 400 to 499 (400 or 422)'),
  typeBase: worded(
    aString(Number.MAX_SAFE_INTEGER, 0),
    'a string (the prefix of the problem type)',
  ),
};

/** The problem details of a refused query: the first issue, and every issue in `errors`. */
export function paginationProblem(
  issues: readonly [PaginationIssue, ...PaginationIssue[]],
  options: ProblemOptions = {},
): ProblemDetails {
  const [first] = issues;
  const problem = problemDetails({
    code: first.code,
    title: TITLES[first.code],
    status: options.status ?? 400,
    detail: first.message,
    ...(options.typeBase === undefined ? {} : { typeBase: options.typeBase }),
  });
  // Not `extensions`: the names cannot clash, and this is several times faster than a spread.
  problem.parameter = first.parameter;
  problem.errors = issues.map((issue) => ({
    code: issue.code,
    parameter: issue.parameter,
    detail: issue.message,
  }));
  return problem;
}

/** The outcome of validating a query: the values, or why it is refused. */
export type PaginationValidation<T> =
  | {
      /** The query is accepted. */
      readonly ok: true;
      /** The values to page with, defaults applied. */
      readonly value: T;
    }
  | {
      /** The query is refused. */
      readonly ok: false;
      /** Every refused parameter, in parameter order; at least one. */
      readonly errors: readonly [PaginationIssue, ...PaginationIssue[]];
      /** The response body: problem details with the configured status. */
      readonly problem: ProblemDetails;
    };

/** The refusal of a query from its parameters' readings, at least one an issue. */
export function refusal(
  readings: readonly unknown[],
  options: ProblemOptions,
): { ok: false; errors: [PaginationIssue, ...PaginationIssue[]]; problem: ProblemDetails } {
  const errors = readings.filter(isIssue) as [PaginationIssue, ...PaginationIssue[]];
  return { ok: false, errors, problem: paginationProblem(errors, options) };
}

function isIssue(reading: unknown): reading is PaginationIssue {
  return typeof reading === 'object' && reading !== null && 'code' in reading;
}
