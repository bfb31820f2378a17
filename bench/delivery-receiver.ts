/**
 * The webhook receiver of the deliveries benchmark, in a process of its own (it stands for a
 * remote party, and so takes no time from the sender's event loop): node:http on 127.0.0.1,
 * answering 204 at once. Told to expect a number of deliveries, it counts them, verifies the
 * signature of one in `VERIFY_EVERY` with the secrets it was given, counts a webhook-id that comes
 * twice to one path, and reports when the last one arrived (`performance.timeOrigin +
 * performance.now()`, comparable across processes).
 * Messages in: `{ expect, secrets }`, `'stop'`. Messages out: `{ ready, port }`, `{ armed }`,
 * `{ done, at, verified, badSignatures, duplicates }`.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from 'api-conventions';

/** One delivery in this many has its signature verified. */
const VERIFY_EVERY = 50;

const send = (message: Record<string, unknown>) => process.send?.(message);

let expected = 0;
let received = 0;
let secrets: readonly string[] = [];
let verified = 0;
let badSignatures = 0;
let seen = new Set<string>();
let duplicates = 0;

function check(path: string, body: string, headers: IncomingHttpHeaders): void {
  // One message goes to several subscriptions, each at a path of its own.
  const key = `${path} ${String(headers['webhook-id'])}`;
  if (seen.has(key)) duplicates++;
  else seen.add(key);
  if (received % VERIFY_EVERY !== 0 || secrets.length === 0) return;
  verified++;
  if (!verifyWebhook(body, headers, { secrets }).ok) badSignatures++;
}

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', () => {
    res.writeHead(204).end();
    received++;
    check(req.url ?? '', body, req.headers);
    if (received === expected) {
      send({
        done: true,
        at: performance.timeOrigin + performance.now(),
        verified,
        badSignatures,
        duplicates,
      });
    }
  });
});
server.keepAliveTimeout = 60_000;

process.on('message', (message: unknown) => {
  if (message === 'stop') {
    server.close();
    server.closeAllConnections();
    process.disconnect();
    return;
  }
  const order = message as { expect: number; secrets: readonly string[] };
  expected = order.expect;
  secrets = order.secrets;
  received = 0;
  verified = 0;
  badSignatures = 0;
  duplicates = 0;
  seen = new Set();
  send({ armed: true });
});

server.listen(0, '127.0.0.1', () => {
  send({ ready: true, port: (server.address() as AddressInfo).port });
});
