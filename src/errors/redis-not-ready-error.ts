/** The error of a command not sent because the Redis client is not connected. @module */

/**
 * Thrown into the store's failure path (never to the caller) when the client is not connected:
 * the command is not handed to a client that would queue it and replay it, stale, after a
 * reconnect.
 */
export class RedisNotReadyError extends Error {
  /** @param state - the client's connection state */
  constructor(state: string) {
    super(`The Redis client is not ready (${state}); the command was not sent.`);
    this.name = 'RedisNotReadyError';
  }
}
