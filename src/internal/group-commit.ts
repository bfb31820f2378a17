/**
 * Group commit: writes that callers make at the same time share one statement. A write arriving
 * when nothing is in flight goes at the end of the current turn of the event loop, with every
 * write made in that turn (no timer: the answers that arrived together, or that piled up while an
 * embedded database held the thread, go together); one arriving while batches are in flight joins
 * the batch that is forming, which closes when it is full, after a short wait, or (with a
 * `minBatch`) at the end of the turn in which it holds that many, or waits for a batch to end when
 * as many are in flight as allowed. With a `minBatch`, the writes of a turn when nothing is in
 * flight are shared among as many batches as may go, each of that many at least, so that the
 * database works on one while this process makes the next. Each caller's promise settles with its
 * own result once its batch has committed, or with the batch's error: a failed batch fails its own
 * callers only, and the next one goes as if nothing happened. @module
 */
import { endOfTurn, type Sleep, timerSleep } from './timers.js';

/** How a {@link GroupCommit}'s batches are sized and spaced, whatever it writes. @internal */
export interface GroupBatching {
  /** The most items a batch holds. */
  readonly maxBatch: number;
  /**
   * How long a batch forming while another is in flight waits for more items, in ms; 0: it goes
   * as soon as a batch may. A write when nothing is in flight waits for no timer.
   */
  readonly maxWaitMs: number;
  /** Batches in flight at once. */
  readonly concurrency: number;
  /**
   * The fewest items a batch holds to go while another is in flight: it goes at the end of the
   * turn in which it holds that many (or once full, or after `maxWaitMs` when above 0); fewer wait
   * for a batch to end. The writes of a turn when nothing is in flight are shared among as many
   * batches as may go, each of at least this many. Left out: a batch forming while another is in
   * flight goes when full, after `maxWaitMs`, or (`maxWaitMs` 0) as soon as a batch may, and the
   * writes of a turn go in one batch up to `maxBatch`.
   */
  readonly minBatch?: number | undefined;
}

/** How a {@link GroupCommit} forms its batches. @internal */
export interface GroupCommitSettings<I, R> extends GroupBatching {
  /**
   * Write a batch in one statement (one transaction), answering one result per item in their
   * order; rejects to fail every item of the batch.
   */
  readonly write: (items: readonly I[]) => Promise<readonly R[]>;
  /**
   * Items with one key never share a batch: a later one waits for the next, in arrival order (a
   * statement cannot insert or move one row twice). An item of several keys shares none of them.
   * Left out: every item may share.
   */
  readonly keyOf?: ((item: I) => string | readonly string[]) | undefined;
  /**
   * After a batch of more than one fails, write each of its items alone, so that an item the
   * statement refuses fails its own caller only: `true` for writes that are safe to repeat (one
   * that committed though its answer was lost changes nothing the second time); a function for
   * the batch's errors after which to (an error by which the database refused the statement, so
   * that nothing of it committed), the others failing every item. Left out: a failed batch fails
   * every item with its error.
   */
  readonly retryAlone?: boolean | ((error: unknown) => boolean) | undefined;
  /** The wait of a forming batch. @defaultValue a real timer */
  readonly sleep?: Sleep | undefined;
  /** Runs `fn` at the end of the current turn. @defaultValue `setImmediate` */
  readonly endOfTurn?: ((fn: () => void) => void) | undefined;
}

/** An item waiting for its batch, with its caller's promise. */
interface Waiting<I, R> {
  readonly item: I;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/** Batches writes that arrive together. @internal */
export class GroupCommit<I, R> {
  readonly #settings: GroupCommitSettings<I, R>;
  readonly #sleep: Sleep;
  readonly #endOfTurn: (fn: () => void) => void;
  #queue: Waiting<I, R>[] = [];
  #inFlight = 0;
  // A forming batch is waiting for more items.
  #forming = false;
  // A batch goes at the end of the turn.
  #turnEnding = false;
  #batches = 0;
  #items = 0;

  constructor(settings: GroupCommitSettings<I, R>) {
    this.#settings = settings;
    this.#sleep = settings.sleep ?? timerSleep;
    this.#endOfTurn = settings.endOfTurn ?? endOfTurn;
  }

  /** Write `item` with whatever else is written at the time; settles once its batch did. */
  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#pump();
    });
  }

  /** Batches written and the items they held, since the start: how well writes were grouped. */
  get stats(): { readonly batches: number; readonly items: number } {
    return { batches: this.#batches, items: this.#items };
  }

  /** Send batches while items wait and a batch may go. */
  #pump(): void {
    const { concurrency, maxBatch, maxWaitMs, minBatch } = this.#settings;
    while (this.#queue.length > 0 && this.#inFlight < concurrency) {
      if (this.#inFlight === 0 && this.#queue.length < maxBatch) {
        // Nothing in flight: the writes of this turn go together at its end.
        this.#atTurnEnd();
        return;
      }
      if (this.#inFlight > 0 && this.#queue.length < maxBatch) {
        // Others are in flight: enough to be worth a statement of its own goes with the rest of
        // the turn's writes at its end.
        if (minBatch !== undefined && this.#queue.length >= minBatch) {
          this.#atTurnEnd();
          return;
        }
        // Let more join, up to the wait; or (with a minBatch, no wait) until a batch ends.
        if (maxWaitMs > 0) {
          if (!this.#forming) {
            this.#forming = true;
            const formed = () => {
              this.#forming = false;
              this.#sendNow(true);
            };
            this.#sleep(maxWaitMs).then(formed, formed);
          }
          return;
        }
        if (minBatch !== undefined) return;
      }
      this.#send(this.#take());
    }
  }

  /** Send what waits at the end of the current turn, once. */
  #atTurnEnd(): void {
    if (this.#turnEnding) return;
    this.#turnEnding = true;
    this.#endOfTurn(() => {
      this.#turnEnding = false;
      this.#sendNow(false);
    });
  }

  /**
   * The turn, or the wait of a batch (`waited`), is over: send what waits if a batch may go (and,
   * while another is in flight, holds `minBatch` unless it waited), then go on as usual.
   */
  #sendNow(waited: boolean): void {
    const { concurrency, minBatch } = this.#settings;
    if (this.#queue.length > 0 && this.#inFlight < concurrency) {
      if (this.#inFlight === 0) {
        // The writes of the turn, shared among the batches that may go.
        const share = this.#share();
        this.#send(this.#take(share));
        while (
          minBatch !== undefined &&
          this.#queue.length >= minBatch &&
          this.#inFlight < concurrency
        ) {
          this.#send(this.#take(share));
        }
      } else if (waited || minBatch === undefined || this.#queue.length >= minBatch) {
        this.#send(this.#take());
      }
    }
    this.#pump();
  }

  /**
   * The size of each batch the waiting items go in when nothing is in flight: as many batches as
   * may go, each of `minBatch` at least, up to `maxBatch`; without a `minBatch`, one batch.
   */
  #share(): number {
    const { maxBatch, minBatch, concurrency } = this.#settings;
    if (minBatch === undefined) return maxBatch;
    const waiting = this.#queue.length;
    const batches = Math.max(1, Math.min(concurrency, Math.floor(waiting / minBatch)));
    return Math.min(maxBatch, Math.ceil(waiting / batches));
  }

  /** The next batch: items in arrival order, up to `most` (`maxBatch`), none sharing a key. */
  #take(most = this.#settings.maxBatch): Waiting<I, R>[] {
    const { keyOf } = this.#settings;
    if (keyOf === undefined) return this.#queue.splice(0, most);
    const batch: Waiting<I, R>[] = [];
    const left: Waiting<I, R>[] = [];
    const keys = new Set<string>();
    for (const waiting of this.#queue) {
      let key: string | readonly string[];
      try {
        key = keyOf(waiting.item);
      } catch (error) {
        waiting.reject(error);
        continue;
      }
      const goes = batch.length < most && free(keys, key);
      // A key of one left out is kept from the batch too: a later item never overtakes it.
      if (typeof key === 'string') keys.add(key);
      else for (const one of key) keys.add(one);
      (goes ? batch : left).push(waiting);
    }
    this.#queue = left;
    return batch;
  }

  /** Write a batch and give each item its result; rejects with the batch's error. */
  #write(batch: readonly Waiting<I, R>[]): Promise<void> {
    return new Promise<readonly R[]>((resolve) =>
      resolve(this.#settings.write(batch.map((w) => w.item))),
    ).then((results) => {
      if (results.length !== batch.length) {
        throw new Error(
          `a batch of ${batch.length} writes answered ${results.length} results; each write needs one`,
        );
      }
      for (let i = 0; i < batch.length; i++) batch[i]?.resolve(results[i] as R);
    });
  }

  /** Whether the items of a batch that failed with `error` go again alone. */
  #retriesAlone(error: unknown): boolean {
    const { retryAlone } = this.#settings;
    if (typeof retryAlone !== 'function') return retryAlone === true;
    try {
      return retryAlone(error);
    } catch {
      // A test that fails tells nothing: the batch fails its items, as without retries.
      return false;
    }
  }

  #send(batch: readonly Waiting<I, R>[]): void {
    if (batch.length === 0) return;
    this.#inFlight += 1;
    this.#batches += 1;
    this.#items += batch.length;
    this.#write(batch)
      .catch((error: unknown) => {
        if (batch.length === 1 || !this.#retriesAlone(error)) {
          for (const waiting of batch) waiting.reject(error);
          return undefined;
        }
        // One after the other: the batch's slot stays taken until each has its answer.
        return batch.reduce(
          (previous, waiting) =>
            previous.then(() =>
              this.#write([waiting]).catch((alone: unknown) => waiting.reject(alone)),
            ),
          Promise.resolve(),
        );
      })
      .finally(() => {
        this.#inFlight -= 1;
        this.#pump();
      });
  }
}

/** Whether no key of an item is taken yet. */
function free(taken: ReadonlySet<string>, key: string | readonly string[]): boolean {
  return typeof key === 'string' ? !taken.has(key) : key.every((one) => !taken.has(one));
}
