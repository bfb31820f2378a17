/**
 * The demo's allow-list held to its own port: endpoints on 127.0.0.1 and ::1 are the demo's own
 * receivers, so a subscription may name those addresses on the demo's port and no other (not
 * Redis on 6379, not PostgreSQL on 5432). Checked where a subscription is created or changed (400
 * at /endpointUrl) and again where a delivery connects (a name that resolves to 127.0.0.1 on
 * another port is refused by the SSRF guard).
 */
import type { FetchHandler } from '../src/adapters/node.js';
import {
  addressAllowList,
  httpTransport,
  problemDetails,
  problemResponse,
  type WebhookTransport,
} from '../src/index.js';
import { MAX_BODY } from './service-http.js';

/** The addresses of the demo's own receivers, allowed on its own port only. */
export const OWN_ADDRESSES: readonly string[] = ['127.0.0.1', '::1'];

/** The port a URL connects to: its own, or its scheme's. */
function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/**
 * A transport that reaches `allow` on `port` only: a request to any other port goes through a
 * guard that allows no address that is not public.
 */
export function ownPortTransport(allow: readonly string[], port: () => number): WebhookTransport {
  const local = httpTransport({ allow });
  const strict = httpTransport();
  return (request) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return strict(request);
    }
    return portOf(url) === port() ? local(request) : strict(request);
  };
}

/**
 * The webhook API with create and PATCH bodies checked first: an `endpointUrl` on an address of
 * `allow` but another port than `port` is answered 400 as the service answers a forbidden address.
 * Anything else (no JSON, no endpointUrl, a public host) goes on to the service as sent.
 */
export function ownPortApi(
  api: FetchHandler,
  allow: readonly string[],
  port: () => number,
): FetchHandler {
  const allowed = addressAllowList(allow);
  return async (request) => {
    const path = new URL(request.url).pathname;
    const create = request.method === 'POST' && path === '/v1/subscriptions';
    const change = request.method === 'PATCH' && /^\/v1\/subscriptions\/[^/]+$/.test(path);
    if (!create && !change) return api(request);
    const endpointUrl = await endpointUrlOf(request.clone());
    if (endpointUrl === undefined) return api(request);
    let url: URL;
    try {
      url = new URL(endpointUrl);
    } catch {
      return api(request);
    }
    if (!allowed.allows(url.hostname) || portOf(url) === port()) return api(request);
    const message = `The host ${url.hostname} is not a public address; the demo sends to it only on its own port, ${port()} (its receivers, such as http://127.0.0.1:${port()}/demo/receiver), not port ${portOf(url)}. WEBHOOK_ALLOW lists addresses to allow on any port.`;
    const code = create ? 'invalid_subscription_request' : 'invalid_subscription_change';
    const parts = problemResponse(
      problemDetails({
        code,
        title: create ? 'Invalid subscription request' : 'Invalid subscription change',
        status: 400,
        detail: `1 error: /endpointUrl: ${message}`,
        extensions: {
          errors: [{ code: 'url_forbidden_address', path: '/endpointUrl', message }],
        },
      }),
    );
    return new Response(parts.body, { status: parts.status, headers: parts.headers });
  };
}

/** The body's `endpointUrl` when it is a JSON object of at most MAX_BODY bytes that has one. */
async function endpointUrlOf(request: Request): Promise<string | undefined> {
  const reader = request.body?.getReader();
  if (reader === undefined) return undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      // The service answers a larger body 413 itself.
      if (size > MAX_BODY) {
        await reader.cancel();
        return undefined;
      }
      chunks.push(value);
    }
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const value =
      typeof body === 'object' && body !== null && Object.hasOwn(body, 'endpointUrl')
        ? (body as { endpointUrl: unknown }).endpointUrl
        : undefined;
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
