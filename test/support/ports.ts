/** Free ports for the servers the tests start: never the machine's own Redis (6379) or PostgreSQL (5432). */
import { createServer } from 'node:net';

const MACHINE_PORTS: ReadonlySet<number> = new Set([6379, 5432]);

/** A port nothing listens on right now, and never 6379 or 5432. */
export async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (address === null || typeof address === 'string') throw new Error('no port');
    if (!MACHINE_PORTS.has(address.port)) return address.port;
  }
}
