/**
 * The Redis store, for limits that hold across every instance of a service, and the Redis source
 * of overrides that every instance sees:
 * `import { RedisStore, RedisOverrides, ioredisClient } from 'api-conventions/redis'`. The root
 * export stays free of Redis; neither ioredis nor node-redis is imported here (the adapters are
 * typed by the methods they call).
 * @module
 */

export { RedisNotReadyError } from '../errors/redis-not-ready-error.js';
export type { RedisOverridesErrorCode } from '../errors/redis-overrides-error.js';
export {
  RedisOverridesError,
  redisOverridesErrorCodes,
} from '../errors/redis-overrides-error.js';
export type { RedisStoreErrorCode } from '../errors/redis-store-error.js';
export { RedisStoreError, redisStoreErrorCodes } from '../errors/redis-store-error.js';
export type {
  Corkable,
  IoredisLike,
  NodeRedisLike,
  NodeRedisScriptOptions,
  RedisScriptClient,
  ScriptArgument,
} from './redis-client.js';
export { ioredisClient, nodeRedisClient } from './redis-client.js';
export type { OverridesRefresh, RedisOverridesOptions } from './redis-overrides.js';
export { RedisOverrides } from './redis-overrides.js';
export type { RedisSeenStoreOptions } from './redis-seen-store.js';
export { redisSeenStore } from './redis-seen-store.js';
export { RedisStore } from './redis-store.js';
export type { RedisStoreOptions, Timer } from './store-options.js';
// The scripts and the state layout are internal: documented in docs/redis-store.md.
