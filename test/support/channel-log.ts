/**
 * Subscribers to diagnostics channels for the tests: each records its channel's messages until
 * the test ends.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';

/** Listeners to unsubscribe together (call `stop` in `afterEach`). */
export class ChannelLog {
  readonly #stops: Array<() => void> = [];

  /** Every message of channel `name` from now until {@link ChannelLog.stop}. */
  listen<T>(name: string): T[] {
    const messages: T[] = [];
    this.subscribe(name, (message) => void messages.push(message as T));
    return messages;
  }

  /** Subscribe `listener` to channel `name` until {@link ChannelLog.stop}. */
  subscribe(name: string, listener: (message: unknown) => void): void {
    subscribe(name, listener);
    this.#stops.push(() => unsubscribe(name, listener));
  }

  /** Unsubscribe every listener. */
  readonly stop = (): void => {
    for (const stop of this.#stops.splice(0)) stop();
  };
}
