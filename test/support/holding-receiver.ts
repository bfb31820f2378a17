/**
 * A webhook receiver (webhook-receiver.ts) whose answers can be held: while it holds, every
 * request is recorded and left unanswered, so that the attempts stay in flight, in the receiver's
 * hands, until the test releases them or kills the process that sent them. Endpoints may be told
 * to refuse each new delivery once (503 with Retry-After), so that retries wait in the sender's
 * queue.
 */
import type { ServerResponse } from 'node:http';
import { type ReceivedDelivery, startReceiver, type WebhookReceiver } from './webhook-receiver.js';

/** A receiver that answers 204, or holds its answers. */
export interface HoldingReceiver extends WebhookReceiver {
  /** From now on, answer nothing until {@link HoldingReceiver.release}. */
  hold(): void;
  /** Answer 204 to every request held (whose sender is still there), and to the next at once. */
  release(): void;
  /** Requests held now whose connection is still open: attempts in flight. */
  readonly held: number;
  /** Requests held now from one sender (their `x-sender` header, see webhook-instance.ts). */
  heldFrom(sender: string): number;
  /** Whether the receiver answered this request 2xx while its sender was there. */
  accepted(delivery: ReceivedDelivery): boolean;
  /**
   * From now on, these endpoints (paths) refuse each delivery (`webhook-id`) they have not refused
   * yet, the first time they answer it: 503 with Retry-After; none with `[]`.
   */
  refuse(paths: readonly string[]): void;
  /** Deliveries refused whose retry has not come yet, by when the retry is due (ms). */
  readonly retriesAwaited: ReadonlyMap<string, number>;
}

/** How the receiver answers. */
export interface HoldingReceiverOptions {
  /** The Retry-After of a refusal, in seconds. @defaultValue 1 */
  retryAfterSeconds?: number;
}

/** Start a receiver that answers 204 until told to hold. */
export async function startHoldingReceiver(
  options: HoldingReceiverOptions = {},
): Promise<HoldingReceiver> {
  const { retryAfterSeconds = 1 } = options;
  const held = new Map<ServerResponse, ReceivedDelivery>();
  const accepted = new WeakSet<ReceivedDelivery>();
  let refusing: readonly string[] = [];
  /** Deliveries (`webhook-id path`) refused: their next request is accepted. */
  const refused = new Set<string>();
  /** Refused deliveries whose next request has not come yet, by when it is due. */
  const awaited = new Map<string, number>();
  let holding = false;
  const accept = (res: ServerResponse, delivery: ReceivedDelivery) => {
    accepted.add(delivery);
    res.writeHead(204).end();
  };
  const receiver = await startReceiver((delivery, res) => {
    const key = `${delivery.headers['webhook-id']} ${delivery.path}`;
    awaited.delete(key);
    if (holding) {
      held.set(res, delivery);
      // A sender that dies takes its attempt with it: no longer in flight.
      res.once('close', () => held.delete(res));
      return undefined;
    }
    if (refusing.includes(delivery.path) && !refused.has(key)) {
      refused.add(key);
      awaited.set(key, Date.now() + retryAfterSeconds * 1000);
      return { status: 503, headers: { 'retry-after': String(retryAfterSeconds) } };
    }
    accept(res, delivery);
    return undefined;
  });
  return {
    ...receiver,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const [res, delivery] of held) accept(res, delivery);
      held.clear();
    },
    get held() {
      return held.size;
    },
    heldFrom: (sender) =>
      [...held.values()].filter((delivery) => delivery.headers['x-sender'] === sender).length,
    accepted: (delivery) => accepted.has(delivery),
    refuse: (paths) => {
      refusing = [...paths];
    },
    retriesAwaited: awaited,
  };
}
