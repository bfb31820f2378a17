/**
 * Pacing for the integrator's client: the library's own limiter, run on the client side with the
 * preset the server publishes, spaces the client's requests so that it stays under the limits and
 * does not see a 429 in the first place. Requests wait their turn in order (first in, first out);
 * at most the throttle's number are in flight at once.
 * @module
 */
import { type Clock, systemClock } from '../clock.js';
import { ConfigurationError } from '../errors.js';
import { describe } from '../limits/duration.js';
import { createLimiter } from '../limits/limiter.js';
import { MemoryStore } from '../limits/memory-store.js';
import { type Policy, rate, window } from '../limits/policy.js';
import type { LimitPreset } from '../limits/presets.js';
import { type Sleep, timerSleep } from './sleep.js';

/** Options of {@link createPacer}. */
export interface PacerOptions {
  /** The limits to stay under: the server's preset for your account type (`presets.live`). */
  preset: LimitPreset;
  /** The time source. @defaultValue `systemClock` */
  clock?: Clock;
  /** How to wait. Tests pass one that moves a fake clock. @defaultValue real timers */
  sleep?: Sleep;
  /**
   * Slack for the network: the server counts a request when it arrives, the client when it sends
   * it, and arrival times jitter. Each window is stretched by this much, and each burst shrunk by
   * what the average rate makes of it, so that jitter of up to this much never tips the server
   * over a limit.
   * @defaultValue 50
   */
  safetyMarginMs?: number;
}

/** What the pacer needs to know of a request. */
export interface PacedRequest {
  /** The HTTP method. */
  readonly method: string;
  /** The absolute URL. */
  readonly url: string;
}

/** Spaces requests under a preset's limits. */
export interface Pacer {
  /**
   * Wait until the request may be sent under the limits.
   * @param request - method and URL
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

/**
 * Make a pacer for one client and account. Pass it to `createRetryingFetch({ pace })`.
 * @param options - the preset, clock, sleep and safety margin
 * @throws ConfigurationError `invalid_option` for a preset without time limits or a bad margin
 * @example
 * ```ts
 * const fetch = createRetryingFetch({ pace: createPacer({ preset: presets.live }) });
 * await Promise.all(ids.map((id) => fetch(`https://api.example.com/booking/v1/reservations/${id}`)));
 * ```
 */
export function createPacer(options: PacerOptions): Pacer {
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? timerSleep;
  const margin = options.safetyMarginMs ?? 50;
  if (!Number.isSafeInteger(margin) || margin < 0) {
    throw new ConfigurationError(
      'invalid_option',
      `createPacer: safetyMarginMs must be a whole number >= 0, got ${describe(margin)}.`,
    );
  }
  const { timed, maxInFlight } = pacingPolicies(options.preset, margin);
  const limiter = createLimiter({ policies: timed, clock, store: new MemoryStore() });
  const queue: Waiter[] = [];
  let inFlight = 0;
  let sleeping = false;

  const pump = (): void => {
    while (queue.length > 0 && !sleeping && inFlight < maxInFlight) {
      const head = queue[0] as Waiter;
      const decision = limiter.check({
        clientId: 'self',
        accountCode: 'self',
        method: head.method,
        path: head.path,
      });
      if (!decision.allowed) {
        // A refusal blocks the limiter until the instant it announced: wait exactly that long.
        sleeping = true;
        const wake = (): void => {
          sleeping = false;
          pump();
        };
        sleep(Math.max(0, decision.retryAt - clock.now())).then(wake, wake);
        return;
      }
      queue.shift();
      head.signal?.removeEventListener('abort', head.onAbort);
      inFlight++;
      let ended = false;
      head.resolve(() => {
        if (ended) return;
        ended = true;
        inFlight--;
        pump();
      });
    }
  };

  return {
    acquire(request, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<() => void>((resolve, reject) => {
        const waiter: Waiter = {
          method: request.method,
          path: pathOf(request.url),
          resolve,
          reject,
          signal,
          onAbort: () => {
            const at = queue.indexOf(waiter);
            if (at !== -1) queue.splice(at, 1);
            reject(signal?.reason);
          },
        };
        signal?.addEventListener('abort', waiter.onAbort, { once: true });
        queue.push(waiter);
        pump();
      });
    },
    get inFlight() {
      return inFlight;
    },
    get waiting() {
      return queue.length;
    },
  };
}

/**
 * The client's own policies for a preset: the time limits with the safety margin, and the
 * throttle as a count of requests in flight.
 * @param preset - the server's preset
 * @param margin - the safety margin in ms
 */
function pacingPolicies(
  preset: LimitPreset,
  margin: number,
): { timed: Policy[]; maxInFlight: number } {
  const policies = (preset as Partial<LimitPreset> | undefined)?.policies;
  if (!Array.isArray(policies)) {
    throw new ConfigurationError(
      'invalid_option',
      `createPacer: preset must be a LimitPreset such as presets.live, got ${describe(preset)}.`,
    );
  }
  const timed: Policy[] = [];
  let maxInFlight = Number.POSITIVE_INFINITY;
  for (const policy of policies as readonly Policy[]) {
    switch (policy.kind) {
      case 'window':
        timed.push(window(policy.limit, policy.windowMs + margin, { name: policy.name }));
        break;
      case 'rate': {
        const slack = Math.ceil((policy.perSecond * margin) / 1000);
        timed.push(
          rate(policy.perSecond, Math.max(1, policy.burst - slack), { name: policy.name }),
        );
        break;
      }
      case 'concurrency':
        maxInFlight = Math.min(maxInFlight, policy.max);
        break;
    }
  }
  if (timed.length === 0) {
    throw new ConfigurationError(
      'invalid_option',
      'createPacer: the preset has no window or rate policy to pace by.',
    );
  }
  return { timed, maxInFlight };
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return '/';
  }
}
