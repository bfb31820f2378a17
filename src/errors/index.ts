/**
 * The library's thrown errors: one base class, subclasses that set `name` and `code`, one class
 * per file. Thrown errors are for programmer mistakes (bad configuration); expected failures of a
 * request (a bad query, a refused subscription, a limit reached) are returned as values.
 * @module
 */
export {
  ApiConventionsError,
  type ErrorOptions,
  errorName,
  isApiConventionsError,
} from './api-conventions-error.js';
export {
  ConfigurationError,
  type ConfigurationErrorCode,
  configurationErrorCodes,
  isConfigurationError,
} from './configuration-error.js';
export {
  InvalidRequestError,
  type InvalidRequestErrorCode,
  invalidRequestErrorCodes,
  isInvalidRequestError,
} from './invalid-request-error.js';
