/**
 * The rate of a subscription's deliveries, {@link DeliveryRates}: at most `rateLimit` in any 1 s
 * window, kept by the library's limiter in a store of its own (memory on one instance, Redis
 * across instances), each delivery over the rate told the exact instant it may go.
 * @module
 */
import type { Clock } from '../../clock.js';
import { ConfigurationError } from '../../errors/configuration-error.js';
import type { Decision } from '../../limits/decision-types.js';
import { createLimiter, type Limiter } from '../../limits/limiter.js';
import { MemoryStore } from '../../limits/memory/store.js';
import { window } from '../../limits/policy.js';
import type { LimitStore } from '../../limits/store.js';

/**
 * The limiter's clock counts one of our milliseconds as one of its seconds. A refusal announces
 * whole seconds (it is made for a 429's Retry-After) and blocks until the instant announced, so on
 * the delivery's own clock a wait would be rounded up to a second; on this one it is rounded up to
 * a millisecond, which is exact for a clock of whole milliseconds: the window of 1 s is a window
 * of 1,000 of the limiter's seconds.
 */
const SCALE = 1000;

/** One limiter per rate value met (at most 10,000 of them), all on one store. */
type RateLimiter = Limiter<LimitStore>;

/** What {@link DeliveryRates} works with. @internal */
export interface DeliveryRatesSettings {
  /** Where the admissions are kept: a MemoryStore (one instance) or a RedisStore timed by the caller. */
  readonly store: LimitStore | undefined;
  /** Told of a decision the store could not make (the delivery goes all the same). */
  readonly onError: (error: unknown) => void;
}

/**
 * Admits the deliveries of subscriptions with a rate: at most `rate` in any half-open interval
 * `[t, t + 1 s)`. A delivery admitted counts its turn (it is attempted at once); one refused is
 * told the earliest instant it would be admitted, and counts nothing.
 * @internal
 */
export class DeliveryRates {
  readonly #store: LimitStore;
  readonly #clock: Clock;
  // The time of the attempt being decided, on the limiter's clock: set before each check, so that
  // the rate counts a delivery at the very time its attempt is reported at.
  #at = 0;
  readonly #onError: (error: unknown) => void;
  readonly #limiters = new Map<number, RateLimiter>();
  // A store that times decisions by its own clock is told once, then passed by.
  #ownTime = false;

  constructor(settings: DeliveryRatesSettings) {
    this.#store = settings.store ?? new MemoryStore();
    this.#clock = { now: () => this.#at };
    this.#onError = settings.onError;
  }

  /**
   * Until when a delivery to the subscription waits (ms), or `undefined` to send it now (its turn
   * taken). Synchronous on a memory store, a promise on one across the network. A store that
   * cannot decide lets the delivery go (fail open), told to `onError`: a rate never holds a
   * delivery for ever.
   * @param subscriptionId - the subscription
   * @param rate - its `rateLimit`, whole deliveries per second
   * @param at - the attempt's time (ms on the deliveries' clock): the time the rate counts it at
   */
  until(
    subscriptionId: string,
    rate: number,
    at: number,
  ): number | undefined | Promise<number | undefined> {
    if (this.#ownTime) return undefined;
    let decision: Decision | Promise<Decision>;
    const now = at * SCALE;
    this.#at = now;
    try {
      // The rate is part of the key: a changed rate counts afresh (docs/webhook-service.md).
      decision = this.#limiter(rate).check(
        { clientId: `rate:${rate}`, accountCode: subscriptionId, method: 'POST', path: '/' },
        { statuses: false },
      );
    } catch (error) {
      this.#onError(error);
      return undefined;
    }
    if (!(decision instanceof Promise)) return this.#waitOf(decision, now);
    return decision.then(
      (answered) => this.#waitOf(answered, now),
      (error: unknown) => {
        this.#onError(error);
        return undefined;
      },
    );
  }

  #limiter(rate: number): RateLimiter {
    let limiter = this.#limiters.get(rate);
    if (limiter === undefined) {
      limiter = createLimiter({
        policies: [window(rate, SCALE * 1000, { name: `${rate} deliveries per second` })],
        store: this.#store,
        clock: this.#clock,
        outage: 'reject',
      }) as RateLimiter;
      this.#limiters.set(rate, limiter);
    }
    return limiter;
  }

  /** The wait a decision made at `now` (the limiter's clock) means, on the deliveries' clock. */
  #waitOf(decision: Decision, now: number): number | undefined {
    if (decision.now < now / 2) {
      // Decided on the store's clock (a RedisStore with timeSource 'redis'): its 1,000 s window
      // would be a window of 1,000 real seconds. Every delivery goes as with no rate.
      this.#ownTime = true;
      this.#onError(
        new ConfigurationError(
          'invalid_option',
          "delivery.rateLimitStore decides on its own clock, so subscriptions' rateLimit is not enforced; make it with timeSource: 'clock' (new RedisStore({ client, timeSource: 'clock' })).",
        ),
      );
      return undefined;
    }
    if (decision.allowed) return undefined;
    if (decision.reason === 'limit' || decision.reason === 'blocked') {
      return decision.retryAt / SCALE;
    }
    // The store holds as many keys as it may: the delivery goes, as with no rate.
    this.#onError(
      new ConfigurationError(
        'invalid_option',
        `delivery.rateLimitStore refused a delivery's rate for want of room (${decision.reason}), so it was sent without it; give the store more keys (maxKeys).`,
      ),
    );
    return undefined;
  }
}
