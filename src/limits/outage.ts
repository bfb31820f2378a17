/**
 * What a limiter does when its store has an outage: the modes, and their handler.
 * @module
 */
import { refused } from '../internal/options.js';
import { reportApplyFailure } from './channels.js';
import { admittedUnlimited, refusedUnavailable, toDecision, toShadowDecision } from './decision.js';
import type { Decision } from './decision-types.js';
import { MemoryStore } from './memory/store.js';
import type { OutageMode } from './outage-mode.js';
import type { LimitStore, Plan, SyncLimitStore } from './store.js';

/** What a limiter tells `onOutage`: the store's error and what was done about it. */
export interface OutageEvent {
  /** What the store rejected with (a `RedisStoreError` for the Redis store). */
  readonly error: unknown;
  /** What the limiter did: admitted unlimited, refused as unavailable, or decided on the fallback. */
  readonly outage: Exclude<OutageMode, 'reject'>;
}

/** What a limiter that decides outages itself does with one. @internal */
export interface OutageHandler {
  readonly mode: Exclude<OutageMode, 'reject'>;
  decide(error: unknown, plan: Plan, now: number, statuses: boolean): Decision;
}

/** The outage options of a limiter, each checked already. @internal */
export interface OutageOptions {
  readonly outage: OutageMode;
  readonly fallbackStore: SyncLimitStore | undefined;
  readonly outageRetryAfterSeconds: number;
  readonly onOutage: (event: OutageEvent) => void;
}

/**
 * The handler of `options.outage`; undefined when outages are left to the caller (`'reject'`).
 * @throws ConfigurationError `invalid_option` for options that contradict each other
 * @internal
 */
export function outageHandler(
  store: LimitStore,
  options: OutageOptions,
): OutageHandler | undefined {
  const { outage: mode, fallbackStore } = options;
  if (fallbackStore !== undefined && mode !== 'fallback') {
    throw refused(
      'outage',
      '"fallback" when fallbackStore is given (or leave fallbackStore out)',
      mode,
    );
  }
  if (mode === 'reject') return undefined;
  if (store.synchronous) {
    // A synchronous store answers at once and has no outage: a throw there is a bug, passed on.
    throw refused(
      'outage',
      '"reject" or left out with a synchronous store such as the MemoryStore, which has no outage (the other modes apply to an asynchronous store, the RedisStore)',
      mode,
    );
  }
  const report = reporter(store, options.onOutage);
  switch (mode) {
    case 'open':
      return {
        mode,
        decide: (error, _plan, now) => {
          report(error, mode);
          return admittedUnlimited(store, now);
        },
      };
    case 'closed': {
      const seconds = options.outageRetryAfterSeconds;
      return {
        mode,
        decide: (error, _plan, now) => {
          report(error, mode);
          return refusedUnavailable(now, seconds);
        },
      };
    }
    case 'fallback': {
      const local = fallbackStore ?? new MemoryStore();
      // The lease of a decision taken here is given back here.
      return {
        mode,
        decide: (error, plan, now, statuses) => {
          report(error, mode);
          const decided = plan.shadow === true ? toShadowDecision : toDecision;
          return decided(local, local.apply(plan, now), statuses);
        },
      };
    }
  }
}

function reporter(store: LimitStore, onOutage: (event: OutageEvent) => void) {
  return (error: unknown, outage: Exclude<OutageMode, 'reject'>): void => {
    reportApplyFailure(store, error, outage);
    try {
      onOutage({ error, outage });
    } catch {
      // A failing logger must not turn a decision into a crash.
    }
  };
}

/** The default `onOutage`: one line on `console.error`. @internal */
export function defaultOutageReport(event: OutageEvent): void {
  const message = event.error instanceof Error ? event.error.message : String(event.error);
  const what = {
    open: 'admitted unlimited',
    closed: 'refused as unavailable',
    fallback: 'decided by the fallback store',
  }[event.outage];
  console.error(
    `api-conventions: limit store outage, request ${what} (outage: '${event.outage}'): ${message}`,
  );
}
