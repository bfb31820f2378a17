/** The options of {@link RedisStore}, their rules and defaults. @module */
import { randomInt } from 'node:crypto';
import type { RedisStoreError } from '../errors/redis-store-error.js';
import { LONE_SURROGATE } from '../internal/lone-surrogate.js';
import {
  aFunction,
  INVALID,
  invalidValue,
  oneOf,
  type Rule,
  readOptions,
  refused,
  wholeNumber,
  withMethods,
  worded,
} from '../internal/options.js';
import { readSafely } from '../internal/read-once.js';
import { MAX_TIMER_MS } from '../internal/timers.js';
import type { RedisScriptClient } from './redis-client.js';

/** Starts and cancels the per-operation timeout; injectable so that tests control it. */
export interface Timer {
  /** Call `callback` after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown;
  /** Cancel a timeout started by `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The client, through an adapter: `ioredisClient(redis)` or `nodeRedisClient(redis)`. */
  client: RedisScriptClient;
  /**
   * Prefix of every key. Must not contain `{` or `}` (the hash tag follows it), nor a lone
   * surrogate (UTF-8 writes every one as U+FFFD, so two such prefixes would share every key).
   * @defaultValue `'limits:'`
   */
  prefix?: string;
  /**
   * Where a decision's time comes from: `'redis'`, the server's `TIME` (one timeline for every app
   * server), or `'clock'`, the limiter's injected clock.
   * @defaultValue `'redis'`
   */
  timeSource?: 'redis' | 'clock';
  /**
   * Milliseconds to wait for Redis before reporting an outage, 1 to 2^31 - 1. A throttle decision
   * Redis runs after its timeout gives its lease back: the caller was given none.
   * @defaultValue 100
   */
  timeoutMs?: number;
  /** Called with every failure (a failing decision also rejects); its throws are ignored. */
  onError?: (error: RedisStoreError) => void;
  /**
   * Milliseconds a key outlives its state, covering the gap between the caller's clock and Redis's
   * expiry clock with `timeSource: 'clock'`.
   * @defaultValue 1000
   */
  expiryMarginMs?: number;
  /** The timeout source. @defaultValue the global `setTimeout` and `clearTimeout` */
  timer?: Timer;
  /**
   * This store's part of every lease id (times 2^21, plus a counter), 1 to 2^32 - 1; two stores
   * must not share it, as leases are told apart by expiry and id together.
   * @defaultValue a random whole number below 2^32
   */
  instanceId?: number;
  /**
   * The most decisions sent in one script call, 1 to 1024 (batching is described in
   * docs/redis-store.md); 1, or Redis Cluster, sends each decision alone.
   * @defaultValue 32
   */
  maxBatch?: number;
}

/** The most decisions in one script call. */
export const MAX_BATCH_DECISIONS = 1_024;

/** Lease ids: the instance's part times this, plus a counter below it. */
export const LEASE_COUNTER = 2 ** 21;

const defaultTimer: Timer = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** The rule of a key prefix, shared by the store and the overrides. */
export const keyPrefix: Rule<string> = {
  expected: 'a string without { or } (the hash tag follows it) and without lone surrogates',
  read: (value) =>
    typeof value === 'string' && !/[{}]/.test(value) && !LONE_SURROGATE.test(value)
      ? value
      : INVALID,
};

/** The `client` option of the Redis store and the Redis overrides source. @internal */
export const aScriptClient = worded(
  withMethods<RedisScriptClient>(['evalSha', 'eval'], 'a RedisScriptClient'),
  'a RedisScriptClient with evalSha() and eval(), such as ioredisClient(redis) or nodeRedisClient(redis)',
  'invalid_redis_client',
);

const RULES = {
  client: aScriptClient,
  prefix: keyPrefix,
  timeSource: oneOf('redis', 'clock'),
  timeoutMs: wholeNumber(1, MAX_TIMER_MS),
  onError: aFunction<(error: RedisStoreError) => void>('takes a RedisStoreError'),
  expiryMarginMs: wholeNumber(0),
  timer: withMethods<Timer>(['setTimeout', 'clearTimeout'], 'a Timer'),
  instanceId: wholeNumber(1, 2 ** 32 - 1),
  maxBatch: wholeNumber(1, MAX_BATCH_DECISIONS),
};

// What an outage does is no longer the store's to decide: these name where it is decided now.
const REMOVED_OPTIONS: Readonly<Record<string, string>> = {
  failMode:
    "left out, as RedisStore has no option failMode any more: the store reports an outage (apply rejects with a RedisStoreError) and never decides it; decide in one place, the middleware's failure option ('open' or 'closed', a 503) or createLimiter's outage option ('open', 'closed', 'fallback' or 'reject')",
  failClosedRetryAfterSeconds:
    "left out, as RedisStore has no option failClosedRetryAfterSeconds any more: set the Retry-After of an outage where it is decided, createLimiter's outageRetryAfterSeconds (with outage: 'closed') or the middleware's failureRetryAfterSeconds (with failure: 'closed')",
};

/** The store's options as read. */
export type StoreSettings = ReturnType<typeof readStoreSettings>;

/**
 * Read the options of a {@link RedisStore}, each key once.
 * @param options - the options as given
 * @throws ConfigurationError `invalid_redis_client` for a missing or unusable client,
 *   `invalid_option` for any other mistake
 */
export function readStoreSettings(options: unknown) {
  refuseRemovedOptions(options);
  const read = readOptions(options, 'RedisStore', RULES, {
    required: true,
    example: '{ client: ioredisClient(redis) }',
    defaults: {
      prefix: 'limits:',
      timeSource: 'redis',
      timeoutMs: 100,
      expiryMarginMs: 1_000,
      timer: defaultTimer,
      instanceId: randomInt(1, 2 ** 32),
      maxBatch: 32,
    },
  });
  const { client } = read;
  if (client === undefined) throw invalidValue(RULES.client, client, 'client');
  return { ...read, client };
}

function refuseRemovedOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) return;
  for (const [name, expected] of Object.entries(REMOVED_OPTIONS)) {
    let given: boolean;
    try {
      given = Object.hasOwn(options, name);
    } catch {
      return; // readOptions reports options that cannot be read.
    }
    if (given) throw refused(name, expected, readSafely(options, name));
  }
}
