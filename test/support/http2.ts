/** node:http2 client helpers for the adapters' tests: requests a test resets on purpose. */
import { type ClientHttp2Session, constants as http2Constants } from 'node:http2';
import { expect, vi } from 'vitest';
import type { HeldStore } from './async-store.js';

/** A GET of `path` that the test may reset; the reset's stream error is expected. */
export function startResettable(client: ClientHttp2Session, path: string) {
  const stream = client.request({ ':method': 'GET', ':path': path });
  stream.on('error', () => undefined);
  stream.end();
  return stream;
}

/** A promise that settles once `seen` is called: hand `seen` to the server's `close` listener. */
export function closeSignal(): { seen: () => void; closed: Promise<void> } {
  let seen: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    seen = resolve;
  });
  return { seen, closed };
}

/**
 * Reset a GET of `path` while `store` holds its decision, wait until the server saw the stream
 * close, then let the decision through: resolves once the store got the lease back.
 */
export async function resetWhileHeld(
  client: ClientHttp2Session,
  path: string,
  store: HeldStore,
  serverSawClose: Promise<void>,
): Promise<void> {
  const stream = startResettable(client, path);
  await store.applied();
  stream.close(http2Constants.NGHTTP2_CANCEL);
  await serverSawClose;
  store.proceed();
  await vi.waitFor(() => expect(store.released).toBe(1));
}
