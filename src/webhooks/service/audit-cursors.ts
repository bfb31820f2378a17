/**
 * The codec of the audit log's cursors, made at its first use: without a `cursorKey` its key is
 * random, and a module's scope on Cloudflare Workers (where a service is often made) refuses
 * random numbers. @module
 */
import type { Clock } from '../../clock.js';
import { randomBytes } from '../../internal/random.js';
import {
  type CursorCodec,
  type CursorSecret,
  createCursorCodec,
} from '../../pagination/cursor-codec.js';
import type { AuditCursor } from './context.js';

/**
 * The service's cursor codec, under `cursorKey`, or a random key of its own made when the first
 * cursor is signed or read. @internal
 */
export function auditCursorCodec(
  cursorKey: CursorSecret | undefined,
  clock: Clock,
): CursorCodec<AuditCursor> {
  let codec: CursorCodec<AuditCursor> | undefined;
  const made = () =>
    (codec ??= createCursorCodec<AuditCursor>({
      signingKey: cursorKey ?? randomBytes(32),
      clock,
    }));
  return {
    encode: (state, options) => made().encode(state, options),
    decode: (token, options) => made().decode(token, options),
  };
}
