/** The outage a {@link RedisStore} reports when it cannot decide or release. @module */
import { ApiConventionsError, type ErrorOptions } from './index.js';

/**
 * Codes of {@link RedisStoreError}. A test pins this list: removing or renaming one is a breaking
 * change.
 */
export const redisStoreErrorCodes = [
  // No reply within the timeout.
  'redis_timeout',
  // The client or the server failed the command: connection lost, not connected, script error.
  'redis_command_failed',
  // A reply the store cannot read.
  'redis_bad_reply',
] as const;

/** A code of {@link RedisStoreError}. */
export type RedisStoreErrorCode = (typeof redisStoreErrorCodes)[number];

/**
 * Why a {@link RedisStore} could not decide (`apply`), give back a lease (`release`) or clear a
 * scope (`reset`).
 */
export class RedisStoreError extends ApiConventionsError {
  declare readonly code: RedisStoreErrorCode;
  /** What the store was doing. */
  readonly operation: 'apply' | 'release' | 'reset';

  /** @param options - `cause`: the client's error, when there is one */
  constructor(
    code: RedisStoreErrorCode,
    operation: 'apply' | 'release' | 'reset',
    message: string,
    options?: ErrorOptions,
  ) {
    super(code, message, options);
    this.name = 'RedisStoreError';
    this.operation = operation;
  }
}
