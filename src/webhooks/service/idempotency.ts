/**
 * Idempotent publish: the options of a publish, its idempotency key checked as data, the
 * fingerprint that tells a reuse of a key apart, and the refusal of one (see
 * docs/webhook-service.md, "Idempotent publish").
 * @module
 */
import { InvalidRequestError } from '../../errors/index.js';
import { encodeHex } from '../../internal/base64.js';
import { describe, isArray } from '../../internal/describe.js';
import { anything, readOptions } from '../../internal/options.js';
import { sha256 } from '../../internal/sha256.js';

/** The longest idempotency key, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

// Visible ASCII: `!` (0x21) to `~` (0x7e), no space, no control character.
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

const KEY_EXPECTED = `a string of 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (! to ~, no space), or left out`;

const PUBLISH_RULES = { idempotencyKey: anything() };

/**
 * The idempotency key of a publish's options, or `undefined` without one.
 * @throws ConfigurationError `invalid_option` for options that are no object, or a misspelt one
 * @throws InvalidRequestError `invalid_idempotency_key` (pointer `/idempotencyKey`) for a key that
 *   is no string of 1 to 255 visible ASCII characters: the key is data, given per call
 * @internal
 */
export function readIdempotencyKey(options: unknown): string | undefined {
  if (options === undefined) return undefined;
  const { idempotencyKey } = readOptions(options, 'publish', PUBLISH_RULES, {
    example: "{ idempotencyKey: 'order-1234-created' }",
  });
  if (idempotencyKey === undefined) return undefined;
  if (
    typeof idempotencyKey === 'string' &&
    idempotencyKey.length <= MAX_IDEMPOTENCY_KEY_LENGTH &&
    VISIBLE_ASCII.test(idempotencyKey)
  ) {
    return idempotencyKey;
  }
  throw new InvalidRequestError(
    'invalid_idempotency_key',
    `idempotencyKey must be ${KEY_EXPECTED}, got ${describe(idempotencyKey)}.`,
    { pointer: '/idempotencyKey' },
  );
}

/**
 * What a keyed message is of: the SHA-256 (hex) of its kind, property and data in one canonical
 * JSON form (object keys sorted, data as JSON reads it back, absent data as `null`), so that the
 * same event told again with its keys in another order matches.
 * @param data - data JSON can hold (the message was made from it already)
 * @internal
 */
export function fingerprintOf(kind: string, propertyId: string | undefined, data: unknown): string {
  const json = JSON.parse(JSON.stringify(data ?? null) ?? 'null') as unknown;
  const canonical = `[${JSON.stringify(kind)},${JSON.stringify(propertyId ?? null)},${canonicalJson(json)}]`;
  return encodeHex(sha256(canonical));
}

/** A JSON value (as JSON.parse gives it) written with the keys of each object sorted. */
function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
}

/**
 * The refusal of a key the account used within the window for another kind, property or data.
 * @internal
 */
export function idempotencyKeyReused(key: string, messageId: string): InvalidRequestError {
  return new InvalidRequestError(
    'idempotency_key_reused',
    `idempotencyKey "${key}" was used for message "${messageId}" of another kind, property or data within the idempotency window; publish this event with a key of its own (or, to publish that message again, with its event unchanged).`,
    { pointer: '/idempotencyKey' },
  );
}
