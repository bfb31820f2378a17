/**
 * A JSON request body read from a web-standard `Request`: the media type checked, the size bounded
 * before and while reading, the text parsed. Every refusal is a response, never a throw.
 * @module
 */
import type { ResponseParts } from '../../http/problem-details.js';
import { readBounded, TOO_LARGE, UNREADABLE } from '../../internal/read-bounded.js';
import { serviceProblem } from './problems.js';

/** The body, parsed, or the problem response that refuses it. @internal */
export type BodyReading =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly response: ResponseParts };

/**
 * Read a JSON body of at most `maxBytes` bytes: 415 unless the media type is JSON
 * (`application/json` or any `+json`, with any parameters), 413 when `Content-Length` says more or
 * more arrives, 400 for text that is not UTF-8 JSON. At most `maxBytes` plus one chunk is held.
 * @internal
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<BodyReading> {
  const type = request.headers.get('content-type');
  if (!isJsonMediaType(type)) return refused(unsupportedMediaType(type));
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared.trim()) > maxBytes) {
    return refused(tooLarge(maxBytes));
  }
  const bytes = await readBounded(request, maxBytes);
  if (bytes === TOO_LARGE) return refused(tooLarge(maxBytes));
  if (bytes === UNREADABLE) {
    return refused(
      invalidJson('The request body could not be read to its end; send it again in one piece.'),
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return refused(invalidJson('The body is not valid UTF-8; send JSON encoded as UTF-8.'));
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const why = error instanceof Error ? error.message : 'it does not parse';
    return refused(invalidJson(`The body is not valid JSON (${why}); send one JSON object.`));
  }
}

/** Whether a `Content-Type` names JSON: `application/json` or `<type>/<subtype>+json`. */
export function isJsonMediaType(header: string | null): boolean {
  if (header === null) return false;
  const semicolon = header.indexOf(';');
  const essence = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  const slash = essence.indexOf('/');
  if (slash <= 0) return false;
  const subtype = essence.slice(slash + 1);
  return essence === 'application/json' || (subtype.endsWith('+json') && subtype.length > 5);
}

const refused = (response: ResponseParts): BodyReading => ({ ok: false, response });

function unsupportedMediaType(type: string | null): ResponseParts {
  return serviceProblem(415, 'unsupported_media_type', 'Unsupported media type', {
    detail: `The body must be JSON sent with Content-Type: application/json; got ${type === null ? 'no Content-Type' : `"${type.slice(0, 100)}"`}.`,
  });
}

function tooLarge(maxBytes: number): ResponseParts {
  return serviceProblem(413, 'body_too_large', 'Request body too large', {
    detail: `The body may hold at most ${maxBytes} bytes; send a smaller one.`,
  });
}

function invalidJson(message: string): ResponseParts {
  return serviceProblem(400, 'invalid_json', 'Invalid JSON', {
    detail: message,
    extensions: { errors: [{ code: 'invalid_json', path: '', message }] },
  });
}
