/**
 * `createWebhookReceiver`: what an integrator mounts to receive Standard Webhooks deliveries,
 * verified, deduplicated by message id and handled once, as a fetch handler and a node listener.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { checkValue, INVALID, type Rule } from '../../internal/options.js';
import { isBytes } from '../../internal/read-once.js';
import type { HeaderSource } from '../signing/verify.js';
import { fetchHandler } from './fetch-handler.js';
import { type NodeWebhookListener, nodeHandler } from './node-handler.js';
import { WebhookReceiverCore, type WebhookReceiverOptions } from './receive.js';

/** A receiver: one step, served as a fetch handler or a node listener. */
export interface WebhookReceiver {
  /**
   * The web-standard fetch handler, for POST. Mount it as it is in Hono
   * (`app.post('/webhooks', (c) => receiver.fetch(c.req.raw))`), Bun or Deno.
   */
  readonly fetch: (request: Request) => Promise<Response>;
  /**
   * The node:http request listener (also an Express middleware, before any body parser):
   * `createServer(receiver.node)`.
   */
  readonly node: NodeWebhookListener;
  /**
   * The answer to a delivery already read: its raw body and headers in, status, headers and
   * body out; for a framework the two handlers do not fit.
   */
  receive(body: Uint8Array, headers: HeaderSource): Promise<ResponseParts>;
}

const BYTES: Rule<Uint8Array> = {
  expected: 'the raw body as received, a Uint8Array such as a Buffer (not the parsed JSON)',
  read: (value) => (isBytes(value) ? value : INVALID),
};

/**
 * Make a receiver of webhook deliveries: each is verified (`v1` with `secrets`, `v1a` with
 * `publicKeys`), its body parsed as JSON, and `handle` runs once per message id, the answer 200
 * coming only after it resolved. A bad or missing signature answers 401, a timestamp outside the
 * tolerance 401 with its own code, a body that is not JSON 400, an id already handled 200 without
 * running `handle`, one being handled now 409, a `handle` that throws 500 (the sender retries) —
 * every refusal as problem details (`application/problem+json`).
 * @throws ConfigurationError `invalid_webhook_secret` for a malformed secret or no key at all,
 *   `invalid_webhook_public_key` for a malformed public key (a `whsk_` signing key included),
 *   `invalid_option` for a missing `handle` and any other bad option
 * @example
 * ```ts
 * const receiver = createWebhookReceiver({
 *   secrets: process.env.WEBHOOK_SECRET!,
 *   handle: async ({ id, payload }) => {
 *     await orders.apply(id, payload);
 *   },
 * });
 * createServer(receiver.node).listen(3000);
 * ```
 */
export function createWebhookReceiver(options: WebhookReceiverOptions): WebhookReceiver {
  const core = new WebhookReceiverCore(options);
  return Object.freeze({
    fetch: fetchHandler(core),
    node: nodeHandler(core),
    receive: (body: Uint8Array, headers: HeaderSource) =>
      core.receive(checkValue(BYTES, body, 'receive body'), headers),
  });
}
