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
