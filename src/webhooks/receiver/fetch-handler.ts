/**
 * The receiver as a web-standard fetch handler, `(request: Request) => Promise<Response>`: for
 * Hono, Bun, Deno, workers, and node:http through `nodeFetchHandler`. Imports nothing of node.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { readBounded, TOO_LARGE, UNREADABLE } from '../../internal/read-bounded.js';
import type { WebhookReceiverCore } from './receive.js';

/** Read the request's body, answer it. @internal */
export function fetchHandler(core: WebhookReceiverCore): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== 'POST') return toResponse(core.methodNotAllowed());
    const body = await readBody(request, core.maxBodyBytes);
    if (body === 'too_large') return toResponse(core.bodyTooLarge());
    if (body === 'unreadable') return toResponse(core.bodyUnreadable());
    return toResponse(await core.receive(body, request.headers));
  };
}

// Read up to `limit` bytes and no further: a declared length over it is refused unread.
async function readBody(
  request: Request,
  limit: number,
): Promise<Uint8Array | 'too_large' | 'unreadable'> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > limit) return 'too_large';
  const body = await readBounded(request, limit);
  if (body === TOO_LARGE) return 'too_large';
  return body === UNREADABLE ? 'unreadable' : body;
}

function toResponse(parts: ResponseParts): Response {
  return new Response(parts.body === '' ? null : parts.body, {
    status: parts.status,
    headers: parts.headers,
  });
}
