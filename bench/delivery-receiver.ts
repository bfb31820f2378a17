/**
 * The webhook receiver of the deliveries benchmark, in a process of its own (it stands for a
 * remote party, and so takes no time from the sender's event loop): the tests' receiver
 * (test/support/webhook-receiver.ts) on 127.0.0.1, answering 204 at once. Told to expect a number
 * of deliveries, it counts them, verifies the signature of one in `VERIFY_EVERY` with the secrets
 * it was given, counts a webhook-id that comes twice to one path, and reports when the last one
 * arrived (`performance.timeOrigin + performance.now()`, comparable across processes).
 * Messages in: `{ expect, secrets }`, `'stop'`. Messages out: `{ ready, port }`, `{ armed }`,
 * `{ done, at, verified, badSignatures, duplicates }`.
 */
import { verifyWebhook } from 'api-conventions';
import { type ReceivedDelivery, startReceiver } from '../test/support/webhook-receiver.js';

/** One delivery in this many has its signature verified. */
const VERIFY_EVERY = 50;

const send = (message: Record<string, unknown>) => process.send?.(message);

let expected = 0;
let count = 0;
let secrets: readonly string[] = [];
let verified = 0;
let badSignatures = 0;
let seen = new Set<string>();
let duplicates = 0;

function check({ path, headers, body }: ReceivedDelivery): void {
  // One message goes to several subscriptions, each at a path of its own.
  const key = `${path} ${String(headers['webhook-id'])}`;
  if (seen.has(key)) duplicates++;
  else seen.add(key);
  if (count % VERIFY_EVERY !== 0 || secrets.length === 0) return;
  verified++;
  if (!verifyWebhook(body, headers, { secrets }).ok) badSignatures++;
}

const receiver = await startReceiver((delivery) => {
  count++;
  check(delivery);
  if (count === expected) {
    send({
      done: true,
      at: performance.timeOrigin + performance.now(),
      verified,
      badSignatures,
      duplicates,
    });
  }
  return { status: 204 };
});

// The suite gone (finished, or failed without stopping it): nothing is left to receive for.
process.once('disconnect', () => process.exit(0));

process.on('message', (message: unknown) => {
  if (message === 'stop') {
    void receiver.close().finally(() => process.disconnect());
    return;
  }
  const order = message as { expect: number; secrets: readonly string[] };
  expected = order.expect;
  secrets = order.secrets;
  count = 0;
  verified = 0;
  badSignatures = 0;
  duplicates = 0;
  seen = new Set();
  // The receiver keeps every delivery; a run needs none of the last one's.
  receiver.received.length = 0;
  send({ armed: true });
});

send({ ready: true, port: receiver.port });
