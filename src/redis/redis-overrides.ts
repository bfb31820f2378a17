/**
 * Overrides held in Redis and seen by every instance: each instance keeps the whole table in
 * memory for its decisions and refreshes it every `refreshMs` (docs/redis.md, "Overrides across
 * instances").
 * @module
 */
import { randomBytes } from 'node:crypto';
import { aClock, type Clock, systemClock } from '../clock.js';
import {
  RedisOverridesError,
  type RedisOverridesErrorCode,
} from '../errors/redis-overrides-error.js';
import { describe } from '../internal/describe.js';
import { aFunction, invalidValue, readOptions, wholeNumber } from '../internal/options.js';
import { MAX_TIMER_MS } from '../internal/timers.js';
import {
  type LimitOverride,
  type OverrideEntry,
  type OverrideSource,
  OverrideTable,
  type OverrideTarget,
  overrideEntry,
  overrideTarget,
  presetsByName,
} from '../limits/overrides.js';
import type { LimitPreset } from '../limits/presets.js';
import {
  deleteScript,
  overrideField,
  overridesKey,
  overrideValue,
  refreshScript,
  setScript,
  VERSION_FIELD,
} from './overrides-scripts.js';
import type { RedisScriptClient } from './redis-client.js';
import { type Script, ScriptRunner, TIMEOUT } from './script-runner.js';
import { aScriptClient, keyPrefix, type Timer } from './store-options.js';

/** Options of {@link RedisOverrides}. */
export interface RedisOverridesOptions {
  /** The client, through an adapter: `ioredisClient(redis)` or `nodeRedisClient(redis)`. */
  client: RedisScriptClient;
  /**
   * Prefix of the one key written, `<prefix>overrides`; the store's prefix may be the same (no
   * store key has that name). No `{`, `}` or lone surrogate, as for the store.
   * @defaultValue `'limits:'`
   */
  prefix?: string;
  /**
   * The presets an override may name, by name. Every instance should have the same: an entry
   * naming a preset this process does not have is skipped and reported.
   * @defaultValue none: only multipliers
   */
  presets?: Readonly<Record<string, LimitPreset>>;
  /** The time an expiry is checked against when set. @defaultValue {@link systemClock} */
  clock?: Clock;
  /**
   * Milliseconds between two refreshes, 10 to 1000: a change made on another instance is applied
   * here at most this long (plus one round trip) after it was made.
   * @defaultValue 250
   */
  refreshMs?: number;
  /** Milliseconds to wait for Redis before a refresh, set or delete fails, 1 to 2^31 - 1. @defaultValue 1000 */
  timeoutMs?: number;
  /**
   * Told of every failure: a refresh that failed (the table held stays in force), a set or
   * delete that failed (which also rejects), an entry skipped. Its throws are ignored.
   * @defaultValue one line on `console.error` when refreshes start failing, and one per entry
   *   skipped
   */
  onError?: (error: RedisOverridesError) => void;
  /** Told of every refresh that completed, for metrics and health checks. Its throws are ignored. */
  onRefresh?: (refresh: OverridesRefresh) => void;
}

/** A refresh that completed. */
export interface OverridesRefresh {
  /** Whether the overrides had changed since the last refresh: the table was read whole again. */
  readonly changed: boolean;
  /** Overrides held after it, expired ones not yet met included. */
  readonly size: number;
}

const RULES = {
  client: aScriptClient,
  prefix: keyPrefix,
  presets: presetsByName,
  clock: aClock,
  refreshMs: wholeNumber(10, 1_000),
  timeoutMs: wholeNumber(1, MAX_TIMER_MS),
  onError: aFunction<(error: RedisOverridesError) => void>('takes a RedisOverridesError'),
  onRefresh: aFunction<(refresh: OverridesRefresh) => void>('takes an OverridesRefresh'),
};

const TIMER: Timer = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

const noop = (): void => undefined;

/** A write of this process applied to its table while a refresh was under way. */
type LocalWrite = readonly [clientId: string, accountCode: string | undefined, OverrideEntry?];

/**
 * Overrides kept in Redis, for every instance of a service: a set or delete on any instance is
 * applied by every other one at its next refresh (every `refreshMs`, 250 ms by default, at most a
 * second), and at once by the instance that made it. Decisions read the table this process holds,
 * without I/O; while Redis cannot be reached the last table read stays in force.
 * @example
 * ```ts
 * const client = ioredisClient(redis);
 * const overrides = new RedisOverrides({ client, presets: presets.byAccountType });
 * await overrides.ready();
 * const limiter = createLimiter({
 *   preset: presets.byAccountType,
 *   store: new RedisStore({ client }),
 *   overrides,
 * });
 * // On any instance: every instance decides with twice the limits within a second.
 * await overrides.set({ clientId: 'client-1' }, { multiplier: 2, expiresAt: Date.now() + 86_400_000 });
 * await overrides.delete({ clientId: 'client-1' });
 * // At shutdown:
 * await overrides.close();
 * ```
 */
export class RedisOverrides implements OverrideSource {
  #table = new OverrideTable();
  readonly #presets: ReadonlyMap<string, LimitPreset>;
  readonly #clock: Clock;
  readonly #runner: ScriptRunner;
  readonly #key: string;
  readonly #onError: ((error: RedisOverridesError) => void) | undefined;
  readonly #onRefresh: ((refresh: OverridesRefresh) => void) | undefined;
  readonly #timer: ReturnType<typeof setInterval>;
  /** The version of the table held; undefined: read the whole hash next time. */
  #version: string | undefined;
  #loaded = false;
  #closed = false;
  #failing = false;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  /** This process's writes since the refresh under way was sent; undefined when none is. */
  #writes: LocalWrite[] | undefined;
  /** The entries skipped at the last full read (field and value): each is reported once. */
  #skipped = new Set<string>();

  /**
   * Starts the refresh timer (which never keeps the process alive); call
   * {@link RedisOverrides.ready} for the first load, {@link RedisOverrides.close} to stop.
   * @param options - the client, and optionally the prefix, presets, clock, refresh interval,
   *   timeout and listeners
   * @throws ConfigurationError `invalid_redis_client` for a missing or unusable client,
   *   `invalid_option` for any other mistake (an unknown key, a `refreshMs` outside 10 to 1000)
   */
  constructor(options: RedisOverridesOptions) {
    const read = readOptions(options, 'RedisOverrides', RULES, {
      required: true,
      example: '{ client: ioredisClient(redis) }',
      defaults: { prefix: 'limits:', clock: systemClock, refreshMs: 250, timeoutMs: 1_000 },
    });
    const { client } = read;
    if (client === undefined) throw invalidValue(RULES.client, client, 'client');
    this.#presets = read.presets ?? new Map();
    this.#clock = read.clock;
    this.#key = overridesKey(read.prefix);
    this.#onError = read.onError;
    this.#onRefresh = read.onRefresh;
    this.#runner = new ScriptRunner({
      client,
      timer: TIMER,
      timeoutMs: read.timeoutMs,
      onError: undefined,
    });
    this.#timer = setInterval(() => this.#tick(), read.refreshMs);
    this.#timer.unref?.();
  }

  /**
   * Load the overrides, unless a load has already succeeded. Await it before serving: until then
   * no override applies.
   * @throws RedisOverridesError when this load fails (the timer keeps trying)
   */
  ready(): Promise<void> {
    return this.#loaded ? Promise.resolve() : this.refresh();
  }

  /**
   * Read the overrides now, as the timer does: the version, and the whole hash when it changed. A
   * refresh under way is waited for, then another is made, so that it sees every change made
   * before the call. After {@link RedisOverrides.close}, does nothing.
   * @throws RedisOverridesError when Redis fails or times out; the table held stays in force
   */
  refresh(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const running = this.#running;
    if (running === undefined) return this.#start();
    this.#queued ??= running.then(noop, noop).then(() => {
      this.#queued = undefined;
      return this.#start();
    });
    return this.#queued;
  }

  /**
   * Set the override of a client (every account) or of one account in Redis, replacing the one it
   * had; applied here when Redis answers, on other instances at their next refresh. Overrides
   * expired by then are removed from Redis in the same script.
   * @param target - `{ clientId }` or `{ clientId, accountCode }`
   * @param override - `{ preset }` or `{ multiplier }`, and optionally `expiresAt`
   * @returns the override as held
   * @throws InvalidRequestError `invalid_client_id` / `invalid_account_code` for an empty or
   *   overlong id (before Redis is asked)
   * @throws ConfigurationError `invalid_override` for an override without exactly one of a preset
   *   and a multiplier (above 0, at most 1000) or with an expiry that has passed; `unknown_preset`
   *   for a preset this source does not have (before Redis is asked)
   * @throws RedisOverridesError when Redis fails or times out: the override may or may not be
   *   written, a refresh tells
   */
  async set(target: OverrideTarget, override: LimitOverride): Promise<OverrideEntry> {
    const now = this.#clock.now();
    const entry = overrideEntry(target, override, this.#presets, now);
    const field = overrideField(entry.clientId, entry.accountCode);
    await this.#write('set', setScript, [field, overrideValue(entry), newVersion(), String(now)]);
    this.#apply([entry.clientId, entry.accountCode, entry]);
    return entry;
  }

  /**
   * Remove the override of a client (its own, for every account) or of one account, in Redis and
   * here; other instances drop it at their next refresh.
   * @returns whether Redis had one
   * @throws InvalidRequestError for a target whose ids a request could not have
   * @throws RedisOverridesError when Redis fails or times out
   */
  async delete(target: OverrideTarget): Promise<boolean> {
    const { clientId, accountCode } = overrideTarget(target);
    const field = overrideField(clientId, accountCode);
    const removed = await this.#write('delete', deleteScript, [field, newVersion()]);
    this.#apply([clientId, accountCode]);
    return Number(removed) === 1;
  }

  /**
   * The override held for exactly this target (an account's own, or the client's), expired or not.
   * @throws InvalidRequestError for a target whose ids a request could not have
   */
  get(target: OverrideTarget): OverrideEntry | undefined {
    const { clientId, accountCode } = overrideTarget(target);
    return this.#table.get(clientId, accountCode);
  }

  /** Every override held, expired ones not yet met included. */
  list(): OverrideEntry[] {
    return [...this.#table.entries()];
  }

  /**
   * The override in force for a client and account at `now`: the account's own, else the
   * client's; undefined for none or an expired one. From the table held, without I/O.
   * @param clientId - a checked client id
   * @param accountCode - a checked account code
   * @param now - the limiter's clock reading (ms)
   */
  lookup(clientId: string, accountCode: string, now: number): OverrideEntry | undefined {
    return this.#table.lookup(clientId, accountCode, now);
  }

  /** The preset named `name` among the `presets` option, for an override that names one. */
  preset(name: string): LimitPreset | undefined {
    return this.#presets.get(name);
  }

  /**
   * Stop the timer and wait for a refresh under way; the table held stays in force, unchanged.
   * The client is the caller's to close.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#running?.catch(noop);
  }

  #tick(): void {
    if (this.#running === undefined) this.refresh().catch(noop);
  }

  #start(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const run = this.#load().finally(() => {
      this.#writes = undefined;
      if (this.#running === run) this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  async #load(): Promise<void> {
    this.#writes = [];
    let reply: unknown;
    try {
      reply = await this.#runner.run(refreshScript, [this.#key], [this.#version ?? '']);
    } catch (error) {
      throw this.#refreshFailed(failure('refresh', error));
    }
    const changed = typeof reply !== 'string' && !Buffer.isBuffer(reply);
    if (changed) {
      const pairs = textPairs(reply);
      if (pairs === undefined) {
        throw this.#refreshFailed(
          new RedisOverridesError(
            'redis_bad_reply',
            'refresh',
            `The overrides read from Redis are not a hash's fields and values, got ${describe(reply)}.`,
          ),
        );
      }
      this.#replace(pairs);
    }
    this.#loaded = true;
    this.#failing = false;
    try {
      this.#onRefresh?.({ changed, size: this.#table.size });
    } catch {
      // A failing listener must not stop the refreshes.
    }
  }

  /** Hold the hash just read, with this process's writes made meanwhile. */
  #replace(pairs: readonly string[]): void {
    const table = new OverrideTable();
    const skipped = new Set<string>();
    let version: string | undefined;
    for (let i = 0; i < pairs.length; i += 2) {
      const field = pairs[i]!;
      const value = pairs[i + 1]!;
      if (field === VERSION_FIELD) {
        version = value;
        continue;
      }
      const entry = this.#entryOf(field, value);
      if (entry instanceof RedisOverridesError) {
        const seen = `${field}\n${value}`;
        skipped.add(seen);
        if (!this.#skipped.has(seen)) this.#report(entry, true);
      } else table.set(entry);
    }
    this.#skipped = skipped;
    // A write of this process answered while the hash was read may be missing from what was read,
    // or older than it: keep the write, and read the whole hash again next time.
    const writes = this.#writes ?? [];
    for (const write of writes) applyTo(table, write);
    this.#table = table;
    this.#version = writes.length === 0 ? version : undefined;
  }

  /** The entry at `field`, checked as `set` checks one; or why it is skipped. */
  #entryOf(field: string, value: string): OverrideEntry | RedisOverridesError {
    try {
      const ids: unknown = JSON.parse(field);
      if (
        !Array.isArray(ids) ||
        ids.length < 1 ||
        ids.length > 2 ||
        JSON.stringify(ids) !== field
      ) {
        throw new Error(`its field is not ["clientId"] or ["clientId","accountCode"] in JSON.`);
      }
      const target = { clientId: ids[0] as string, accountCode: ids[1] as string | undefined };
      const override = JSON.parse(value) as LimitOverride;
      // Any expiry reads: an expired entry is held, and skipped by lookup as in every source.
      return overrideEntry(target, override, this.#presets, -1);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : describe(cause);
      return new RedisOverridesError(
        'invalid_stored_override',
        'refresh',
        `The override at field ${describe(field)} of ${this.#key} is skipped: ${reason} Write a field such as ["client-1"] or ["client-1","ACME"] with a value such as {"multiplier":2} or {"preset":"live"} (RedisOverrides.set does), or remove it with HDEL.`,
        { cause, field },
      );
    }
  }

  async #write(operation: 'set' | 'delete', s: Script, args: readonly string[]): Promise<unknown> {
    try {
      return await this.#runner.run(s, [this.#key], args);
    } catch (error) {
      const failed = failure(operation, error);
      this.#report(failed, false);
      throw failed;
    }
  }

  #apply(write: LocalWrite): void {
    applyTo(this.#table, write);
    this.#writes?.push(write);
  }

  #refreshFailed(error: RedisOverridesError): RedisOverridesError {
    const first = !this.#failing;
    this.#failing = true;
    this.#report(error, first);
    return error;
  }

  /** Hand a failure to `onError`; without one, log it when `log`. */
  #report(error: RedisOverridesError, log: boolean): void {
    if (this.#onError === undefined) {
      if (log) console.error(`RedisOverrides: ${error.message}`);
      return;
    }
    try {
      this.#onError(error);
    } catch {
      // A failing listener must not stop the refreshes.
    }
  }
}

function applyTo(table: OverrideTable, [clientId, accountCode, entry]: LocalWrite): void {
  if (entry === undefined) table.delete(clientId, accountCode);
  else table.set(entry);
}

/** A fresh version: random, so that a hash emptied and written again never repeats one. */
function newVersion(): string {
  return randomBytes(8).toString('hex');
}

/** The fields and values of an `HGETALL` reply, as text; undefined for any other reply. */
function textPairs(reply: unknown): string[] | undefined {
  if (!Array.isArray(reply) || reply.length % 2 !== 0) return undefined;
  const pairs: string[] = [];
  for (const item of reply) {
    if (typeof item === 'string') pairs.push(item);
    else if (Buffer.isBuffer(item)) pairs.push(item.toString('utf8'));
    else return undefined;
  }
  return pairs;
}

function failure(operation: 'refresh' | 'set' | 'delete', error: unknown): RedisOverridesError {
  const [code, message]: [RedisOverridesErrorCode, string] =
    error === TIMEOUT
      ? ['redis_timeout', `Redis did not answer the overrides ${operation} in time.`]
      : [
          'redis_command_failed',
          `The overrides ${operation} failed: ${error instanceof Error ? error.message : describe(error)}`,
        ];
  return new RedisOverridesError(
    code,
    operation,
    message,
    error === TIMEOUT ? undefined : { cause: error },
  );
}
