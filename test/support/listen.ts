/** Serve a node server on 127.0.0.1 with a free port, and stop it cleanly. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StartedServer } from './adapter-suite.js';

/**
 * Listen on 127.0.0.1, port 0.
 * @param server - the server
 * @param stop - how to stop it (default: close every connection and the server)
 */
export async function listen(server: Server, stop?: () => Promise<void>): Promise<StartedServer> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close:
      stop ??
      (() =>
        new Promise<void>((resolve, reject) => {
          server.closeAllConnections();
          server.close((error) => (error ? reject(error) : resolve()));
        })),
  };
}
