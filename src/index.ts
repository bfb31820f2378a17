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
export type { CanonicalPathOptions } from './limits/canonical-path.js';
// Limits: routes. The scanner behind canonicalPath is internal; the table wraps it.
export {
  canonicalPath,
  DEFAULT_MAX_PATH_LENGTH,
  VERSION_SEGMENT_PATTERN,
} from './limits/canonical-path.js';
export type { ResourceLimitRow } from './limits/resource-tables.js';
export {
  developmentResourceLimits,
  liveResourceLimits,
  liveThrottleExemptRoutes,
} from './limits/resource-tables.js';
export type { RoutePattern, RouteSegment } from './limits/route-pattern.js';
export { parseRoutePattern } from './limits/route-pattern.js';
export type { RouteMatch, RouteRule, RouteTable, RouteTableOptions } from './limits/route-table.js';
export { compileRoutes } from './limits/route-table.js';
