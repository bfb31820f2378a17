/** Pacing of the integrator's client under the server's preset (docs/client.md). @module */
import { aClock, type Clock, systemClock } from '../clock.js';
import {
  aFunction,
  anything,
  invalidValue,
  readOptions,
  refused,
  wholeNumber,
} from '../internal/options.js';
import { abortableSleep, type Sleep, timerSleep } from '../internal/timers.js';
import type { LimitRule } from '../limits/limit-rule.js';
import { createLimiter, type Decision, type Limiter } from '../limits/limiter.js';
import type { Policy } from '../limits/policy.js';
import type { LimitPreset } from '../limits/presets.js';
import { PacingStore } from './pacing-store.js';

/** Options of {@link createPacer}. */
export interface PacerOptions {
  /** The limits to stay under: the server's preset for your account type (`presets.live`). */
  preset: LimitPreset;
  /** The time source. @defaultValue `systemClock` */
  clock?: Clock;
  /** How to wait. Tests pass one that moves a fake clock. @defaultValue real timers */
  sleep?: Sleep;
  /**
   * Slack for network jitter, in ms: each window this much longer, each burst this much shorter
   * (see docs/client.md, "Safety margin"). @defaultValue 50
   */
  safetyMarginMs?: number;
}

/** What the pacer needs to know of a request. */
export interface PacedRequest {
  /** The HTTP method. */
  readonly method: string;
  /** Absolute, or a path from the root; anything else is paced as `/`, by the global limits. */
  readonly url: string;
}

/** Spaces requests under a preset's limits. */
export interface Pacer {
  /**
   * Wait until the request may be sent under the limits.
   * @param signal - gives up the wait (rejects with the signal's reason)
   * @returns a function to call when the response has arrived: it frees the request's throttle slot
   */
  acquire(request: PacedRequest, signal?: AbortSignal): Promise<() => void>;
  /** Requests sent and not yet ended. */
  readonly inFlight: number;
  /** Requests waiting for their turn. */
  readonly waiting: number;
}

interface Waiter {
  readonly method: string;
  readonly path: string;
  readonly resolve: (done: () => void) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

const PACER_RULES = {
  preset: anything('a LimitPreset such as presets.live'),
  clock: aClock,
  sleep: aFunction<Sleep>('waits (ms, signal)'),
  safetyMarginMs: wholeNumber(0),
};

/**
 * Make a pacer for one client and account. Pass it to `createRetryingFetch({ pace })`.
 * @throws ConfigurationError `invalid_option` when the options are not an object, for a preset
 * without time limits, a bad margin or a `sleep` that is not a function
 * @example
 * ```ts
 * const fetch = createRetryingFetch({ pace: createPacer({ preset: presets.live }) });
 * await Promise.all(ids.map((id) => fetch(`https://api.example.com/booking/v1/reservations/${id}`)));
 * ```
 */
export function createPacer(options: PacerOptions): Pacer {
  const given = readOptions(options, 'createPacer', PACER_RULES, {
    defaults: { clock: systemClock, sleep: timerSleep, safetyMarginMs: 50 },
    required: true,
    example: '{ preset: presets.live }',
  });
  const { clock, sleep, safetyMarginMs: margin } = given;
  const { preset, globalNames, maxInFlight } = pacingPreset(given.preset as LimitPreset);
  // The store decides exactly, so that a refusal gives the instant the send may go.
  const store = new PacingStore(margin);
  const limiter = createLimiter({ preset, clock, store });
  return new RequestPacer({ limiter, store, clock, sleep, globalNames, maxInFlight });
}

interface PacerParts {
  readonly limiter: Limiter<PacingStore>;
  readonly store: PacingStore;
  readonly clock: Clock;
  readonly sleep: Sleep;
  readonly globalNames: ReadonlySet<string>;
  readonly maxInFlight: number;
}

/** The queue of waiting requests, sent in order as the limits admit them. */
class RequestPacer implements Pacer {
  readonly #parts: PacerParts;
  readonly #queue: Waiter[] = [];
  #inFlight = 0;
  // The instant the pending sleep wakes at, and how to end it when an earlier wake is needed.
  #wakeTarget = Number.POSITIVE_INFINITY;
  #cancelSleep: AbortController | undefined;

  constructor(parts: PacerParts) {
    this.#parts = parts;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get waiting(): number {
    return this.#queue.length;
  }

  acquire(request: PacedRequest, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = {
        method: request.method,
        path: pathOf(request.url),
        resolve,
        reject,
        signal,
        onAbort: () => {
          const at = this.#queue.indexOf(waiter);
          if (at !== -1) this.#queue.splice(at, 1);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#queue.push(waiter);
      this.#pump();
    });
  }

  #grant(waiter: Waiter): void {
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    this.#inFlight++;
    let ended = false;
    waiter.resolve(() => {
      if (ended) return;
      ended = true;
      this.#inFlight--;
      this.#pump();
    });
  }

  // A request refused by a global limit stops the scan: everything after it would be refused too.
  #pump(): void {
    const queue = this.#queue;
    let wakeAt = Number.POSITIVE_INFINITY;
    for (let i = 0; i < queue.length && this.#inFlight < this.#parts.maxInFlight; ) {
      const waiter = queue[i] as Waiter;
      const decision = this.#check(waiter);
      if (decision === undefined || decision.allowed) {
        queue.splice(i, 1);
        if (decision !== undefined) this.#grant(waiter);
        continue;
      }
      // The exact instant the limits admit it, not the whole seconds a Retry-After would say.
      wakeAt = Math.min(wakeAt, this.#parts.store.refusedUntil);
      const policy = decision.policy;
      if (policy === undefined || this.#parts.globalNames.has(policy.name)) break;
      i++;
    }
    if (wakeAt >= this.#wakeTarget || wakeAt === Number.POSITIVE_INFINITY) return;
    this.#sleepUntil(wakeAt);
  }

  /** The limiter's decision, or undefined when it threw and the waiter was rejected. */
  #check(waiter: Waiter): Decision | undefined {
    try {
      return this.#parts.limiter.check({
        clientId: 'self',
        accountCode: 'self',
        method: waiter.method,
        path: waiter.path,
      });
    } catch (error) {
      // A bad method or a clock with no time fails that waiter alone, which leaves the queue.
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.reject(error);
      return undefined;
    }
  }

  // One sleep at a time; a later wake is ended when an earlier one is needed, so none oversleeps.
  #sleepUntil(at: number): void {
    this.#cancelSleep?.abort();
    const controller = new AbortController();
    this.#cancelSleep = controller;
    this.#wakeTarget = at;
    const wake = (): void => {
      if (controller.signal.aborted) return;
      this.#cancelSleep = undefined;
      this.#wakeTarget = Number.POSITIVE_INFINITY;
      this.#pump();
    };
    // Rounded up, so a whole-ms clock reaches the instant; a sleep that throws still wakes the queue.
    const ms = Math.max(0, Math.ceil(at - this.#parts.clock.now()));
    abortableSleep(this.#parts.sleep, ms, controller.signal).then(wake, wake);
  }
}

/**
 * The client's own preset: the time limits and the route rules (the store applies the safety
 * margin); the throttle becomes a count of requests in flight (applied to every route, exempt ones
 * included, which keeps the client on the safe side).
 */
function pacingPreset(source: LimitPreset): {
  preset: LimitPreset;
  globalNames: Set<string>;
  maxInFlight: number;
} {
  const policies = (source as Partial<LimitPreset> | undefined)?.policies;
  if (!Array.isArray(policies)) throw invalidValue(PACER_RULES.preset, source, 'preset');
  let maxInFlight = Number.POSITIVE_INFINITY;
  const timed: Policy[] = [];
  for (const policy of policies as readonly Policy[]) {
    if (policy.kind === 'concurrency') maxInFlight = Math.min(maxInFlight, policy.max);
    else timed.push(policy);
  }
  if (timed.length === 0) {
    throw refused('createPacer preset', 'a preset with a window or rate policy to pace by', source);
  }
  const globalNames = new Set(timed.map((p) => p.name));
  const rules: LimitRule[] = [];
  for (const rule of source.rules ?? []) {
    const own = (rule.policies ?? []).filter((p) => p.kind !== 'concurrency');
    const exempt = (rule.exempt ?? []).filter((name) => globalNames.has(name));
    if (own.length === 0 && exempt.length === 0) continue;
    rules.push({ ...rule, policies: own, exempt });
  }
  return { preset: { name: source.name, policies: timed, rules }, globalNames, maxInFlight };
}
// A path is paced under its own resource limits, as a browser or a fetch with a base URL takes it.
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    if (typeof url !== 'string' || !url.startsWith('/')) return '/';
    try {
      return new URL(url, PATH_BASE).pathname;
    } catch {
      return '/';
    }
  }
}

const PATH_BASE = 'http://relative.invalid';
