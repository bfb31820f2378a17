/**
 * The seen-store of a webhook receiver: which message ids were handled, and which are being
 * handled now, claimed atomically so that two deliveries of one id never both run the handler.
 * The contract, and the memory store. @module
 */
import { aClock, type Clock, systemClock } from '../../clock.js';
import { setBounded } from '../../internal/bounded-map.js';
import { readOptions, wholeNumber } from '../../internal/options.js';

/**
 * What a claim found: `claimed` (this caller handles the id now), `handled` (handled before,
 * within its time to live), `pending` (another caller holds a claim on it now).
 */
export type WebhookClaim = 'claimed' | 'handled' | 'pending';

/**
 * Where a receiver keeps the ids it handled. `claim` must be atomic: of two claims of one id at
 * once, one gets `claimed` and the other `pending`. {@link memorySeenStore} holds them in the
 * process; `redisSeenStore` from `api-conventions/redis` across instances.
 */
export interface WebhookSeenStore {
  /**
   * Claim an id for `claimMs`: `claimed` when neither a claim nor a handled mark holds it, else
   * what holds it. A claim neither completed nor released lapses after `claimMs`.
   */
  claim(id: string, claimMs: number): WebhookClaim | Promise<WebhookClaim>;
  /** Mark a claimed id handled, for `ttlMs`: claims within that time find it `handled`. */
  complete(id: string, ttlMs: number): void | Promise<void>;
  /** Give a claim back (the handler failed), so that a retry of the id can claim it. */
  release(id: string): void | Promise<void>;
}

/** Options of {@link memorySeenStore}. */
export interface MemorySeenStoreOptions {
  /**
   * The most ids held; past it the oldest is forgotten first (a duplicate of a forgotten id is
   * handled again).
   * @defaultValue 100000
   */
  maxIds?: number | undefined;
  /** The clock of the claims' and marks' ends. @defaultValue {@link systemClock} */
  clock?: Clock | undefined;
}

/** The defaults of {@link memorySeenStore}. */
export const memorySeenStoreDefaults: {
  /** The most ids held. */
  readonly maxIds: 100_000;
} = { maxIds: 100_000 };

const RULES = { maxIds: wholeNumber(1), clock: aClock };
// Ended entries looked at per call, from the oldest: memory is reclaimed as the store is used,
// with no timer of its own.
const SWEEP_STEPS = 8;

interface Entry {
  readonly handled: boolean;
  readonly until: number;
}

/**
 * A seen-store in the process's memory, for one instance: bounded by `maxIds`, its ended entries
 * dropped as it is used (no timer). Behind a load balancer over several instances, use
 * `redisSeenStore`.
 * @throws ConfigurationError `invalid_option` for a bad `maxIds` or `clock`
 * @example
 * ```ts
 * const seen = memorySeenStore({ maxIds: 10_000 });
 * ```
 */
export function memorySeenStore(options?: MemorySeenStoreOptions): WebhookSeenStore {
  const { maxIds, clock } = readOptions(options, 'memorySeenStore', RULES, {
    defaults: { ...memorySeenStoreDefaults, clock: systemClock },
  });
  // Insertion order is the order of the last write: the oldest entries come first.
  const entries = new Map<string, Entry>();
  const put = (id: string, entry: Entry): void => setBounded(entries, id, entry, maxIds);
  const sweep = (now: number): void => {
    let steps = 0;
    for (const [id, entry] of entries) {
      if (++steps > SWEEP_STEPS) return;
      if (entry.until <= now) entries.delete(id);
    }
  };
  return {
    claim(id, claimMs) {
      const now = clock.now();
      sweep(now);
      const entry = entries.get(id);
      if (entry !== undefined && entry.until > now) return entry.handled ? 'handled' : 'pending';
      put(id, { handled: false, until: now + claimMs });
      return 'claimed';
    },
    complete(id, ttlMs) {
      put(id, { handled: true, until: clock.now() + ttlMs });
    },
    release(id) {
      if (entries.get(id)?.handled === false) entries.delete(id);
    },
  };
}
