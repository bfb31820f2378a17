/**
 * A real webhook receiver on 127.0.0.1 for the delivery tests: it records every request (headers
 * and raw body), answers with what the test's responder says, and tells when a number of requests
 * has arrived.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the receiver got it. */
export interface ReceivedDelivery {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** Answers a request: a status and headers, or writes the response itself (return undefined). */
export type Responder = (
  delivery: ReceivedDelivery,
  res: ServerResponse,
) => { status: number; headers?: Record<string, string> } | undefined;

/** A running receiver. */
export interface WebhookReceiver {
  /** `http://127.0.0.1:port`. */
  readonly url: string;
  readonly port: number;
  /** Every request so far, in order. */
  readonly received: ReceivedDelivery[];
  /** Change the answers. */
  respond(responder: Responder): void;
  /** Resolves once at least `count` requests have arrived. */
  waitFor(count: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Start a receiver answering 204 until told otherwise.
 * @param responder - the first answers
 */
export async function startReceiver(
  responder: Responder = () => ({ status: 204 }),
): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  let answer = responder;
  let waiters: Array<{ count: number; wake: () => void }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const delivery = { path: req.url ?? '/', headers: req.headers, body };
      received.push(delivery);
      const reply = answer(delivery, res);
      if (reply !== undefined) res.writeHead(reply.status, reply.headers).end();
      const ready = waiters.filter((w) => received.length >= w.count);
      waiters = waiters.filter((w) => received.length < w.count);
      for (const w of ready) w.wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    respond: (next) => {
      answer = next;
    },
    waitFor: (count) =>
      received.length >= count
        ? Promise.resolve()
        : new Promise<void>((wake) => waiters.push({ count, wake })),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
