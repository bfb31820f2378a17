/**
 * An instance's {@link SubscriptionIndex} kept in step with the repository: every change applied
 * once, in revision order, by one catch-up at a time (see docs/webhook-service.md).
 * @module
 */
import { describe } from '../../internal/describe.js';
import { refused } from '../../internal/options.js';
import { endOfTurn } from '../../internal/timers.js';
import type { StoredSubscription, SubscriptionChange } from '../subscriptions/subscription.js';
import {
  replacePlainSubscription,
  type SubscriptionIndex,
} from '../subscriptions/subscription-index.js';
import { isPlainChanges } from './plain-changes.js';
import type { SubscriptionRepository } from './repository.js';

// What a value must be, for the refusal reported when two accounts hold one id.
const UNIQUE_ID =
  "an id no other account's subscription has: only the first is matched (make generateId return ids unique across accounts; the default, a UUID, is)";

/** How many changes one read of `changesSince` asks for. */
const PAGE = 10_000;

/** Applies the repository's changes to an index; only enabled subscriptions are held. @internal */
export class SubscriptionMirror {
  readonly #repository: SubscriptionRepository;
  readonly #index: SubscriptionIndex;
  readonly #onError: (error: unknown) => void;
  #revision = 0;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  #stopWatching: (() => Promise<void>) | undefined;
  #closed = false;

  constructor(
    repository: SubscriptionRepository,
    index: SubscriptionIndex,
    onError: (error: unknown) => void,
  ) {
    this.#repository = repository;
    this.#index = index;
    this.#onError = onError;
  }

  /** The revision of the last change applied. */
  get revision(): number {
    return this.#revision;
  }

  /** Load every change so far, then listen for more (a repository without `watch` is polled). */
  async start(): Promise<void> {
    await this.catchUp();
    if (this.#repository.watch === undefined || this.#closed) return;
    this.#stopWatching = await this.#repository.watch({
      onChange: (revision) => this.signal(revision),
      onReconnect: () => this.signal(),
    });
    if (this.#closed) await this.#stop();
  }

  /**
   * A change may be waiting: catch up unless `revision` is applied already. Never throws; a
   * failure is reported and retried on the next signal.
   */
  signal(revision?: number): void {
    if (this.#closed || (revision !== undefined && revision <= this.#revision)) return;
    if (revision === undefined) {
      this.catchUp().catch(this.#onError);
      return;
    }
    // The notification of this instance's own write may come before the write's answer (PGlite
    // calls back while it runs the statement): looked at again at the end of the turn, by when
    // `settle` has applied it, so that it costs no read.
    endOfTurn(() => {
      if (this.#closed || revision <= this.#revision) return;
      this.catchUp().catch(this.#onError);
    });
  }

  /**
   * Apply every change after the last revision applied. One pass runs at a time: a call during a
   * pass waits for one more pass after it (which may have read before the caller's change), and
   * calls during that wait share it.
   */
  catchUp(): Promise<void> {
    if (this.#running === undefined) {
      this.#running = this.#pass().finally(() => {
        this.#running = undefined;
      });
      return this.#running;
    }
    this.#next ??= this.#running
      .then(undefined, () => undefined)
      .then(() => {
        this.#next = undefined;
        return this.catchUp();
      });
    return this.#next;
  }

  /**
   * Bring the index up to this instance's own write, `stored` as the repository answered it:
   * applied at once when it is the next revision and no catch-up is under way (no read of the
   * repository; its notification then finds it applied), else by a catch-up.
   */
  settle(stored: StoredSubscription | undefined): Promise<void> {
    if (
      stored !== undefined &&
      !this.#closed &&
      this.#running === undefined &&
      stored.revision === this.#revision + 1
    ) {
      this.#apply(
        {
          revision: stored.revision,
          id: stored.id,
          accountCode: stored.accountCode,
          subscription: stored,
        },
        false,
      );
      this.#revision = stored.revision;
      return Promise.resolve();
    }
    return this.catchUp();
  }

  /** Stop listening; changes are no longer applied. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#stop();
  }

  async #stop(): Promise<void> {
    const stop = this.#stopWatching;
    this.#stopWatching = undefined;
    await stop?.();
  }

  async #pass(): Promise<void> {
    let next = this.#repository.changesSince(this.#revision, PAGE);
    for (;;) {
      const changes = await next;
      // A full page: the next is read while this one is applied (a start over a million
      // subscriptions waits on the database and on the index at once, not one after the other).
      const last = changes.at(-1);
      const more = changes.length >= PAGE && last !== undefined;
      if (more) {
        next = this.#repository.changesSince(Math.max(last.revision, this.#revision), PAGE);
        // Awaited below, or dropped if this page fails: either way its failure is not unhandled.
        next.catch(() => undefined);
        // A client may send its query on a later turn (pg's Pool hands out a connection on the
        // next tick): one turn of the event loop lets the read start before the page is applied,
        // so that the database reads the next page while this one is applied.
        await nextTurn();
      }
      const plain = isPlainChanges(changes);
      for (const change of changes) {
        // Out of order or repeated: applied already, or newer ones were.
        if (change.revision <= this.#revision) continue;
        this.#apply(change, plain);
        this.#revision = change.revision;
      }
      if (!more) return;
    }
  }

  // `plain`: the change is of a page the library made of frozen plain data (plain-changes.ts).
  #apply(change: SubscriptionChange, plain: boolean): void {
    // The index holds one subscription per id; ids are unique per account only. A change of one
    // account never removes or replaces another account's subscription that has the same id.
    const held = this.#index.get(change.id);
    if (held !== undefined && held.accountCode !== change.accountCode) {
      if (change.subscription?.status === 'enabled') {
        this.#onError(
          refused(
            `subscription.id of account ${describe(change.accountCode)}`,
            UNIQUE_ID,
            change.id,
            'duplicate_subscription_id',
          ),
        );
      }
      return;
    }
    const stored = change.subscription;
    if (stored === undefined || stored.status !== 'enabled') {
      this.#index.remove(change.id);
      return;
    }
    try {
      // Held as the repository gave it (the index freezes it): no copy per subscription.
      if (plain) replacePlainSubscription(this.#index, stored);
      else this.#index.replace(stored);
    } catch (error) {
      // A row the index refuses (edited by hand) must not stop every later change.
      this.#index.remove(change.id);
      this.#onError(error);
    }
  }
}

/** Resolves on a later turn of the event loop, after pending I/O callbacks and ticks have run. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => endOfTurn(resolve));
}
