/** What a {@link RedisOverrides} reports when Redis fails it or holds an entry it cannot use. @module */
import { ApiConventionsError, type ErrorOptions } from './index.js';

/**
 * Codes of {@link RedisOverridesError}. A test pins this list: removing or renaming one is a
 * breaking change.
 */
export const redisOverridesErrorCodes = [
  // No reply within the timeout.
  'redis_timeout',
  // The client or the server failed the command: connection lost, not connected, script error.
  'redis_command_failed',
  // A reply the source cannot read.
  'redis_bad_reply',
  // An entry of the hash that does not parse, or names a preset this process does not have.
  'invalid_stored_override',
] as const;

/** A code of {@link RedisOverridesError}. */
export type RedisOverridesErrorCode = (typeof redisOverridesErrorCodes)[number];

/**
 * Why a `RedisOverrides` could not load the overrides (`refresh`), write one (`set`, `delete`), or
 * skipped an entry it read (`invalid_stored_override`, with the entry's `field`).
 */
export class RedisOverridesError extends ApiConventionsError {
  declare readonly code: RedisOverridesErrorCode;
  /** What the source was doing. */
  readonly operation: 'refresh' | 'set' | 'delete';
  /** The hash field of the entry skipped, for `invalid_stored_override`. */
  readonly field: string | undefined;

  /**
   * @param options - `cause`: the client's or the parser's error, when there is one; `field`: the
   *   hash field of a skipped entry
   */
  constructor(
    code: RedisOverridesErrorCode,
    operation: 'refresh' | 'set' | 'delete',
    message: string,
    options?: ErrorOptions & { field?: string },
  ) {
    super(code, message, options);
    this.name = 'RedisOverridesError';
    this.operation = operation;
    this.field = options?.field;
  }
}
