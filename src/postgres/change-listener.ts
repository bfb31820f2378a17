/**
 * LISTEN for the repository's changes: on a pg Pool, a connection of its own that is opened again
 * with backoff after it is lost; on PGlite, its own `listen()`. @module
 */
import { type Sleep, timerSleep } from '../internal/timers.js';
import type { ChangeListener } from '../webhooks/store/repository.js';
import {
  checkOut,
  type DatabaseKind,
  type SqlClient,
  type SqlEmbedded,
  type SqlNotification,
} from './sql-database.js';

/**
 * The backoff of the LISTEN connection by default: 100 ms, doubling up to 500 ms. Whenever the
 * server is back, the connection is open again within half a second, and the changes missed
 * meanwhile are read at once: a change on one instance reaches the others within a second.
 */
export const LISTEN_BACKOFF = Object.freeze({ reconnectDelayMs: 100, maxReconnectDelayMs: 500 });

/** How the LISTEN connection is opened and opened again. */
export interface ListenSettings {
  /** The channel (a plain identifier). */
  readonly channel: string;
  /** Opens the LISTEN connection; the pool's `connect()` by default. */
  readonly connect: (() => Promise<SqlClient>) | undefined;
  /** The first wait before opening again, in ms; doubled after each failure. */
  readonly reconnectDelayMs: number;
  /** The longest wait. */
  readonly maxReconnectDelayMs: number;
  /** Waits between attempts. @defaultValue real timers */
  readonly sleep?: Sleep | undefined;
}

/** Call a listener's callback; its failure is its own and the listening goes on. */
function tell(call: () => void): void {
  try {
    call();
  } catch {
    // A listener's failure is its own; the channel stays open.
  }
}

/** The payload's revision, or nothing for a payload that is not one. */
function revisionOf(payload: string | undefined, call: (revision: number) => void): void {
  const revision = Number(payload);
  if (payload !== undefined && payload !== '' && Number.isSafeInteger(revision)) call(revision);
}

/**
 * Start listening: resolves once the channel is open (after `onReconnect` was called once), to
 * the function that stops listening and releases the connection.
 */
export async function listenForChanges(
  database: DatabaseKind,
  settings: ListenSettings,
  listener: ChangeListener,
): Promise<() => Promise<void>> {
  if (database.kind === 'embedded' && settings.connect === undefined) {
    return listenEmbedded(database.db, settings.channel, listener);
  }
  const connect =
    settings.connect ?? (() => checkOut((database as Extract<DatabaseKind, { kind: 'pool' }>).db));
  const connection = new ListenConnection(connect, settings, listener);
  await connection.open();
  return () => connection.stop();
}

async function listenEmbedded(
  db: SqlEmbedded,
  channel: string,
  listener: ChangeListener,
): Promise<() => Promise<void>> {
  const unlisten = await db.listen(channel, (payload) =>
    revisionOf(payload, (revision) => tell(() => listener.onChange(revision))),
  );
  tell(() => listener.onReconnect());
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    await unlisten();
  };
}

/** One LISTEN connection, opened again whenever it is lost, until stopped. */
class ListenConnection {
  #client: SqlClient | undefined;
  #stopped = false;
  readonly #abort = new AbortController();
  #reconnecting: Promise<void> | undefined;

  constructor(
    private readonly connect: () => Promise<SqlClient>,
    private readonly settings: ListenSettings,
    private readonly listener: ChangeListener,
  ) {}

  readonly #onNotification = (message: SqlNotification): void => {
    if (message.channel !== this.settings.channel) return;
    revisionOf(message.payload, (revision) => tell(() => this.listener.onChange(revision)));
  };

  readonly #onLost = (error?: unknown): void => {
    const client = this.#client;
    if (client === undefined) return;
    this.#release(client, error instanceof Error ? error : new Error('LISTEN connection ended'));
    if (!this.#stopped) this.#reconnecting = this.#reconnect();
  };

  /** Open the connection and LISTEN; the first failure is the caller's. */
  async open(): Promise<void> {
    const client = await this.connect();
    try {
      client.on('notification', this.#onNotification);
      client.on('error', this.#onLost);
      client.on('end', this.#onLost);
      await client.query(`LISTEN ${this.settings.channel}`);
    } catch (error) {
      this.#detach(client);
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    if (this.#stopped) {
      this.#release(client, true);
      return;
    }
    this.#client = client;
    tell(() => this.listener.onReconnect());
  }

  /** Open again after a wait that doubles with each failure, until it works or is stopped. */
  async #reconnect(): Promise<void> {
    let delay = this.settings.reconnectDelayMs;
    while (!this.#stopped) {
      try {
        await (this.settings.sleep ?? timerSleep)(delay, this.#abort.signal);
        await this.open();
        return;
      } catch {
        delay = Math.min(delay * 2, this.settings.maxReconnectDelayMs);
      }
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#abort.abort();
    const client = this.#client;
    if (client !== undefined) this.#release(client, true);
    await this.#reconnecting?.catch(() => undefined);
  }

  #detach(client: SqlClient): void {
    client.removeListener('notification', this.#onNotification);
    client.removeListener('error', this.#onLost);
    client.removeListener('end', this.#onLost);
    // An error the closing connection still reports must not go unheard (it would crash).
    client.on('error', ignore);
  }

  /** Forget the connection and close it (a LISTENing connection is never given back for reuse). */
  #release(client: SqlClient, reason: Error | true): void {
    if (this.#client === client) this.#client = undefined;
    this.#detach(client);
    try {
      client.release(reason);
    } catch {
      // Released already (the pool saw the error first): nothing is held.
    }
  }
}

function ignore(): void {}
