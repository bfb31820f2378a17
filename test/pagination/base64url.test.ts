import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBase64Url, encodeBase64Url } from '../../src/pagination/base64url.js';

describe('strict base64url', () => {
  it('round-trips any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        expect(decodeBase64Url(encodeBase64Url(bytes))).toEqual(Uint8Array.from(bytes));
        // Node's own encoder as the oracle.
        expect(encodeBase64Url(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
      }),
    );
  });

  it('accepts only the one canonical spelling: whatever decodes re-encodes to itself', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[A-Za-z0-9_=+/-]{0,12}$/)), (text) => {
        const bytes = decodeBase64Url(text);
        if (bytes !== undefined) expect(encodeBase64Url(bytes)).toBe(text);
      }),
      { numRuns: 5_000 },
    );
  });

  it('refuses padding, the standard alphabet, stray characters and non-zero trailing bits', () => {
    expect(decodeBase64Url('YQ')).toEqual(new TextEncoder().encode('a'));
    for (const text of ['YQ==', 'YQ=', 'Y Q', 'Y+/A', 'YR', 'Y', 'YQ\n', 'Y.Q']) {
      expect(decodeBase64Url(text)).toBeUndefined();
    }
  });
});
