/**
 * The signed cursor codec: a URL-safe HMAC-SHA256 token carrying a JSON state (signed, not
 * encrypted), with key rotation, expiry and query binding. Token form: docs/pagination.md.
 * @module
 */

import { aClock, type Clock, systemClock } from '../clock.js';
import { utf8 } from '../internal/base64.js';
import {
  anything,
  INVALID,
  listOf,
  type Rule,
  readOptions,
  refused,
  requiredValue,
  wholeNumber,
  worded,
} from '../internal/options.js';
import { isBytes, readSafely } from '../internal/read-once.js';
import { constantTimeEqual, hmacSha256 } from '../internal/sha256.js';
import { decodeBase64Url, encodeBase64Url } from './base64url.js';
import type { PaginationErrorCode } from './pagination-error.js';
import { type QueryInput, queryPairs } from './query-input.js';

/** A secret: a string (its UTF-8 bytes) or bytes; at least 32 bytes. */
export type CursorSecret = string | Uint8Array;

/** Options of {@link createCursorCodec}. */
export interface CursorCodecOptions {
  /** The key that signs new cursors (and verifies them). At least 32 bytes. */
  signingKey: CursorSecret;
  /** Older keys that still verify cursors during a rotation, never sign. @defaultValue `[]` */
  verificationKeys?: readonly CursorSecret[];
  /** Lifetime of a cursor in milliseconds; absent means cursors never expire. */
  ttlMs?: number;
  /** Clock for the expiry. @defaultValue `systemClock` */
  clock?: Clock;
  /** Parameters a client may change without starting over. @defaultValue `['cursor', 'limit']` */
  bindingExclude?: readonly string[];
  /** Longest token accepted by decode and issued by encode, in characters. @defaultValue 4096 */
  maxTokenLength?: number;
}

/** Options of one encode or decode. */
export interface CursorBindingOptions {
  /** The request's query: `encode` binds the cursor to it, `decode` refuses one that differs. */
  query?: QueryInput;
}

/** Codes a cursor can be refused with. */
export type CursorErrorCode = Extract<
  PaginationErrorCode,
  'cursor_malformed' | 'cursor_invalid_signature' | 'cursor_expired' | 'cursor_query_mismatch'
>;

/** The outcome of decoding a cursor. */
export type CursorDecoding<S> =
  | {
      /** The cursor is genuine, current and for this query. */
      readonly ok: true;
      /** The state given to `encode`, as JSON carries it. */
      readonly state: S;
      /** When the cursor expires (ms), if it does. */
      readonly expiresAt?: number;
    }
  | {
      /** The cursor is refused. */
      readonly ok: false;
      /** Why the cursor is refused. */
      readonly code: CursorErrorCode;
      /** What is wrong and what to do instead. */
      readonly message: string;
    };

/** Encodes states as signed cursors and decodes them back. */
export interface CursorCodec<S = unknown> {
  /**
   * Sign a state as a cursor.
   * @param state - any JSON-serialisable value
   * @param options - the query to bind the cursor to
   * @throws ConfigurationError `invalid_cursor_state` when JSON cannot represent the state or the
   * token would be too long; `invalid_option` for options that are not `{ query }`, when the clock
   * returns no finite time (with `ttlMs`), or the query cannot be bound (a cycle, or more than
   * 100,000 values)
   */
  encode(state: S, options?: CursorBindingOptions): string;
  /**
   * Verify a cursor and return its state. Never throws. A bound cursor is refused with
   * `cursor_query_mismatch` for a query that cannot be bound (see `encode`).
   * @param token - the cursor the client sent
   * @param options - the request's query, checked against a bound cursor
   */
  decode(token: string, options?: CursorBindingOptions): CursorDecoding<S>;
}

const MIN_SECRET_BYTES = 32;
const MAC_BYTES = 32;
const BINDING_BYTES = 16;
const SIGNATURE_CONTEXT = 'api-conventions.cursor.v1\0';
const BINDING_CONTEXT = 'api-conventions.cursor-binding.v1\0';

/** A key as bytes; a refusal names its length, never the secret itself. */
const SECRET: Rule<Uint8Array> = {
  expected: `a string or bytes of at least ${MIN_SECRET_BYTES} bytes (crypto.randomBytes(32) makes one)`,
  read(value, name) {
    const bytes =
      typeof value === 'string' ? utf8(value) : isBytes(value) ? Uint8Array.from(value) : undefined;
    if (bytes === undefined) return INVALID;
    if (bytes.length < MIN_SECRET_BYTES) {
      throw refused(
        `${name} length in bytes`,
        `at least ${MIN_SECRET_BYTES} (crypto.randomBytes(32) makes a key)`,
        bytes.length,
      );
    }
    return bytes;
  },
};

const CODEC_RULES = {
  signingKey: SECRET,
  verificationKeys: worded(
    listOf(SECRET),
    `an array of keys (strings or bytes of at least ${MIN_SECRET_BYTES} bytes)`,
  ),
  ttlMs: {
    expected: 'a positive number of milliseconds (leave it out for cursors that never expire)',
    read: (value: unknown) =>
      typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : INVALID,
  },
  clock: aClock,
  bindingExclude: listOf<string>({
    expected: 'a parameter name',
    read: (value) => (typeof value === 'string' ? value : INVALID),
  }),
  maxTokenLength: wholeNumber(),
};

const BINDING_RULES = {
  query: anything('the query as the framework parsed it') as Rule<QueryInput>,
};

/** A codec's settings, read once from its options. */
interface CodecSettings {
  readonly signingKey: Uint8Array;
  /** The signing key first, then the verification keys. */
  readonly keys: readonly Uint8Array[];
  readonly ttlMs: number | undefined;
  readonly clock: Clock;
  readonly exclude: ReadonlySet<string>;
  readonly maxTokenLength: number;
}

/**
 * Make a cursor codec.
 * @param options - keys, expiry, clock and binding settings
 * @throws ConfigurationError `invalid_option` for bad options (a short key, say)
 * @example
 * ```ts
 * const codec = createCursorCodec({ signingKey: process.env.CURSOR_KEY!, ttlMs: 3_600_000 });
 * const next = codec.encode({ after: 'log_123' }, { query: request.query });
 * const decoded = codec.decode(next, { query: request.query }); // { ok: true, state: { after: 'log_123' } }
 * ```
 */
export function createCursorCodec<S = unknown>(options: CursorCodecOptions): CursorCodec<S> {
  const settings = readCodecOptions(options);
  return {
    encode: (state, encodeOptions) => encodeCursor(settings, state, encodeOptions),
    decode: (token, decodeOptions) => decodeCursor<S>(settings, token, decodeOptions),
  };
}

function readCodecOptions(options: CursorCodecOptions): CodecSettings {
  const read = readOptions(options, 'createCursorCodec', CODEC_RULES, {
    defaults: {
      verificationKeys: [],
      clock: systemClock,
      bindingExclude: ['cursor', 'limit'],
      maxTokenLength: 4096,
    },
    required: true,
    example: '{ signingKey }',
  });
  const signingKey = requiredValue(SECRET, read.signingKey, 'signingKey');
  return {
    signingKey,
    keys: [signingKey, ...read.verificationKeys],
    ttlMs: read.ttlMs,
    clock: read.clock,
    exclude: new Set(read.bindingExclude),
    maxTokenLength: read.maxTokenLength,
  };
}

function encodeCursor(
  settings: CodecSettings,
  state: unknown,
  options: CursorBindingOptions | undefined,
): string {
  const { query } = readOptions(options, 'encode()', BINDING_RULES, { example: '{ query }' });
  const bound = query === undefined ? undefined : bindingOf(settings, query);
  // JSON.stringify escapes lone surrogates, so these bytes are the one UTF-8 spelling of json.
  const payload = utf8(serialise(state, expiryOf(settings), bound));
  const signature = hmac(settings.signingKey, SIGNATURE_CONTEXT, payload);
  const token = `${encodeBase64Url(payload)}.${encodeBase64Url(signature)}`;
  // decode refuses longer tokens: issuing one would end the client's listing with a 400.
  if (token.length > settings.maxTokenLength) {
    throw refused(
      'the cursor token length',
      `at most maxTokenLength (${settings.maxTokenLength}), the longest decode accepts: put only the position in the cursor state (for example the last id), or raise maxTokenLength`,
      token.length,
      'invalid_cursor_state',
    );
  }
  return token;
}

function expiryOf({ ttlMs, clock }: CodecSettings): number | undefined {
  if (ttlMs === undefined) return undefined;
  const now = clock.now();
  // NaN would be written as null, and every cursor of this codec refused as malformed.
  if (!Number.isFinite(now))
    throw refused('createCursorCodec clock.now()', 'finite milliseconds', now);
  return now + ttlMs;
}

function bindingOf(settings: CodecSettings, query: QueryInput): string {
  const pairs = queryPairs(query, settings.exclude);
  if (!pairs.ok) {
    throw refused(
      'the encode() query',
      `a query as the framework parsed it, strings, arrays and plain objects, none inside itself (${pairs.problem}), or list ${JSON.stringify(pairs.parameter)} in bindingExclude`,
      query,
    );
  }
  return binding(settings.signingKey, pairs.pairs);
}

function binding(key: Uint8Array, pairs: readonly [string, string][]): string {
  return encodeBase64Url(
    hmac(key, BINDING_CONTEXT, JSON.stringify(pairs)).subarray(0, BINDING_BYTES),
  );
}

function decodeCursor<S>(
  settings: CodecSettings,
  token: string,
  options: CursorBindingOptions | undefined,
): CursorDecoding<S> {
  if (typeof token !== 'string' || token.length === 0 || token.length > settings.maxTokenLength) {
    return malformed(`at most ${settings.maxTokenLength} characters`);
  }
  const dot = token.indexOf('.');
  const payloadBytes = dot < 1 ? undefined : decodeBase64Url(token.slice(0, dot));
  const signature = dot < 1 ? undefined : decodeBase64Url(token.slice(dot + 1));
  if (payloadBytes === undefined || signature === undefined || signature.length !== MAC_BYTES) {
    return malformed('in the form the service issued');
  }
  const key = signerOf(settings.keys, payloadBytes, signature);
  if (key === undefined) return INVALID_SIGNATURE;
  const payload = parsePayload(payloadBytes);
  if (payload === undefined) return malformed('in the form the service issued');
  // `!(now < e)`: a clock that returns NaN expires the cursor instead of keeping it forever.
  if (payload.e !== undefined && !(settings.clock.now() < payload.e)) return EXPIRED;
  if (payload.b !== undefined) {
    const mismatch = bindingMismatch(settings, key, payload.b, options);
    if (mismatch !== undefined) return mismatch;
  }
  return payload.e === undefined
    ? { ok: true, state: payload.s as S }
    : { ok: true, state: payload.s as S, expiresAt: payload.e };
}

// Signatures are checked over the bytes as sent, not their text: invalid UTF-8 decodes to U+FFFD,
// so one cursor would have several spellings.
function signerOf(
  keys: readonly Uint8Array[],
  payload: Uint8Array,
  signature: Uint8Array,
): Uint8Array | undefined {
  return keys.find((k) => constantTimeEqual(hmac(k, SIGNATURE_CONTEXT, payload), signature));
}

function bindingMismatch(
  settings: CodecSettings,
  key: Uint8Array,
  bound: string,
  options: CursorBindingOptions | undefined,
): CursorDecoding<never> | undefined {
  // Options whose query cannot be read bind as no query, which no bound cursor matches.
  const pairs = queryPairs(readSafely(options, 'query'), settings.exclude);
  if (!pairs.ok) {
    return {
      ok: false,
      code: 'cursor_query_mismatch',
      message: `cursor cannot be checked against this query, as ${pairs.problem}; repeat the original filters with this cursor, or omit it to start a new listing.`,
    };
  }
  if (bound === binding(key, pairs.pairs)) return undefined;
  return {
    ok: false,
    code: 'cursor_query_mismatch',
    message:
      'cursor was issued for a query with other parameters; repeat the original filters with this cursor, or omit it to start a new listing.',
  };
}

const INVALID_SIGNATURE: CursorDecoding<never> = Object.freeze({
  ok: false,
  code: 'cursor_invalid_signature',
  message:
    'cursor was not issued by this service or has been altered; send the cursor exactly as received, or omit it to start from the first page.',
});

const EXPIRED: CursorDecoding<never> = Object.freeze({
  ok: false,
  code: 'cursor_expired',
  message:
    'cursor has expired; omit it to start again from the first page and page through promptly.',
});

function malformed(shape: string): CursorDecoding<never> {
  return {
    ok: false,
    code: 'cursor_malformed',
    message: `cursor must be a token ${shape}; send the cursor exactly as received, or omit it to start from the first page.`,
  };
}

function hmac(key: Uint8Array, context: string, data: string | Uint8Array): Uint8Array {
  return hmacSha256(key, context, data);
}

// The state is serialised on its own so one JSON cannot write is refused here, not by decode.
function serialise(
  state: unknown,
  expiresAt: number | undefined,
  bound: string | undefined,
): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(state);
  } catch (cause) {
    throw refused(
      'cursor state',
      'JSON-serialisable (no BigInt, no cycles)',
      state,
      'invalid_cursor_state',
      cause,
    );
  }
  if (json === undefined) {
    throw refused(
      'cursor state',
      'a JSON value (an object, array, string, number, boolean or null)',
      state,
      'invalid_cursor_state',
    );
  }
  const e = expiresAt === undefined ? '' : `,"e":${JSON.stringify(expiresAt)}`;
  const b = bound === undefined ? '' : `,"b":${JSON.stringify(bound)}`;
  return `{"v":1,"s":${json}${e}${b}}`;
}

interface Payload {
  v: 1;
  s: unknown;
  e?: number;
  b?: string;
}

// Strict: bytes that are not well-formed UTF-8 are refused instead of read as U+FFFD, and a byte
// order mark is kept (and then refused by JSON.parse) instead of skipped.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function parsePayload(bytes: Uint8Array): Payload | undefined {
  try {
    const value: unknown = JSON.parse(UTF8.decode(bytes));
    return isPayload(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isPayload(value: unknown): value is Payload {
  if (typeof value !== 'object' || value === null) return false;
  const payload = value as Record<string, unknown>;
  if (payload.v !== 1 || !Object.hasOwn(payload, 's')) return false;
  if (payload.e !== undefined && typeof payload.e !== 'number') return false;
  return payload.b === undefined || typeof payload.b === 'string';
}
