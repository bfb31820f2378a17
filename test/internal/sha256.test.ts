/**
 * SHA-256 and HMAC-SHA256 written out, for runtimes without node:crypto, against node:crypto; and
 * the synchronous users of them (cursors) on a runtime without Node's modules, made here by
 * `process.getBuiltinModule` answering nothing.
 */
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createCursorCodec, FakeClock } from '../../src/index.js';
import { encodeBase64 } from '../../src/internal/base64.js';
import {
  hmacSha256,
  hmacSha256Base64,
  hmacSha256Js,
  sha256,
  sha256Js,
} from '../../src/internal/sha256.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('SHA-256 and HMAC-SHA256 without node:crypto', () => {
  it('give node:crypto digests for any message, across block boundaries (55, 56, 64 bytes)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.constantFrom(55, 56, 63, 64, 65, 119, 120).map((n) => new Uint8Array(n).fill(97)),
        ),
        (data) => {
          expect(hex(sha256Js(data))).toBe(createHash('sha256').update(data).digest('hex'));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('give node:crypto HMACs for any key, shorter or longer than a block, and any message', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 150 }),
        fc.uint8Array({ maxLength: 200 }),
        (key, data) => {
          expect(hex(hmacSha256Js(key, data))).toBe(
            createHmac('sha256', key).update(data).digest('hex'),
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('are what sha256 and hmacSha256 use where process.getBuiltinModule gives no node:crypto', () => {
    vi.spyOn(process, 'getBuiltinModule').mockImplementation((() => undefined) as never);
    expect(hex(sha256('ab', new Uint8Array([99])))).toBe(
      createHash('sha256').update('abc').digest('hex'),
    );
    expect(hex(hmacSha256(new Uint8Array(3), 'a', 'bc'))).toBe(
      createHmac('sha256', new Uint8Array(3)).update('abc').digest('hex'),
    );
    expect(hmacSha256Base64(new Uint8Array(3), 'a', 'bc')).toBe(
      createHmac('sha256', new Uint8Array(3)).update('abc').digest('base64'),
    );
  });

  it('give the HMAC in base64 as encodeBase64 writes the bytes, through node:crypto or without', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 100 }),
        fc.array(fc.oneof(fc.string({ unit: 'binary' }), fc.uint8Array()), { maxLength: 3 }),
        (key, parts) => {
          expect(hmacSha256Base64(key, ...parts)).toBe(encodeBase64(hmacSha256(key, ...parts)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('sign and verify cursors on such a runtime as on Node', () => {
    const options = { signingKey: 'k'.repeat(32), ttlMs: 60_000, clock: new FakeClock(0) };
    const query = { status: 'open', limit: '10' };
    const onNode = createCursorCodec<{ after: string }>(options);
    const token = onNode.encode({ after: 'log_1' }, { query });
    vi.spyOn(process, 'getBuiltinModule').mockImplementation((() => undefined) as never);
    const elsewhere = createCursorCodec<{ after: string }>(options);
    expect(elsewhere.decode(token, { query })).toMatchObject({
      ok: true,
      state: { after: 'log_1' },
    });
    const again = elsewhere.encode({ after: 'log_2' }, { query });
    vi.restoreAllMocks();
    expect(onNode.decode(again, { query })).toMatchObject({ ok: true, state: { after: 'log_2' } });
    expect(onNode.decode(`${again.slice(0, -2)}AA`, { query }).ok).toBe(false);
  });
});
