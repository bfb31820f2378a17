/**
 * A webhook receiver (webhook-receiver.ts) whose answers can be held: while it holds, every
 * request is recorded and left unanswered, so that the attempts stay in flight, in the receiver's
 * hands, until the test releases them or kills the process that sent them.
 */
import type { ServerResponse } from 'node:http';
import { startReceiver, type WebhookReceiver } from './webhook-receiver.js';

/** A receiver that answers 204, or holds its answers. */
export interface HoldingReceiver extends WebhookReceiver {
  /** From now on, answer nothing until {@link HoldingReceiver.release}. */
  hold(): void;
  /** Answer 204 to every request held (whose sender is still there), and to the next at once. */
  release(): void;
  /** Requests held now whose connection is still open: attempts in flight. */
  readonly held: number;
}

/** Start a receiver that answers 204 until told to hold. */
export async function startHoldingReceiver(): Promise<HoldingReceiver> {
  const held = new Set<ServerResponse>();
  let holding = false;
  const receiver = await startReceiver((_delivery, res) => {
    if (!holding) return { status: 204 };
    held.add(res);
    // A sender that dies takes its attempt with it: no longer in flight.
    res.once('close', () => held.delete(res));
    return undefined;
  });
  return {
    ...receiver,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const res of held) res.writeHead(204).end();
      held.clear();
    },
    get held() {
      return held.size;
    },
  };
}
