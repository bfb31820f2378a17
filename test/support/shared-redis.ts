/**
 * The redis-server a test run shares (started once by redis-global-setup.ts): each file takes a
 * database of its own, empty, and empties it when done, so files running at the same time never
 * see each other's keys, queues or counters. Only for files that leave the server running: a file
 * that stops, pauses or flushes its server, or reads server-wide counters, starts its own.
 */
import { Redis } from 'ioredis';
import { inject } from 'vitest';

/** A file's share of the server: the port and its database. */
export interface SharedRedis {
  readonly port: number;
  readonly db: number;
  /** Empty the database and close the admin connection. */
  release(): Promise<void>;
}

/** Database 0 holds only the counter that hands out the others. */
const COUNTER = 'api-conventions:test-databases';

/** Take a database of the shared server for this file, emptied first. */
export async function sharedRedis(): Promise<SharedRedis> {
  const shared = inject('sharedRedis');
  if ('error' in shared) throw new Error(`the shared redis-server did not start: ${shared.error}`);
  const { port, databases } = shared;
  const admin = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  admin.on('error', () => undefined);
  await admin.connect();
  const db = 1 + (((await admin.incr(COUNTER)) - 1) % (databases - 1));
  await admin.select(db);
  await admin.flushdb();
  return {
    port,
    db,
    release: async () => {
      await admin.flushdb();
      admin.disconnect();
    },
  };
}
