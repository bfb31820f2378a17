/**
 * The library's thrown errors, for programmer mistakes; expected failures of a request are
 * returned as values.
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
  type InvalidRequestErrorOptions,
  invalidRequestErrorCodes,
  isInvalidRequestError,
} from './invalid-request-error.js';
