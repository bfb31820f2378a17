/**
 * The receiver as a node:http request listener, `(req, res) => void`, also an Express or Connect
 * middleware mounted before any body parser. Only node's types are imported: nothing of node runs
 * where the fetch handler alone is used. @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResponseParts } from '../../http/problem-details.js';
import type { WebhookReceiverCore } from './receive.js';

/** A node:http request listener; it answers every request and never throws. */
export type NodeWebhookListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Read node's request, answer it. @internal */
export function nodeHandler(core: WebhookReceiverCore): NodeWebhookListener {
  return (req, res) => {
    serve(core, req, res).catch(() => {
      // Only writing to a response node already closed can throw here: nothing is left to tell.
      res.destroy();
    });
  };
}

async function serve(
  core: WebhookReceiverCore,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== 'POST') {
    req.resume();
    return write(res, core.methodNotAllowed());
  }
  const body = await readBody(req, core.maxBodyBytes);
  if (body === 'too_large') {
    // The rest is read and dropped, so that the sender gets to read the answer.
    req.resume();
    return write(res, core.bodyTooLarge());
  }
  if (body === 'unreadable') return write(res, core.bodyUnreadable());
  write(res, await core.receive(body, req.headers));
}

// Read up to `limit` bytes and keep no more: a large body costs no memory.
function readBody(
  req: IncomingMessage,
  limit: number,
): Promise<Uint8Array | 'too_large' | 'unreadable'> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) return Promise.resolve('too_large');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: Uint8Array | 'too_large' | 'unreadable'): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onFail);
      req.off('aborted', onFail);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) done('too_large');
      else chunks.push(chunk);
    };
    const onEnd = (): void => done(Buffer.concat(chunks, size));
    const onFail = (): void => done('unreadable');
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onFail);
    req.on('aborted', onFail);
  });
}

function write(res: ServerResponse, parts: ResponseParts): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(parts.status, parts.headers).end(parts.body);
}
