/**
 * The options of `createLimiter`, read once through the one options reader.
 * @module
 */
import { aClock, systemClock } from '../clock.js';
import {
  aFunction,
  anything,
  INVALID,
  oneOf,
  type Rule,
  readOptions,
  unreadable,
  wholeNumber,
  withMethods,
} from '../internal/options.js';
import { MemoryStore } from './memory/store.js';
import { defaultOutageReport, type OutageEvent } from './outage.js';
import type { OverrideSource } from './overrides.js';
import { aShadowOption } from './shadow.js';
import type { LimitStore, SyncLimitStore } from './store.js';

const aStore = withMethods<LimitStore>(['apply', 'release'], 'a LimitStore');

const syncStore = withMethods<SyncLimitStore>(
  ['apply', 'release'],
  'a synchronous store (a MemoryStore)',
);

// The fallback decides at once while the store is away: it must answer synchronously.
const aFallbackStore: Rule<SyncLimitStore> = {
  expected: syncStore.expected,
  read(value, name) {
    const store = syncStore.read(value, name);
    if (store === INVALID) return INVALID;
    let synchronous: unknown;
    try {
      ({ synchronous } = store);
    } catch (cause) {
      throw unreadable(name, syncStore.expected, store, cause);
    }
    return synchronous === true ? store : INVALID;
  },
};

const LIMITER_RULES = {
  preset: anything('a LimitPreset or presets by account type'),
  policies: anything('a list of policies or a function that picks one'),
  defaultAccountType: anything('an account type'),
  store: aStore,
  clock: aClock,
  maxIdLength: wholeNumber(),
  outage: oneOf('reject', 'open', 'closed', 'fallback'),
  fallbackStore: aFallbackStore,
  outageRetryAfterSeconds: wholeNumber(),
  onOutage: aFunction<(event: OutageEvent) => void>('takes an OutageEvent'),
  shadow: aShadowOption,
  overrides: withMethods<OverrideSource>(
    ['lookup', 'preset'],
    'an OverrideSource (a MemoryOverrides or a RedisOverrides)',
  ),
};

/**
 * The options of `createLimiter`, each read once; the limits (`preset`, `policies`,
 * `defaultAccountType`) are read on by the policy selector.
 * @throws ConfigurationError `invalid_option` naming the option
 * @internal
 */
export function readLimiterOptions(options: unknown) {
  const read = readOptions(options, 'createLimiter', LIMITER_RULES, {
    required: true,
    defaults: {
      clock: systemClock,
      maxIdLength: 256,
      outage: 'reject',
      outageRetryAfterSeconds: 1,
      onOutage: defaultOutageReport,
    },
  });
  return { ...read, store: read.store ?? new MemoryStore() };
}

/** The options of `createLimiter` once read. @internal */
export type LimiterConfig = ReturnType<typeof readLimiterOptions>;
