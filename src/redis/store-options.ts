/**
 * The options of {@link RedisStore}: their type, their rules and defaults, read once through the
 * one options reader.
 * @module
 */
import { randomInt } from 'node:crypto';
import { ConfigurationError } from '../errors/index.js';
import type { RedisStoreError } from '../errors/redis-store-error.js';
import { LONE_SURROGATE } from '../internal/lone-surrogate.js';
import {
  aFunction,
  INVALID,
  invalidValue,
  oneOf,
  type Rule,
  readOptions,
  wholeNumber,
  withMethods,
  worded,
} from '../internal/options.js';
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
   * Where the time of a decision comes from: `'redis'`, the server's `TIME` (one timeline for every
   * app server), or `'clock'`, the time the limiter passes (its injected clock; tests use a
   * `FakeClock` to compare with the memory store).
   * @defaultValue `'redis'`
   */
  timeSource?: 'redis' | 'clock';
  /**
   * Milliseconds to wait for Redis to decide or release before reporting an outage: a whole number
   * from 1 to 2^31 - 1 (the longest a timer waits). A throttle decision that Redis runs after its
   * timeout gives back the lease it took: the caller was given none.
   * @defaultValue 100
   */
  timeoutMs?: number;
  /**
   * Called with every failure (a decision that fails also rejects with it). Log it; an exception
   * thrown here is ignored.
   */
  onError?: (error: RedisStoreError) => void;
  /**
   * Milliseconds a key outlives the instant its state is fresh again. Covers the gap between the
   * caller's clock and Redis's expiry clock with `timeSource: 'clock'`.
   * @defaultValue 1000
   */
  expiryMarginMs?: number;
  /** The timeout source. @defaultValue the global `setTimeout` and `clearTimeout` */
  timer?: Timer;
  /**
   * This store's part of every lease id, unique per store instance: a whole number from 1 to
   * 2^32 - 1; ids are this number times 2^21 plus a counter (modulo 2^21), exact below 2^53. Two
   * leases of one throttle are told apart by their expiry and id together, so two stores must not
   * share it.
   * @defaultValue a random whole number below 2^32
   */
  instanceId?: number;
  /**
   * The most decisions sent in one script call, 1 to 1024. While decisions are in Redis, the
   * next ones asked in the same turn of the event loop, for plans of one shape, go together, up
   * to as many as are in Redis already and at most this many: each is still decided atomically,
   * in the order asked, after the leases given back before it, and gets its own outcome. A
   * decision that finds none in Redis goes at once, alone. A failure or a timeout of a call is an
   * outage for each of its decisions. 1 sends every decision in a script call of its own.
   * Outside Redis Cluster only (see {@link RedisScriptClient.cluster}): there every decision goes
   * alone.
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

// The hash tag follows the prefix, so a brace would end it early; UTF-8 writes a lone surrogate as
// U+FFFD, so two such prefixes would share every key.
const keyPrefix: Rule<string> = {
  expected: 'a string without { or } (the hash tag follows it) and without lone surrogates',
  read: (value) =>
    typeof value === 'string' && !/[{}]/.test(value) && !LONE_SURROGATE.test(value)
      ? value
      : INVALID,
};

const RULES = {
  client: worded(
    withMethods<RedisScriptClient>(['evalSha', 'eval'], 'a RedisScriptClient'),
    'a RedisScriptClient with evalSha() and eval(), such as ioredisClient(redis) or nodeRedisClient(redis)',
    'invalid_redis_client',
  ),
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
    "RedisStore has no option failMode any more: the store reports an outage (apply rejects with a RedisStoreError) and never decides it. Decide in one place: the middleware's failure option ('open' or 'closed', a 503) or createLimiter's outage option ('open', 'closed', 'fallback' or 'reject').",
  failClosedRetryAfterSeconds:
    "RedisStore has no option failClosedRetryAfterSeconds any more: set the Retry-After of an outage where it is decided, createLimiter's outageRetryAfterSeconds (with outage: 'closed') or the middleware's failureRetryAfterSeconds (with failure: 'closed').",
};

/** The store's options as read: every default applied, the client present. */
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

/** Refuse an option that was removed, saying what replaces it. */
function refuseRemovedOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) return;
  for (const [name, message] of Object.entries(REMOVED_OPTIONS)) {
    let given: boolean;
    try {
      given = Object.hasOwn(options, name);
    } catch {
      return; // readOptions reports options that cannot be read.
    }
    if (given) throw new ConfigurationError('invalid_option', message);
  }
}
