/**
 * A delivery queue around another that can be told to hang the first enqueue of a message's jobs:
 * the service has put the message on record by then, and its jobs never reach the queue. A publish
 * cut off between the two by a kill, made certain (test/support/webhook-instance.ts).
 */
import type { DeliveryJob, DeliveryQueue } from '../../src/index.js';

/** A message whose enqueue hangs: its id and its event's data. */
export interface StalledMessage {
  readonly id: string;
  readonly data: unknown;
}

/** The queue; each message is stalled once, in this process only. */
export class StallingQueue implements DeliveryQueue {
  readonly #inner: DeliveryQueue;
  /** The data (as JSON) of the events whose next enqueue hangs. */
  readonly #armed = new Set<string>();
  readonly #stalled: StalledMessage[] = [];

  constructor(inner: DeliveryQueue) {
    this.#inner = inner;
  }

  /** Hang the next enqueue of a job of the message whose event carries `data`. */
  stallNext(data: unknown): void {
    this.#armed.add(JSON.stringify(data));
  }

  /** The messages stalled so far. */
  get stalled(): readonly StalledMessage[] {
    return this.#stalled;
  }

  enqueue(job: DeliveryJob): Promise<void> {
    const data = dataOf(job.body);
    if (data === undefined || !this.#armed.delete(data)) return this.#inner.enqueue(job);
    this.#stalled.push({ id: job.id, data: JSON.parse(data) });
    return new Promise<void>(() => undefined);
  }

  close(): Promise<readonly DeliveryJob[]> {
    return this.#inner.close();
  }
}

/** The event's data in a message body (the default envelope), as JSON. */
function dataOf(body: string): string | undefined {
  try {
    return JSON.stringify((JSON.parse(body) as { data?: unknown }).data);
  } catch {
    return undefined;
  }
}
