/**
 * The specification's limits as presets (section "Limits"); the throttle's defaults are ours
 * (docs/limits.md).
 * @module
 */
import { anything, readOptions } from '../internal/options.js';
import { aDuration, type Duration } from './duration.js';
import { type LimitRule, rulesOfExemptions, rulesOfRows } from './limit-rule.js';
import {
  type ConcurrencyPolicy,
  concurrency,
  limitCount,
  type Policy,
  rate,
  window,
} from './policy.js';
import {
  developmentResourceLimits,
  liveResourceLimits,
  liveThrottleExemptRoutes,
  type ResourceLimitRow,
} from './resource-tables.js';

/** The account types the specification names. */
export type AccountType = 'live' | 'development' | 'trial';

/** A named set of limits: policies per client and account, and route rules. Plain data. */
export interface LimitPreset {
  /** Account type or your own label; used in configuration error messages. */
  readonly name: string;
  /** Every policy counted per client and account, the throttle included. */
  readonly policies: readonly Policy[];
  /** Per-resource limits and exemptions. @defaultValue none */
  readonly rules?: readonly LimitRule[];
}

/** Options of the preset factories. */
export interface PresetOptions {
  /** Requests in flight at once per client and account. @defaultValue 20 (Live), 5 (Development, Trial) */
  concurrency?: number;
  /** Lease time-to-live of the throttle. @defaultValue `'60s'` */
  leaseTtl?: Duration;
  /**
   * Per-resource limit rows. @defaultValue the specification's table for the account type
   * (`liveResourceLimits` or `developmentResourceLimits`); `[]` for none
   */
  resourceLimits?: readonly ResourceLimitRow[];
  /**
   * Routes exempt from the throttle. @defaultValue `liveThrottleExemptRoutes` on Live; none on
   * Development and Trial, where "all endpoints are throttled, with no exceptions"
   */
  throttleExemptRoutes?: readonly string[];
}

/** Default throttle for Live: 20 in flight (about 15 at 100/s and 150 ms, plus headroom). */
export const DEFAULT_LIVE_CONCURRENCY = 20;

/** Default throttle for Development and Trial: 5 in flight, the per-second limit of those accounts. */
export const DEFAULT_DEVELOPMENT_CONCURRENCY = 5;

/** The tables are read by the rule builders. */
interface PresetParts {
  readonly throttle: ConcurrencyPolicy;
  readonly resourceLimits: unknown;
  readonly throttleExemptRoutes: unknown;
}

const PRESET_RULES = {
  concurrency: limitCount,
  leaseTtl: aDuration,
  resourceLimits: anything('an array of { route, limit, periodMs } rows'),
  throttleExemptRoutes: anything('an array of route patterns'),
};

function presetParts(options: unknown, factory: string, defaultConcurrency: number): PresetParts {
  const read = readOptions(options, factory, PRESET_RULES, {
    defaults: { concurrency: defaultConcurrency },
  });
  const max = read.concurrency;
  return {
    throttle: concurrency(max, {
      name: `throttle: ${max} concurrent`,
      ...(read.leaseTtl === undefined ? {} : { leaseTtl: read.leaseTtl }),
    }),
    resourceLimits: read.resourceLimits,
    throttleExemptRoutes: read.throttleExemptRoutes,
  };
}

/**
 * The Live preset: `window(200, 1 s)`, `rate(100/s, burst 200)`, `window(3500, 60 s)` and the throttle.
 * @param options - throttle size and lease TTL, resource limits, throttle exemptions
 * @throws ConfigurationError naming the option, for options that are not an object or an option
 *   of the wrong kind
 */
export function livePreset(options: PresetOptions = {}): LimitPreset {
  const factory = 'livePreset';
  const { throttle, resourceLimits, throttleExemptRoutes } = presetParts(
    options,
    factory,
    DEFAULT_LIVE_CONCURRENCY,
  );
  return Object.freeze({
    name: 'live',
    policies: Object.freeze([
      window(200, '1s', { name: 'global: 200 per 1 s' }),
      rate(100, 200, { name: 'global: 100 per s average, burst 200' }),
      window(3500, '60s', { name: 'global: 3500 per 60 s' }),
      throttle,
    ]),
    rules: Object.freeze([
      ...rulesOfRows(
        resourceLimits ?? liveResourceLimits,
        'resource',
        `${factory} option resourceLimits`,
      ),
      ...rulesOfExemptions(
        throttleExemptRoutes ?? liveThrottleExemptRoutes,
        [throttle.name],
        `${factory} option throttleExemptRoutes`,
        'the throttle',
      ),
    ]),
  });
}

/**
 * The Development preset: `window(5, 1 s)`, `window(200, 60 s)` and the throttle.
 * @param options - throttle size and lease TTL, resource limits, throttle exemptions
 * @throws ConfigurationError naming the option, for options that are not an object or an option
 *   of the wrong kind
 */
export function developmentPreset(options: PresetOptions = {}): LimitPreset {
  return Object.freeze({ ...devTrial(options, 'developmentPreset'), name: 'development' });
}

/**
 * The Trial preset: the same limits as Development.
 * @param options - throttle size and lease TTL, resource limits, throttle exemptions
 * @throws ConfigurationError naming the option, for options that are not an object or an option
 *   of the wrong kind
 */
export function trialPreset(options: PresetOptions = {}): LimitPreset {
  return Object.freeze({ ...devTrial(options, 'trialPreset'), name: 'trial' });
}

function devTrial(options: PresetOptions, factory: string): LimitPreset {
  const { throttle, resourceLimits, throttleExemptRoutes } = presetParts(
    options,
    factory,
    DEFAULT_DEVELOPMENT_CONCURRENCY,
  );
  return {
    name: 'development',
    policies: Object.freeze([
      window(5, '1s', { name: 'global: 5 per 1 s' }),
      window(200, '60s', { name: 'global: 200 per 60 s' }),
      throttle,
    ]),
    rules: Object.freeze([
      ...rulesOfRows(
        resourceLimits ?? developmentResourceLimits,
        'resource',
        `${factory} option resourceLimits`,
      ),
      ...rulesOfExemptions(
        throttleExemptRoutes ?? [],
        [throttle.name],
        `${factory} option throttleExemptRoutes`,
        'the throttle',
      ),
    ]),
  };
}

/** Presets by account type, as a limiter takes them to pick the limits from `accountType`. */
export type AccountPresets = Readonly<Record<string, LimitPreset>>;

/** The specification's presets with the default throttle. */
export const presets: Readonly<{
  /** Live accounts. */
  live: LimitPreset;
  /** Development accounts. */
  development: LimitPreset;
  /** Trial accounts. */
  trial: LimitPreset;
  /**
   * All three, keyed by account type, for a limiter that serves every kind of account: a limiter
   * made with it types `accountType` as {@link AccountType}.
   */
  byAccountType: Readonly<Record<AccountType, LimitPreset>>;
}> = (() => {
  const live = livePreset();
  const development = developmentPreset();
  const trial = trialPreset();
  return Object.freeze({
    live,
    development,
    trial,
    byAccountType: Object.freeze({ live, development, trial }),
  });
})();
