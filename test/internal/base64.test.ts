/** Base64 without Buffer, against Node's Buffer: the same bytes for the same text. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBase64Url, encodeBase64Url } from '../../src/internal/base64.js';

describe('base64url without Buffer', () => {
  it("decodes any text of the base64url alphabet as Buffer.from(text, 'base64url') does", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{0,40}$/), (text) => {
        expect(Buffer.from(decodeBase64Url(text))).toEqual(Buffer.from(text, 'base64url'));
      }),
      { numRuns: 1_000 },
    );
  });

  it('gives back the bytes it encoded, as Buffer encodes them', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const text = encodeBase64Url(bytes);
        expect(text).toBe(Buffer.from(bytes).toString('base64url'));
        expect(decodeBase64Url(text)).toEqual(bytes);
      }),
    );
  });
});
