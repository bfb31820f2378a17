/**
 * A web-standard request body read up to a bound, for every handler that takes a `Request`.
 * @module
 */

/** The body was longer than the bound (the rest was left unread). @internal */
export const TOO_LARGE = Symbol('too large');
/** The body could not be read: read before, or the stream failed. @internal */
export const UNREADABLE = Symbol('unreadable');

/**
 * The body of a request (or a response), at most `maxBytes` of it: counted chunk by chunk, so a
 * body sent without Content-Length (chunked) is bounded all the same. Never rejects. @internal
 */
export async function readBounded(
  request: { readonly body: ReadableStream<Uint8Array> | null },
  maxBytes: number,
): Promise<Uint8Array | typeof TOO_LARGE | typeof UNREADABLE> {
  const stream = request.body;
  if (stream === null) return new Uint8Array(0);
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    reader = stream.getReader();
  } catch {
    return UNREADABLE; // read before, by whoever handed the request on
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        reader.cancel().catch(() => undefined);
        return TOO_LARGE;
      }
      chunks.push(value);
    }
  } catch {
    return UNREADABLE;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}
