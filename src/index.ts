/**
 * api-conventions: rate limits, concurrency throttling, per-resource limits, the 429 response,
 * pagination and webhook subscriptions, as one tested implementation.
 * @module
 */

export type { Clock } from './clock.js';
// Time
export { FakeClock, systemClock } from './clock.js';
export type { ConfigurationErrorCode, ErrorOptions } from './errors.js';
// Errors
export {
  ApiConventionsError,
  ConfigurationError,
  configurationErrorCodes,
  isApiConventionsError,
  isConfigurationError,
} from './errors.js';
export type { ProblemDetails, ProblemInit, ResponseParts } from './http/problem-details.js';
// HTTP
export {
  DEFAULT_PROBLEM_TYPE_BASE,
  PROBLEM_CONTENT_TYPE,
  problemDetails,
  problemResponse,
} from './http/problem-details.js';
export { parseHttpDate, parseRetryAfter } from './http/retry-after.js';
export type {
  CursorBindingOptions,
  CursorCodec,
  CursorCodecOptions,
  CursorDecoding,
  CursorErrorCode,
  CursorSecret,
} from './pagination/cursor-codec.js';
// Pagination
export { createCursorCodec } from './pagination/cursor-codec.js';
export type { CursorQuery, CursorValidatorOptions } from './pagination/cursor-validator.js';
export { cursorValidator } from './pagination/cursor-validator.js';
export type {
  CursorNavigation,
  CursorPageInput,
  PageLinks,
  PageNumberNavigation,
  PageNumberPageInput,
} from './pagination/links.js';
export { cursorNavigation, formatLinkHeader, pageNumberNavigation } from './pagination/links.js';
export type {
  PageNumberQuery,
  PageNumberValidatorOptions,
} from './pagination/page-number-validator.js';
export { pageNumberValidator } from './pagination/page-number-validator.js';
export type { PageSizeLimits, PageSizePresets } from './pagination/page-size-presets.js';
export { pageSizePresets } from './pagination/page-size-presets.js';
export type {
  PaginationErrorCode,
  PaginationIssue,
  PaginationValidation,
  ProblemOptions,
} from './pagination/pagination-error.js';
export { paginationErrorCodes, paginationProblem } from './pagination/pagination-error.js';
// The query readers stay internal: validators take the query as frameworks hand it over.
export type { QueryInput } from './pagination/query-input.js';
