/**
 * A real HTTP client for the adapter tests (node:http, one connection per request, so that an
 * abort closes a socket the server sees), and a tracker of a server's open connections.
 */
import { type ClientRequest, request as httpRequest, type Server } from 'node:http';
import type { Socket } from 'node:net';

/** A response as the client received it. */
export interface Received {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Send one request and read the whole response.
 * @param base - `http://127.0.0.1:port`
 * @param path - the request target
 * @param headers - request headers
 */
export function send(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Received> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { agent: false, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Start a request that the client will abort; errors of the abort are expected and ignored.
 * @param base - `http://127.0.0.1:port`
 * @param path - the request target
 * @param headers - request headers
 */
export function startAbortable(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): ClientRequest {
  const req = httpRequest(`${base}${path}`, { agent: false, headers });
  req.on('error', () => undefined);
  req.end();
  return req;
}

/** Counts a server's open connections and tells when none is left. */
export interface ConnectionTracker {
  /** Connections open now. */
  readonly open: number;
  /** Resolves once every connection has closed. */
  idle(): Promise<void>;
}

/**
 * Track the connections of a server.
 * @param server - a node http server
 */
export function trackConnections(server: Server): ConnectionTracker {
  const sockets = new Set<Socket>();
  let waiters: Array<() => void> = [];
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0) {
        // Resolve after the other close listeners (the response's) have run.
        const ready = waiters;
        waiters = [];
        setImmediate(() => {
          for (const wake of ready) wake();
        });
      }
    });
  });
  return {
    get open() {
      return sockets.size;
    },
    idle: () =>
      sockets.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            waiters.push(resolve);
          }),
  };
}
