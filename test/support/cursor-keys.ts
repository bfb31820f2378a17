/**
 * Cursor signing keys for tests: fixed 32-byte secrets, so that failures reproduce.
 */

/** A key that signs; 32 bytes. */
export const keyA = 'a'.repeat(16) + '0123456789abcdef';
/** Another key; 32 bytes. */
export const keyB = new Uint8Array(32).map((_, i) => i + 1);
/** A third key, never given to a codec that should accept its cursors; 32 bytes. */
export const keyForeign = 'f'.repeat(32);
