/**
 * Running the store's scripts: `EVALSHA`, then `EVAL` when the server has lost its script cache,
 * under the store's timeout; failures as {@link RedisStoreError}s, reported to `onError`.
 * @module
 */
import { createHash } from 'node:crypto';
import { RedisStoreError, type RedisStoreErrorCode } from '../errors/redis-store-error.js';
import { describe } from '../internal/describe.js';
import type { RedisScriptClient, ScriptArgument } from './redis-client.js';
import type { Timer } from './store-options.js';

/** A script and its SHA-1. */
export interface Script {
  readonly text: string;
  readonly sha1: string;
}

/** A script with its SHA-1, for `EVALSHA`. */
export function script(text: string): Script {
  return { text, sha1: createHash('sha1').update(text).digest('hex') };
}

/** What a script call rejects with when Redis does not answer in time. */
export const TIMEOUT = Symbol('timeout');

/** Redis Cluster's answer to a command whose keys are not all in one slot. */
export function isCrossSlot(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('CROSSSLOT');
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** The store's error for a failed script call. */
export function toStoreError(
  operation: 'apply' | 'release' | 'reset',
  error: unknown,
): RedisStoreError {
  if (error instanceof RedisStoreError) return error;
  const [code, message]: [RedisStoreErrorCode, string] =
    error === TIMEOUT
      ? ['redis_timeout', `Redis did not answer the ${operation} script in time.`]
      : [
          'redis_command_failed',
          `The ${operation} script failed: ${error instanceof Error ? error.message : describe(error)}`,
        ];
  return new RedisStoreError(
    code,
    operation,
    message,
    error === TIMEOUT ? undefined : { cause: error },
  );
}

/** The client, what it can do, and how its scripts are run, timed and reported. */
export class ScriptRunner {
  readonly client: RedisScriptClient;
  /** Whether the decision scripts reply in bytes (see {@link RedisScriptClient.binaryReplies}). */
  readonly binaryReplies: boolean;
  /** Whether lease ids and given-back leases go as bytes ({@link RedisScriptClient.binaryArguments}). */
  readonly binaryArguments: boolean;
  /** Whether the keys of two clients may not meet in one command: every release goes alone. */
  separate: boolean;
  readonly #timer: Timer;
  readonly #timeoutMs: number;
  readonly #onError: ((error: RedisStoreError) => void) | undefined;

  constructor(settings: {
    client: RedisScriptClient;
    timer: Timer;
    timeoutMs: number;
    onError: ((error: RedisStoreError) => void) | undefined;
  }) {
    const { client } = settings;
    this.client = client;
    this.binaryReplies = client.binaryReplies === true;
    this.binaryArguments = client.binaryArguments === true;
    this.separate = client.cluster !== false;
    this.#timer = settings.timer;
    this.#timeoutMs = settings.timeoutMs;
    this.#onError = settings.onError;
  }

  /**
   * EVALSHA, then EVAL when the server does not have the script (restart, failover, SCRIPT FLUSH).
   * Rejects with {@link TIMEOUT} after the timeout; a reply that comes later goes to `late`.
   */
  run(
    s: Script,
    keys: readonly string[],
    args: readonly ScriptArgument[],
    late?: (value: unknown) => void,
  ): Promise<unknown> {
    const client = this.client;
    const call = client.evalSha(s.sha1, keys, args).catch((error: unknown) => {
      if (isNoScript(error)) return client.eval(s.text, keys, args);
      throw error;
    });
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const handle = this.#timer.setTimeout(() => {
        timedOut = true;
        reject(TIMEOUT);
      }, this.#timeoutMs);
      call.then(
        (value) => {
          this.#timer.clearTimeout(handle);
          if (timedOut) late?.(value);
          else resolve(value);
        },
        (error: unknown) => {
          this.#timer.clearTimeout(handle);
          reject(error);
        },
      );
    });
  }

  /** Hand a failure to `onError`. */
  report(error: RedisStoreError): void {
    try {
      this.#onError?.(error);
    } catch {
      // A failing logger must not turn a decision into a crash.
    }
  }
}
